package bench

import (
	"context"
	"runtime"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestRunUpdatesSmoke runs the CAS update workload briefly against an
// in-process cluster: real, conflict-free updates on every path, each
// client's object's resourceVersion advanced by its updates, and nothing
// left behind.
func TestRunUpdatesSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	c, cs := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	before := runtime.NumGoroutine()
	results, err := RunUpdates(ctx, WritesConfig{
		API: c.AdminConfig, Etcd: c.EtcdClient, Clients: []int{1, 4}, Duration: 300 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 6 {
		t.Fatalf("got %d results, want (etcd + protobuf + json) × 2 levels", len(results))
	}
	for _, r := range results {
		t.Logf("%s clients=%d: %.0f/s p99 %v errors %d", r.Target, r.Clients, r.Rate, r.Latencies.P99, r.Errors)
		if r.Op != OpUpdate || r.Ops == 0 || r.Errors != 0 || r.Rate <= 0 || r.Latencies.P99 <= 0 {
			t.Errorf("%s: implausible result %+v", r.Target, r)
		}
	}
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
		if ns.Status.Phase == corev1.NamespaceActive && len(ns.Name) > 13 && ns.Name[:13] == "bench-updates" {
			t.Errorf("namespace %s left active", ns.Name)
		}
	}
	checkNoGoroutineLeak(t, before)
}

// TestUpdatesCountConflicts checks that a stale compare is an error, not a
// success: another writer bumps every client's key/object while the
// workload runs, so some CAS updates must fail.
func TestUpdatesCountConflicts(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	c, _ := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const prefix = "/kubeproof-bench/conflicts"
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			_, _ = c.EtcdClient.Put(ctx, prefix+"/0", "other writer")
			time.Sleep(time.Millisecond)
		}
	}()
	r, err := EtcdTxnUpdates(ctx, c.EtcdClient, prefix, 1, 300*time.Millisecond)
	cancel()
	<-done
	if err != nil {
		t.Fatal(err)
	}
	if r.Errors == 0 {
		t.Errorf("no conflicts counted with a second writer on the key: %+v", r)
	}
}

// TestWritesClientsChart draws only the results of the asked operation,
// one line per target, at the median of repeated runs.
func TestWritesClientsChart(t *testing.T) {
	results := []WriteResult{
		{Target: "etcd Txn", Clients: 1, Rate: 1000},
		{Target: "etcd Txn CAS", Op: OpUpdate, Clients: 1, Rate: 900},
		{Target: "etcd Txn CAS", Op: OpUpdate, Clients: 16, Rate: 3000},
		{Target: "etcd Txn CAS", Op: OpUpdate, Clients: 16, Rate: 5000},
		{Target: "etcd Txn CAS", Op: OpUpdate, Clients: 16, Rate: 4000},
		{Target: "apiserver update (protobuf)", Op: OpUpdate, Clients: 16, Rate: 1000},
	}
	c := WritesClientsChart("updates-clients", "t", "updates/s", OpUpdate, results).Chart.(LineChart)
	if len(c.Series) != 2 || c.Series[0].Name != "etcd Txn CAS" || len(c.Series[0].Points) != 2 || c.Series[0].Points[1].Y != 4000 {
		t.Errorf("series %+v", c.Series)
	}
	if len(c.XTicks) != 2 || c.XTicks[1].Label != "16" {
		t.Errorf("ticks %+v", c.XTicks)
	}
}
