package bench

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestRunWritesSmoke runs the write workload briefly against an in-process
// cluster and checks that it measured real, successful creates on both
// paths and cleaned up after itself.
func TestRunWritesSmoke(t *testing.T) {
	c, cs := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	results, err := RunWrites(ctx, WritesConfig{
		API: c.AdminConfig, Etcd: c.EtcdClient, EtcdInProcess: c.EtcdInProcessClient, Clients: []int{2}, Duration: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	var targets []string
	for _, r := range results {
		targets = append(targets, r.Target)
		if r.Ops == 0 || r.Errors != 0 || r.Rate <= 0 || r.Latencies.P99 <= 0 || r.ProcessCPUPerOp <= 0 {
			t.Errorf("%s: implausible result %+v", r.Target, r)
		}
	}
	if want := []string{"etcd Txn", "etcd Txn (in-process)", "apiserver (protobuf)", "apiserver (json)"}; !slices.Equal(targets, want) {
		t.Fatalf("targets %q, want %q", targets, want)
	}
	// The etcd keys are gone and the namespace is being deleted.
	resp, err := c.EtcdClient.Get(ctx, "/kubeproof-bench/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	if resp.Count != 0 {
		t.Errorf("%d benchmark keys left in etcd", resp.Count)
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if ns.Status.Phase == corev1.NamespaceActive && len(ns.Name) > 12 && ns.Name[:12] == "bench-writes" {
			t.Errorf("namespace %s left active", ns.Name)
		}
	}
}

// BenchmarkAPICreate measures 1 KiB ConfigMap creates through the API server
// (protobuf client) at several concurrency levels; b.N creates are split
// among the clients. Compare with BenchmarkEtcdTxnCreate.
func BenchmarkAPICreate(b *testing.B) {
	c, cs := clustertest.Start(b, clustertest.Options{})
	for _, clients := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			api, err := kubernetes.NewForConfig(APIClientConfig(c.AdminConfig, runtime.ContentTypeProtobuf))
			if err != nil {
				b.Fatal(err)
			}
			// The body runs once per b.N probe: a fresh namespace each time.
			ns := fmt.Sprintf("bench-%d-%d", clients, runSeq.Add(1))
			if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			parallelN(b, clients, func(i int64) error {
				_, err := api.CoreV1().ConfigMaps(ns).Create(context.Background(), &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("cm-%d", i)}, Data: map[string]string{"payload": payload1KiB},
				}, metav1.CreateOptions{})
				return err
			})
		})
	}
}

// BenchmarkEtcdTxnCreate is the raw etcd ceiling for BenchmarkAPICreate: the
// same protobuf-encoded object written with Txn If(ModRevision==0) Then Put.
func BenchmarkEtcdTxnCreate(b *testing.B) {
	c, _ := clustertest.Start(b, clustertest.Options{})
	value, err := encodeProtobuf(&corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "bench", Namespace: "bench"},
		Data:       map[string]string{"payload": payload1KiB},
	})
	if err != nil {
		b.Fatal(err)
	}
	for _, clients := range []int{1, 16, 64, 256} {
		b.Run(fmt.Sprintf("clients=%d", clients), func(b *testing.B) {
			parallelN(b, clients, func(i int64) error {
				key := fmt.Sprintf("/bench/%d/%d", clients, i)
				_, err := c.EtcdClient.Txn(context.Background()).
					If(clientv3.Compare(clientv3.ModRevision(key), "=", 0)).
					Then(clientv3.OpPut(key, value)).Commit()
				return err
			})
		})
	}
}

var runSeq atomic.Int64

// parallelN runs op b.N times from clients goroutines and reports ops/s.
func parallelN(b *testing.B, clients int, op func(i int64) error) {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	b.ResetTimer()
	start := time.Now()
	for c := 0; c < clients; c++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := next.Add(1)
				if i > int64(b.N) {
					return
				}
				if err := op(i); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	b.StopTimer()
	if err, _ := firstErr.Load().(error); err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "creates/s")
}
