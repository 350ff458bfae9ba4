package cacher_test

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"
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

// feedStore is an etcd3 store whose first watch (the cache's) is fed by
// the benchmark instead of etcd, so one event costs only the cache's own
// path: the reflector loop, the event ring, the dispatch to watchers and
// each watcher's translation and delivery. The list before it is etcd's.
type feedStore struct {
	*etcd3.Store
	mu      sync.Mutex
	watches int
	feed    chan watch.Event
	after   chan int64 // the revision the fed watch starts after
}

func (s *feedStore) Watch(ctx context.Context, key string, opts storage.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	s.watches++
	first := s.watches == 1
	s.mu.Unlock()
	if !first {
		return s.Store.Watch(ctx, key, opts)
	}
	after, err := strconv.ParseInt(opts.ResourceVersion, 10, 64)
	if err != nil {
		return nil, err
	}
	w := &fedWatch{out: make(chan watch.Event), stop: make(chan struct{})}
	go func() {
		defer close(w.out)
		for {
			select {
			case e := <-s.feed:
				select {
				case w.out <- e:
				case <-w.stop:
					return
				case <-ctx.Done():
					return
				}
			case <-w.stop:
				return
			case <-ctx.Done():
				return
			}
		}
	}()
	s.after <- after
	return w, nil
}

type fedWatch struct {
	out  chan watch.Event
	stop chan struct{}
	once sync.Once
}

func (w *fedWatch) Stop()                          { w.once.Do(func() { close(w.stop) }) }
func (w *fedWatch) ResultChan() <-chan watch.Event { return w.out }

// BenchmarkDispatch measures the watch cache fanning one event out to N
// watchers of the whole resource: each iteration feeds one MODIFIED event
// into the cache's upstream watch and waits until every watcher's client
// has received it. ns/event/watcher is the cost per delivery.
func BenchmarkDispatch(b *testing.B) {
	for _, n := range []int{1, 100, 1000} {
		b.Run(fmt.Sprintf("watchers=%d", n), func(b *testing.B) { benchmarkDispatch(b, n) })
	}
}

func benchmarkDispatch(b *testing.B, watchers int) {
	defer leakcheck.CheckAll(b)()
	res := storagetest.ConfigMaps()
	es, err := etcd3.New(etcd3.Config{Client: etcd.Client(), Resource: res})
	if err != nil {
		b.Fatal(err)
	}
	defer es.Close()
	up := &feedStore{Store: es, feed: make(chan watch.Event), after: make(chan int64, 1)}
	c, err := cacher.New(cacher.Config{Store: up, Resource: res, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Stop()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		b.Fatal(err)
	}
	rv := <-up.after

	// Each watcher's client counts the events it receives.
	var received sync.WaitGroup
	var clients sync.WaitGroup
	counts := make([]int, watchers)
	for i := range watchers {
		w, err := c.Watch(context.Background(), res.ResourcePrefix, storage.ListOptions{ResourceVersion: "0", Recursive: true, Predicate: storage.Everything()})
		if err != nil {
			b.Fatal(err)
		}
		defer w.Stop()
		clients.Add(1)
		go func() {
			defer clients.Done()
			for e := range w.ResultChan() {
				if e.Type == watch.Added || e.Type == watch.Modified {
					counts[i]++
					received.Done()
				}
			}
		}()
	}
	obj := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "bench", Name: "fanout", Labels: map[string]string{"app": "bench"}},
		Data: map[string]string{"k": "v"}}
	events := make([]watch.Event, 0, b.N)
	for i := range b.N {
		o := obj.DeepCopy()
		o.ResourceVersion = strconv.FormatInt(rv+1+int64(i), 10)
		typ := watch.Modified
		if i == 0 {
			typ = watch.Added
		}
		events = append(events, watch.Event{Type: typ, Object: o})
	}

	b.ResetTimer()
	for _, e := range events {
		received.Add(watchers)
		select {
		case up.feed <- e:
		case <-ctx.Done():
			b.Fatal("the cache stopped reading its watch")
		}
		received.Wait()
	}
	b.StopTimer()
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/float64(watchers), "ns/event/watcher")

	c.Stop()
	clients.Wait()
	for i, n := range counts {
		if n != b.N {
			b.Fatalf("watcher %d received %d events, want %d", i, n, b.N)
		}
	}
}
