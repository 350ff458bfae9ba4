package apiserver

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// watchListStore hands the nsCache's watches to the test.
type watchListStore struct {
	storage.Interface
	watches chan *watch.FakeWatcher
	opts    chan storage.ListOptions
}

func (s *watchListStore) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	w := watch.NewFake()
	select {
	case s.opts <- opts:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	select {
	case s.watches <- w:
		return w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func TestNSCacheAnswersOnlyOnceItsStreamingListHasEnded(t *testing.T) {
	s := &watchListStore{watches: make(chan *watch.FakeWatcher), opts: make(chan storage.ListOptions)}
	c := newNSCache(s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.run(ctx); close(done) }()
	defer func() { cancel(); <-done }()

	if o := <-s.opts; o.SendInitialEvents == nil || !*o.SendInitialEvents {
		t.Fatalf("the namespace cache does not stream its list: %+v", o)
	}
	w := <-s.watches
	w.Add(&corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "default"}})
	if _, ok := c.get("default"); ok {
		t.Fatal("answered before the initial events ended")
	}
	w.Action(watch.Bookmark, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{
		Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}})
	deadline := time.Now().Add(10 * time.Second)
	for {
		if ns, ok := c.get("default"); ok {
			if ns.Name != "default" {
				t.Fatalf("got namespace %q", ns.Name)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("timed out waiting for the cache to answer")
		}
		time.Sleep(time.Millisecond)
	}
	if _, ok := c.get("missing"); ok {
		t.Fatal("a namespace never seen is cached")
	}
	// The watch ends: until the next streaming list ends, reads fall back.
	w.Stop()
	<-s.opts
	if _, ok := c.get("default"); ok {
		t.Fatal("answered while reloading")
	}
}
