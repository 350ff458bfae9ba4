package bench

import (
	"context"
	"fmt"
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

// BenchmarkCreateCPUShare is issue 2's write-path share measured as CPU,
// which barely moves with the machine's load, where creates/s does: the
// process CPU (user plus system) per 1 KiB ConfigMap create at 64 clients,
// with client, API server and etcd all in this process. The clusters are
// `kubeproof up`'s (Node,RBAC, the default admission plugins, the watch
// cache; fsync off), one whose API server reaches etcd in-process (the
// default) and one over gRPC on loopback (as with --etcd-servers).
//
//	api             client-go (protobuf, HTTPS) → API server → in-process etcd
//	api-grpc        the same, API server → etcd over gRPC
//	etcd-grpc       raw Txn If(ModRevision==0) Then Put over gRPC
//	etcd-inprocess  the same Txn through etcd's in-process client
//
// share reports etcd CPU / API CPU for the pairs that belong together
// (grpc/api is the "raw etcd Txn on the same etcd" against what
// users run; inprocess/api compares like with like). When both sides are
// CPU-bound the ratio predicts the creates/s share (the target is 0.6).
//
//	go test ./bench -run '^$' -bench CreateCPUShare -benchtime 20000x
func BenchmarkCreateCPUShare(b *testing.B) {
	const clients = 64
	// Both clusters live as long as the whole benchmark (a sub-benchmark's
	// cleanups run after each of its rounds).
	inProc, _ := clustertest.Start(b, clustertest.Options{})
	overGRPC, _ := clustertest.Start(b, clustertest.Options{EtcdOverGRPC: true})
	csInProc, err := kubernetes.NewForConfig(APIClientConfig(inProc.AdminConfig, runtime.ContentTypeProtobuf))
	if err != nil {
		b.Fatal(err)
	}
	csGRPC, err := kubernetes.NewForConfig(APIClientConfig(overGRPC.AdminConfig, runtime.ContentTypeProtobuf))
	if err != nil {
		b.Fatal(err)
	}
	value, err := configMapValue()
	if err != nil {
		b.Fatal(err)
	}
	var seq atomic.Int64
	apiCreate := func(cs kubernetes.Interface) func() error {
		return func() error {
			_, err := cs.CoreV1().ConfigMaps("default").Create(context.Background(), &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("share-%d", seq.Add(1))},
				Data:       map[string]string{"payload": payload1KiB},
			}, metav1.CreateOptions{})
			return err
		}
	}
	etcdCreate := func(client *clientv3.Client) func() error {
		return func() error {
			return txnCreate(context.Background(), client, fmt.Sprintf("/bench-share/%d", seq.Add(1)), value)
		}
	}
	targets := []struct {
		name string
		op   func() error
	}{
		{"etcd-grpc", etcdCreate(inProc.EtcdClient)},
		{"etcd-inprocess", etcdCreate(inProc.EtcdInProcessClient)},
		{"api", apiCreate(csInProc)},
		{"api-grpc", apiCreate(csGRPC)},
	}
	cpu := map[string]time.Duration{}
	for _, tg := range targets {
		b.Run(tg.name, func(b *testing.B) { cpu[tg.name] = cpuPerCreate(b, clients, tg.op) })
	}
	b.Run("share", func(b *testing.B) {
		for _, pair := range [][2]string{{"etcd-grpc", "api"}, {"etcd-inprocess", "api"}, {"etcd-grpc", "api-grpc"}} {
			if cpu[pair[0]] > 0 && cpu[pair[1]] > 0 {
				b.ReportMetric(float64(cpu[pair[0]])/float64(cpu[pair[1]]), pair[0]+"/"+pair[1])
			}
		}
	})
}

// cpuPerCreate runs op b.N times from clients goroutines, after a warm-up,
// and reports creates/s, the process CPU per create (cpu-µs/create) and
// allocations; it returns the CPU per create.
func cpuPerCreate(b *testing.B, clients int, op func() error) time.Duration {
	// Warm connections and caches first.
	if err := runN(2*clients, clients, op); err != nil {
		b.Fatal(err)
	}
	// Allocations per create (the whole process's), like the CPU, do not
	// depend on the machine's load.
	b.ReportAllocs()
	b.ResetTimer()
	startCPU := processCPU()
	if err := runN(b.N, clients, op); err != nil {
		b.Fatal(err)
	}
	perOp := (processCPU() - startCPU) / time.Duration(b.N)
	b.StopTimer()
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "creates/s")
	b.ReportMetric(float64(perOp.Nanoseconds())/1000, "cpu-µs/create")
	return perOp
}

// runN runs op n times from clients goroutines and returns the first error.
func runN(n, clients int, op func() error) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	var firstErr atomic.Value
	for range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for next.Add(1) <= int64(n) {
				if err := op(); err != nil {
					firstErr.CompareAndSwap(nil, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	err, _ := firstErr.Load().(error)
	return err
}
