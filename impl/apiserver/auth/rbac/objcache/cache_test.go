package objcache

import (
	"context"
	"errors"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// scriptedStore serves lists from a queue of states and hands out watches
// the test drives; every other method is unused by the cache.
type scriptedStore struct {
	storage.Interface
	mu      sync.Mutex
	lists   [][]corev1.ConfigMap
	listRVs []string
	watches chan *watch.FakeWatcher
	// watchRVs records the resourceVersion each watch started from.
	watchRVs []string
}

func (s *scriptedStore) GetList(_ context.Context, _ string, _ storage.ListOptions, out runtime.Object) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.lists) == 0 {
		return errors.New("no more lists scripted")
	}
	l := out.(*corev1.ConfigMapList)
	l.Items, l.ResourceVersion = s.lists[0], s.listRVs[0]
	s.lists, s.listRVs = s.lists[1:], s.listRVs[1:]
	return nil
}

func (s *scriptedStore) Watch(ctx context.Context, _ string, opts storage.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	s.watchRVs = append(s.watchRVs, opts.ResourceVersion)
	s.mu.Unlock()
	w := watch.NewFake()
	select {
	case s.watches <- w:
	case <-ctx.Done():
	}
	return w, nil
}

func cm(name string) corev1.ConfigMap {
	return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
}

type change struct{ old, cur string }

func TestCacheListsWatchesAndRelistsAfterAnError(t *testing.T) {
	store := &scriptedStore{
		lists:   [][]corev1.ConfigMap{{cm("a"), cm("b")}, {cm("b"), cm("c")}},
		listRVs: []string{"10", "20"},
		watches: make(chan *watch.FakeWatcher),
	}
	var mu sync.Mutex
	var changes []change
	name := func(o runtime.Object) string {
		if o == nil {
			return ""
		}
		return o.(*corev1.ConfigMap).Name
	}
	c := New(Source{Store: store, Key: "/configmaps/", NewList: func() runtime.Object { return &corev1.ConfigMapList{} }},
		func(old, cur runtime.Object) {
			mu.Lock()
			changes = append(changes, change{name(old), name(cur)})
			mu.Unlock()
		})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	if err := c.WaitSynced(ctx); err != nil {
		t.Fatal(err)
	}
	w := <-store.watches
	d := cm("d")
	w.Add(&d)
	a := cm("a")
	w.Delete(&a)
	// A 410 ends the watch; the cache lists again (now b and c).
	w.Error(&metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired})
	w2 := <-store.watches
	// The second watch runs: the relist has been applied.
	if _, ok := c.Get("ns", "a"); ok {
		t.Error("a is still cached after it was deleted")
	}
	if _, ok := c.Get("ns", "d"); ok {
		t.Error("d is still cached after a relist that no longer has it")
	}
	if _, ok := c.Get("ns", "c"); !ok {
		t.Error("c from the relist is not cached")
	}
	if n := len(c.List()); n != 2 {
		t.Errorf("cache holds %d objects, want 2 (b, c)", n)
	}
	cancel()
	<-done
	w2.Stop()

	if store.watchRVs[0] != "10" || store.watchRVs[1] != "20" {
		t.Errorf("watches started at %v, want each list's resourceVersion [10 20]", store.watchRVs)
	}
	mu.Lock()
	defer mu.Unlock()
	seen := map[change]bool{}
	for _, ch := range changes {
		seen[ch] = true
	}
	for _, want := range []change{{"", "a"}, {"", "b"}, {"", "d"}, {"a", ""}, {"d", ""}, {"", "c"}, {"b", "b"}} {
		if !seen[want] {
			t.Errorf("handler never saw %+v; saw %+v", want, changes)
		}
	}
}
