package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
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
	// A second per target: under a loaded make test a few hundred
	// milliseconds could end before a single create did.
	// Each API measurement's objects are gone before the next starts.
	apiObjectsLeft := func() int64 {
		resp, err := c.EtcdClient.Get(ctx, "/registry/configmaps/bench-writes-", clientv3.WithPrefix(), clientv3.WithCountOnly())
		if err != nil {
			t.Fatal(err)
		}
		return resp.Count
	}
	profiles := filepath.Join(t.TempDir(), "cpu")
	results, err := RunWrites(ctx, WritesConfig{
		API: c.AdminConfig, Etcd: c.EtcdClient, EtcdInProcess: c.EtcdInProcessClient, Clients: []int{2}, Duration: time.Second,
		CPUProfile: profiles,
		Progress: func(r WriteResult) {
			if n := apiObjectsLeft(); n != 0 {
				t.Errorf("after %s: %d objects left in etcd", r.Target, n)
			}
		},
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
		wantClient := "client-go"
		switch {
		case strings.HasPrefix(r.Target, "etcd Txn"):
			wantClient = "clientv3"
		case r.Target == "apiserver (protobuf, http2)":
			wantClient = "http2"
		}
		if r.Client != wantClient {
			t.Errorf("%s: client %q, want %q", r.Target, r.Client, wantClient)
		}
	}
	if want := []string{"etcd Txn", "etcd Txn (in-process)", "apiserver (protobuf)", "apiserver (protobuf, http2)", "apiserver (json)"}; !slices.Equal(targets, want) {
		t.Fatalf("targets %q, want %q", targets, want)
	}
	// One CPU profile per measurement (gzip-compressed pprof), named by
	// target and level, and no scratch file left.
	written, err := filepath.Glob(profiles + ".*")
	if err != nil {
		t.Fatal(err)
	}
	var wantProfiles []string
	for _, name := range []string{"etcd-txn", "etcd-txn-in-process", "apiserver-protobuf", "apiserver-protobuf-http2", "apiserver-json"} {
		wantProfiles = append(wantProfiles, profiles+"."+name+".c2")
	}
	slices.Sort(written)
	slices.Sort(wantProfiles)
	if !slices.Equal(written, wantProfiles) {
		t.Errorf("CPU profiles %q, want %q", written, wantProfiles)
	}
	for _, p := range written {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		if len(b) < 2 || b[0] != 0x1f || b[1] != 0x8b {
			t.Errorf("%s: not a gzip-compressed profile (%d bytes)", p, len(b))
		}
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

// TestWriteShares pairs each API create result with the raw Txn result of
// its level, in both rate and process CPU per create.
func TestWriteShares(t *testing.T) {
	results := []WriteResult{
		{Target: "etcd Txn", Client: "clientv3", Clients: 1, Rate: 1000, ProcessCPUPerOp: 100 * time.Microsecond},
		{Target: "etcd Txn (in-process)", Client: "clientv3", Clients: 1, Rate: 4000},
		{Target: "apiserver (protobuf)", Client: "client-go", Clients: 1, Rate: 500, ProcessCPUPerOp: 400 * time.Microsecond},
		{Target: "etcd Txn", Client: "clientv3", Clients: 64, Rate: 10000, ProcessCPUPerOp: 120 * time.Microsecond},
		{Target: "apiserver (protobuf)", Clients: 64, Rate: 4500, ProcessCPUPerOp: 300 * time.Microsecond},
		{Target: "apiserver (protobuf, http2)", Client: "http2", Clients: 64, Rate: 6500},
		{Target: "etcd Txn CAS", Op: OpUpdate, Clients: 64, Rate: 9000},
		{Target: "apiserver (protobuf)", Op: OpUpdate, Clients: 64, Rate: 3000},
	}
	want := []WriteShare{
		{Clients: 1, Target: "apiserver (protobuf)", Client: "client-go", Rate: 500, RawRate: 1000, RateShare: 0.5,
			CPUPerOp: 400 * time.Microsecond, RawCPUPerOp: 100 * time.Microsecond, CPUShare: 0.25},
		{Clients: 64, Target: "apiserver (protobuf)", Client: "client-go", Rate: 4500, RawRate: 10000, RateShare: 0.45,
			CPUPerOp: 300 * time.Microsecond, RawCPUPerOp: 120 * time.Microsecond, CPUShare: 0.4},
		{Clients: 64, Target: "apiserver (protobuf, http2)", Client: "http2", Rate: 6500, RawRate: 10000, RateShare: 0.65,
			RawCPUPerOp: 120 * time.Microsecond},
	}
	got := WriteShares(results)
	if !slices.Equal(got, want) {
		t.Fatalf("WriteShares:\n got %+v\nwant %+v", got, want)
	}
	var b strings.Builder
	WriteShareTable(&b, results)
	for _, line := range []string{
		"| 64 | apiserver (protobuf) | client-go | 4500 | 10000 | 45% | 300 µs / 120 µs | 0.40 |",
		"| 64 | apiserver (protobuf, http2) | http2 | 6500 | 10000 | 65% | — / 120 µs | — |",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, b.String())
		}
	}
}

// TestWriteSharesClientCPUOnly: against --kubeconfig's servers the process
// CPU is the benchmark clients' alone, so no share by CPU is given (before,
// a walk against a separate 'kubeproof apiserver' printed client-go's
// client CPU over clientv3's, 0.54, as the share by CPU), and the table
// says why.
func TestWriteSharesClientCPUOnly(t *testing.T) {
	results := []WriteResult{
		{Target: "etcd Txn", Client: "clientv3", Clients: 16, Rate: 3689, ProcessCPUPerOp: 76 * time.Microsecond, ClientCPUOnly: true},
		{Target: "apiserver (protobuf)", Client: "client-go", Clients: 16, Rate: 1294, ProcessCPUPerOp: 141 * time.Microsecond, ClientCPUOnly: true},
	}
	shares := WriteShares(results)
	if len(shares) != 1 || shares[0].CPUShare != 0 || shares[0].RateShare == 0 {
		t.Fatalf("WriteShares: %+v, want one share by rate and none by CPU", shares)
	}
	var b strings.Builder
	WriteShareTable(&b, results)
	for _, line := range []string{
		"| 16 | apiserver (protobuf) | client-go | 1294 | 3689 | 35% | 141 µs / 76 µs | — |",
		"process CPU is the benchmark clients' alone",
	} {
		if !strings.Contains(b.String(), line) {
			t.Errorf("table lacks %q:\n%s", line, b.String())
		}
	}
}
