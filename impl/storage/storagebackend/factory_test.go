package storagebackend

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/cacher"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/internal/leakcheck"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// startEtcd starts an embedded etcd (fsync off) for one test. When the
// test ends it is closed, and then no goroutine of ours may be left.
func startEtcd(t *testing.T) *embedded.Etcd {
	t.Helper()
	t.Cleanup(leakcheck.Check(t)) // registered first: runs after every later cleanup
	e, err := embedded.Start(context.Background(), embedded.Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = e.Close() })
	return e
}

func TestFactoryStoresUnderPrefixAndRecordsMetrics(t *testing.T) {
	ctx := context.Background()
	e := startEtcd(t)
	reg := prometheus.NewRegistry()
	f := NewFactory(Config{Client: e.Client(), Metrics: reg, CompactionInterval: 0})
	defer f.Close()
	// A second factory on the same registry shares the collectors.
	NewFactory(Config{Client: e.Client(), Metrics: reg}).Close()

	res := storagetest.ConfigMaps()
	s, destroy, err := f.New(res)
	if err != nil {
		t.Fatal(err)
	}
	defer destroy()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "a"}, Data: map[string]string{"k": "v"}}
	if err := s.Create(ctx, res.ResourcePrefix+"/ns/a", cm, nil); err != nil {
		t.Fatal(err)
	}
	resp, err := e.Client().Get(ctx, "/registry"+res.ResourcePrefix+"/ns/a")
	if err != nil || len(resp.Kvs) != 1 {
		t.Fatalf("object not at /registry%s/ns/a: %v %v", res.ResourcePrefix, resp, err)
	}
	// Stored like kube-apiserver: protobuf with the k8s magic.
	if !strings.HasPrefix(string(resp.Kvs[0].Value), "k8s\x00") {
		t.Fatalf("stored bytes %q do not start with the protobuf magic", resp.Kvs[0].Value[:8])
	}
	// Labelled as kube-apiserver's: operation, group and resource.
	created := map[string]string{"operation": "create", "group": "", "resource": "configmaps"}
	for _, name := range []string{"etcd_request_duration_seconds", "etcd_requests_total"} {
		m := sample(t, reg, name, created)
		if m == nil || (m.GetHistogram().GetSampleCount() != 1 && m.GetCounter().GetValue() != 1) {
			t.Fatalf("no %s{operation=create,group=,resource=configmaps} sample of 1 after a create: %v", name, m)
		}
		var names []string
		for _, l := range m.GetLabel() {
			names = append(names, l.GetName())
		}
		if strings.Join(names, ",") != "group,operation,resource" {
			t.Errorf("%s labels %v, want group, operation, resource", name, names)
		}
	}
	got := &corev1.ConfigMap{}
	if err := s.Get(ctx, res.ResourcePrefix+"/ns/a", storage.GetOptions{}, got); err != nil || got.Data["k"] != "v" {
		t.Fatalf("get: %v %v", got, err)
	}
}

func TestFactoryWatchCacheServesAndStops(t *testing.T) {
	ctx := context.Background()
	e := startEtcd(t)
	f := NewFactory(Config{Client: e.Client(), WatchCache: true})
	defer f.Close()
	res := storagetest.Pods()
	res.GroupResource.Resource = "pods"
	s, _, err := f.New(res) // destroyed by f.Close
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	out := &corev1.Pod{}
	if err := s.Create(ctx, res.ResourcePrefix+"/ns/p", pod, out); err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: "0",
		Predicate: storage.SelectionPredicate{GetAttrs: storagetest.PodAttrs}})
	if err != nil {
		t.Fatal(err)
	}
	ev := <-w.ResultChan()
	if got := ev.Object.(*corev1.Pod); ev.Type != "ADDED" || got.Name != "p" || got.ResourceVersion != out.ResourceVersion {
		t.Fatalf("first event %v %v", ev.Type, got)
	}
	// Close ends the open watch too.
	f.Close()
	for range w.ResultChan() {
	}
	if _, _, err := f.New(res); err == nil {
		t.Fatal("New after Close succeeded")
	}
}

// A watch the watch cache closes for falling behind is counted in
// apiserver_terminated_watchers_total under its resource, on a registry
// two factories share.
func TestFactoryCountsWatchersClosedForFallingBehind(t *testing.T) {
	ctx := context.Background()
	e := startEtcd(t)
	reg := prometheus.NewRegistry()
	f := NewFactory(Config{Client: e.Client(), WatchCache: true, Metrics: reg})
	defer f.Close()
	NewFactory(Config{Client: e.Client(), WatchCache: true, Metrics: reg}).Close()
	res := storagetest.ConfigMaps()
	s, _, err := f.New(res) // destroyed by f.Close
	if err != nil {
		t.Fatal(err)
	}
	w, err := s.Watch(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: "0", Predicate: storage.Everything()})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// Never read: it falls behind once the writes outnumber its buffer
	// (cacher.Config.WatcherBufferSize's default, 256).
	for i := range 300 {
		name := fmt.Sprintf("cm%03d", i)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
		if err := s.Create(ctx, res.ResourcePrefix+"/ns/"+name, cm, nil); err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(30 * time.Second)
	for {
		got := sample(t, reg, "apiserver_terminated_watchers_total", map[string]string{"group": "", "resource": "configmaps"}).GetCounter().GetValue()
		if got == 1 {
			return
		}
		if got > 1 || time.Now().After(deadline) {
			t.Fatalf("apiserver_terminated_watchers_total{resource=configmaps} = %v, want 1", got)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// sample is the metric of the family name on reg whose labels include
// labels (nil if there is none).
func sample(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) *dto.Metric {
	t.Helper()
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range labels {
				if have[k] != v {
					continue metrics
				}
			}
			return m
		}
	}
	return nil
}

// Events are served straight from etcd with the watch cache on, as
// kube-apiserver's default watch cache sizes; pods through the cache.
func TestFactoryLeavesEventsUncached(t *testing.T) {
	e := startEtcd(t)
	f := NewFactory(Config{Client: e.Client(), WatchCache: true})
	defer f.Close()
	for _, tc := range []struct {
		gr     schema.GroupResource
		cached bool
	}{
		{schema.GroupResource{Resource: "events"}, false},
		{schema.GroupResource{Group: "events.k8s.io", Resource: "events"}, false},
		{schema.GroupResource{Resource: "pods"}, true},
		{schema.GroupResource{Resource: "configmaps"}, true},
	} {
		res := storagetest.ConfigMaps()
		res.GroupResource = tc.gr
		s, _, err := f.New(res) // destroyed by f.Close
		if err != nil {
			t.Fatal(err)
		}
		_, direct := s.(*etcd3.Store)
		_, cached := s.(*cacher.Cacher)
		if cached != tc.cached || direct == tc.cached {
			t.Errorf("%s: store %T, want cached=%v", tc.gr, s, tc.cached)
		}
	}
}
