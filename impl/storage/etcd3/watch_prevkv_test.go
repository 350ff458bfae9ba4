package etcd3_test

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/internal/leakcheck"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// withoutPrevKV is a Watcher whose events never carry the previous value,
// as etcd sends them to a watch whose first events it handles while it is
// still registering the watch's options: etcd's watch server registers the
// watch with its store before it records that the watch asked for previous
// values, and events for it in between go out without them. (Found as the
// TestSuite/WatchSelectorTransitions flake; the race shows in about one of
// 10,000 watches created while a key is written continuously, with no
// compaction at all.)
type withoutPrevKV struct{ clientv3.Watcher }

func (w withoutPrevKV) Watch(ctx context.Context, key string, opts ...clientv3.OpOption) clientv3.WatchChan {
	in := w.Watcher.Watch(ctx, key, opts...)
	out := make(chan clientv3.WatchResponse)
	go func() {
		defer close(out)
		for wr := range in {
			evs := make([]*clientv3.Event, len(wr.Events))
			for i, ev := range wr.Events {
				e := *ev
				e.PrevKv = nil
				evs[i] = &e
			}
			wr.Events = evs
			select {
			case out <- wr:
			case <-ctx.Done(): // drain until the inner watch closes
			}
		}
	}()
	return out
}

// TestWatchWithoutPrevKVFromEtcd: an event etcd sends without its previous
// value, although the watch asked for it and the history is not compacted,
// still becomes the right API event (the watcher reads the previous value
// itself), and the watch's value sizes still count the replaced values.
func TestWatchWithoutPrevKVFromEtcd(t *testing.T) {
	defer leakcheck.Check(t)()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	res := storagetest.ConfigMaps()
	s, err := etcd3.New(etcd3.Config{
		Client:     etcd.Client(),
		NewWatcher: func() clientv3.Watcher { return withoutPrevKV{clientv3.NewWatcher(etcd.Client())} },
		Resource:   res,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := res.ResourcePrefix + "/ns/a"
	start, err := s.CurrentRevision(ctx)
	if err != nil {
		t.Fatal(err)
	}

	var mu sync.Mutex
	var net int64 // added minus removed value bytes, over the watch's events
	wctx := storage.WithValueSizes(ctx, func(added, removed int) {
		mu.Lock()
		net += int64(added - removed)
		mu.Unlock()
	})
	pred := storage.Everything()
	pred.Label = labels.SelectorFromSet(labels.Set{"pick": "true"})
	pred.Field = fields.Everything()
	w, err := s.Watch(wctx, key, storage.ListOptions{ResourceVersion: strconv.FormatInt(start, 10), Predicate: pred})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns", Labels: map[string]string{"pick": "false"}},
		Data: map[string]string{"v": "0"}}
	created := &corev1.ConfigMap{}
	if err := s.Create(ctx, key, cm, created); err != nil {
		t.Fatal(err)
	}
	update := func(f func(*corev1.ConfigMap)) string {
		out := &corev1.ConfigMap{}
		if err := s.GuaranteedUpdate(ctx, key, out, false, nil, func(in runtime.Object) (runtime.Object, error) {
			c := in.(*corev1.ConfigMap).DeepCopy()
			f(c)
			return c, nil
		}); err != nil {
			t.Fatal(err)
		}
		return out.ResourceVersion
	}
	rvIn := update(func(c *corev1.ConfigMap) { c.Labels["pick"] = "true" })
	rvMod := update(func(c *corev1.ConfigMap) { c.Data["v"] = "a longer value than before" })
	rvOut := update(func(c *corev1.ConfigMap) { c.Labels["pick"] = "false" })
	rvIn2 := update(func(c *corev1.ConfigMap) { c.Labels["pick"] = "true" })
	deleted := &corev1.ConfigMap{}
	if err := s.Delete(ctx, key, deleted, nil, nil); err != nil {
		t.Fatal(err)
	}

	want := []string{"ADDED " + rvIn, "MODIFIED " + rvMod, "DELETED " + rvOut, "ADDED " + rvIn2, "DELETED " + deleted.ResourceVersion}
	for i, wantEv := range want {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch closed before event %d (%s)", i, wantEv)
			}
			got := string(e.Type)
			if e.Type == watch.Error {
				got += fmt.Sprintf(" %v", e.Object)
			} else {
				got += " " + e.Object.(*corev1.ConfigMap).ResourceVersion
			}
			if got != wantEv {
				t.Fatalf("event %d = %s, want %s (all wanted: %v)", i, got, wantEv, want)
			}
		case <-ctx.Done():
			t.Fatalf("no event %d (%s)", i, wantEv)
		}
	}
	// Every value the watch saw written was replaced or deleted by a later
	// event: counted in, then counted out.
	mu.Lock()
	defer mu.Unlock()
	if net != 0 {
		t.Errorf("value sizes of the watch's events add up to %d bytes after the object was deleted, want 0", net)
	}
}
