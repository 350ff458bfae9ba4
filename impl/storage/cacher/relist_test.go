package cacher_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/cacher"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/internal/leakcheck"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// breakableStore is an etcd3 store whose watches the test can break, as a
// lost etcd connection or a compaction would. A test can also have the next
// watch run a hook as it starts and hold its events until a gate opens.
type breakableStore struct {
	*etcd3.Store
	mu          sync.Mutex
	watches     []*breakableWatch
	beforeWatch func()        // run by the next Watch, before it starts
	gate        chan struct{} // the next watch passes events on once closed
}

type breakableWatch struct {
	inner watch.Interface
	out   chan watch.Event
	brk   chan struct{}
	once  sync.Once
	done  chan struct{}
}

func (s *breakableStore) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	hook, gate := s.beforeWatch, s.gate
	s.beforeWatch, s.gate = nil, nil
	s.mu.Unlock()
	if hook != nil {
		hook()
	}
	inner, err := s.Store.Watch(ctx, key, opts)
	if err != nil {
		return nil, err
	}
	w := &breakableWatch{inner: inner, out: make(chan watch.Event), brk: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(w.done)
		defer close(w.out)
		defer inner.Stop()
		if gate != nil {
			select {
			case <-gate:
			case <-w.brk:
				return
			}
		}
		for {
			select {
			case e, ok := <-inner.ResultChan():
				if !ok {
					return
				}
				select {
				case w.out <- e:
				case <-w.brk:
					w.out <- watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 500}}
					return
				}
			case <-w.brk:
				w.out <- watch.Event{Type: watch.Error, Object: &metav1.Status{Status: metav1.StatusFailure, Code: 500}}
				return
			}
		}
	}()
	s.mu.Lock()
	s.watches = append(s.watches, w)
	s.mu.Unlock()
	return w, nil
}

func (s *breakableStore) breakAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, w := range s.watches {
		w.once.Do(func() { close(w.brk) })
	}
	s.watches = nil
}

func (w *breakableWatch) Stop() {
	w.once.Do(func() { close(w.brk) })
	go func() {
		for range w.out {
		}
	}()
	<-w.done
}

func (w *breakableWatch) ResultChan() <-chan watch.Event { return w.out }

// When its etcd watch breaks, the cache closes its watchers (they re-watch
// from their last resourceVersion), relists, and serves again, including
// writes made while it was broken.
func TestRelistAfterWatchError(t *testing.T) {
	defer leakcheck.Check(t)()
	res := storagetest.ConfigMaps()
	es, err := etcd3.New(etcd3.Config{Client: etcd.Client(), Resource: res, BookmarkInterval: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	defer es.Close()
	up := &breakableStore{Store: es}
	c, err := cacher.New(cacher.Config{Store: up, Resource: res, TooLargeResourceVersionWait: 2 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Stop()
	ctx := context.Background()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	rv0 := create(t, c, res, cm("before", nil, "x"))
	w, err := c.Watch(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(rv0),
		Predicate: everything(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	up.breakAll()
	// The client's watch ends.
	timeout := time.After(20 * time.Second)
	for open := true; open; {
		select {
		case _, ok := <-w.ResultChan():
			open = ok
		case <-timeout:
			t.Fatal("watcher not closed after the cache's etcd watch broke")
		}
	}
	rv1 := create(t, es, res, cm("during", nil, "x"))
	// The cache catches up (it relists) and serves a watch resumed from the
	// last revision the client saw, with the write made meanwhile.
	w2, err := c.Watch(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(rv1),
		Predicate: everything(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	l := &corev1.ConfigMapList{}
	if err := c.GetList(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: fmt.Sprint(rv1),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Predicate: everything(false)}, l); err != nil {
		t.Fatal(err)
	}
	if len(l.Items) != 2 {
		t.Fatalf("after relist the cache lists %d objects, want 2", len(l.Items))
	}
	rv2 := create(t, c, res, cm("after", nil, "x"))
	select {
	case e := <-w2.ResultChan():
		if e.Type != watch.Added || e.Object.(*corev1.ConfigMap).ResourceVersion != fmt.Sprint(rv2) {
			t.Fatalf("after relist got %v %v", e.Type, e.Object)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("no event after relist")
	}
}
