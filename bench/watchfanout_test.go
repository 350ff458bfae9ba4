package bench

import (
	"bytes"
	"context"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestRunWatchFanoutSmoke runs two small fan-out levels (the watchers
// spread over up to 4 connections): every watcher receives every event
// exactly once, latencies are positive and ordered,
// and the table and chart show the levels.
func TestRunWatchFanoutSmoke(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a control plane")
	}
	c, cs := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	before := runtime.NumGoroutine()
	results, err := RunWatchFanout(ctx, WatchFanoutConfig{
		API: c.AdminConfig, Watchers: []int{1, 20}, Rate: 50, Duration: 400 * time.Millisecond, Drain: 5 * time.Second, Connections: 4,
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(results) != 2 {
		t.Fatalf("got %d results, want 2 levels", len(results))
	}
	for _, r := range results {
		t.Logf("%+v", r)
		if r.Events != 20 || r.Expected != int64(r.Events*r.Watchers) || r.Delivered != r.Expected || r.Errors != 0 {
			t.Errorf("watchers=%d: %d events, delivered %d of %d, %d errors", r.Watchers, r.Events, r.Delivered, r.Expected, r.Errors)
		}
		if r.Connections != min(r.Watchers, 4) {
			t.Errorf("watchers=%d over %d connections, want %d", r.Watchers, r.Connections, min(r.Watchers, 4))
		}
		l := r.Latencies
		if l.P50 <= 0 || l.P50 > l.P99 || l.P99 > l.Max {
			t.Errorf("watchers=%d: latencies %+v", r.Watchers, l)
		}
	}
	var md bytes.Buffer
	WriteWatchFanoutTable(&md, Machine{}, results)
	if !strings.Contains(md.String(), "| 20 | ") {
		t.Errorf("table lacks the 20-watcher row:\n%s", md.String())
	}
	if svg := WatchFanoutChart(results).Chart.SVG(); strings.Count(svg, `class="series"`) != 2 {
		t.Errorf("chart: want p50 and p99 series:\n%s", svg)
	}
	nss, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range nss.Items {
		if ns.Status.Phase == corev1.NamespaceActive && strings.HasPrefix(ns.Name, "bench-watch-") {
			t.Errorf("namespace %s left active", ns.Name)
		}
	}
	checkNoGoroutineLeak(t, before)
}

// TestFanoutWatcherReceive feeds one watcher a stream with a duplicate and
// another level's object and a missing event: only the level's first
// receipts count as delivered, the duplicate is an error, and the stream's
// end leaves the missing event undelivered.
func TestFanoutWatcherReceive(t *testing.T) {
	fw := &fanoutWatcher{seen: make([]bool, 3)}
	w := watch.NewFakeWithChanSize(10, false)
	for _, name := range []string{"l0-0", "l0-0", "other-1", "l0-2"} { // a duplicate, another level's object
		w.Add(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name: name, ResourceVersion: "5",
			Annotations: map[string]string{WrittenAtAnnotation: strconv.FormatInt(time.Now().Add(-time.Millisecond).UnixNano(), 10)},
		}})
	}
	w.Stop()
	if rv := fw.receive(context.Background(), w, "l0-", "1", 3); rv != "5" {
		t.Errorf("last resourceVersion %q, want 5", rv)
	}
	if fw.delivered != 2 || fw.errors != 1 || len(fw.latencies) != 2 || fw.latencies[0] < time.Millisecond {
		t.Errorf("delivered %d errors %d latencies %v; want 2, 1 (the duplicate), two of at least 1ms", fw.delivered, fw.errors, fw.latencies)
	}
}
