package cacher_test

import (
	"context"
	"fmt"
	"math/rand"
	"net/http"
	"strconv"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/cacher"
	"github.com/kubeproof/kubeproof/impl/storage/internal/leakcheck"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

func cm(name string, lbl map[string]string, v string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, Labels: lbl},
		Data: map[string]string{"v": v}}
}

func create(t *testing.T, s storage.Interface, res storage.ResourceConfig, obj *corev1.ConfigMap) int64 {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.Create(context.Background(), res.ResourcePrefix+"/ns/"+obj.Name, obj, out); err != nil {
		t.Fatal(err)
	}
	rv, _ := strconv.ParseInt(out.ResourceVersion, 10, 64)
	return rv
}

func everything(bookmarks bool) storage.SelectionPredicate {
	p := storage.Everything()
	p.AllowWatchBookmarks = bookmarks
	return p
}

// A watcher that does not read is closed once it falls a buffer behind,
// and counted (apiserver_terminated_watchers_total); a watcher that reads
// gets every event.
func TestSlowWatcherIsClosedOthersUnaffected(t *testing.T) {
	defer leakcheck.Check(t)()
	res := storagetest.ConfigMaps()
	closed := prometheus.NewCounter(prometheus.CounterOpts{Name: "closed"})
	c, s := newCacher(t, res, func(cfg *cacher.Config) {
		cfg.WatcherBufferSize = 4
		cfg.TerminatedWatchers = closed
	})
	defer s.Close()
	defer c.Stop()
	ctx := context.Background()
	opts := storage.ListOptions{Recursive: true, ResourceVersion: "0", Predicate: everything(false)}
	slow, err := c.Watch(ctx, res.ResourcePrefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer slow.Stop()
	fast, err := c.Watch(ctx, res.ResourcePrefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer fast.Stop()
	// Lockstep: each event is written once the fast watcher has the
	// previous one, so only the slow watcher ever falls behind.
	const n = 50
	for i := range n {
		rv := create(t, c, res, cm(fmt.Sprintf("cm%02d", i), nil, "x"))
		select {
		case e, ok := <-fast.ResultChan():
			if !ok || e.Type != watch.Added || e.Object.(*corev1.ConfigMap).ResourceVersion != strconv.FormatInt(rv, 10) {
				t.Fatalf("fast watcher got %v %v (open %v), want ADDED at %d", e.Type, e.Object, ok, rv)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("fast watcher did not get event %d", i)
		}
	}
	// The slow one ends after what it had buffered.
	received := 0
	timeout := time.After(30 * time.Second)
	for open := true; open; {
		select {
		case _, ok := <-slow.ResultChan():
			if !ok {
				open = false
				break
			}
			received++
		case <-timeout:
			t.Fatal("slow watcher was not closed")
		}
	}
	if received >= n {
		t.Fatalf("slow watcher received all %d events; it should have been closed", received)
	}
	var counted dto.Metric
	if err := closed.Write(&counted); err != nil {
		t.Fatal(err)
	}
	if got := counted.GetCounter().GetValue(); got != 1 {
		t.Errorf("terminated watchers counted %v, want 1 (the slow one)", got)
	}
}

// A watcher of one object by name (a kubelet's of a ConfigMap its pods
// use) has kube-apiserver's smallest buffer, 10 events, not
// WatcherBufferSize's: one that does not read is closed after some tens of
// its object's events, where a watcher of every ConfigMap, not reading
// either, stays open.
func TestObjectWatcherHasASmallBuffer(t *testing.T) {
	defer leakcheck.Check(t)()
	res := storagetest.ConfigMaps()
	c, s := newCacher(t, res, nil)
	defer s.Close()
	defer c.Stop()
	ctx := context.Background()
	byName := storage.Everything()
	byName.Field = fields.OneTermEqualSelector("metadata.name", "x")
	one, err := c.Watch(ctx, res.ResourcePrefix+"/ns/", storage.ListOptions{Recursive: true, ResourceVersion: "0", Predicate: byName})
	if err != nil {
		t.Fatal(err)
	}
	defer one.Stop()
	all, err := c.Watch(ctx, res.ResourcePrefix+"/ns/", storage.ListOptions{Recursive: true, ResourceVersion: "0", Predicate: everything(false)})
	if err != nil {
		t.Fatal(err)
	}
	defer all.Stop()
	const n = 30 // x created and deleted: 60 events of x, 60 in all
	for range n {
		create(t, c, res, cm("x", nil, "v"))
		if err := c.Delete(ctx, res.ResourcePrefix+"/ns/x", &corev1.ConfigMap{}, nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	received := 0
	timeout := time.After(30 * time.Second)
	for open := true; open; {
		select {
		case _, ok := <-one.ResultChan():
			if !ok {
				open = false
				break
			}
			received++
		case <-timeout:
			t.Fatal("the watcher of x was not closed")
		}
	}
	if received > 12 {
		t.Errorf("the watcher of x received %d events before it was closed, want at most 12 (10 buffered, one held, one more)", received)
	}
	for i := range 2 * n {
		select {
		case _, ok := <-all.ResultChan():
			if !ok {
				t.Fatalf("the watcher of every ConfigMap was closed after %d events", i)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("the watcher of every ConfigMap got %d events, want %d", i, 2*n)
		}
	}
}

// Watches start anywhere inside the event window; older is 410.
func TestWatchWindow(t *testing.T) {
	defer leakcheck.Check(t)()
	res := storagetest.ConfigMaps()
	c, s := newCacher(t, res, func(cfg *cacher.Config) { cfg.EventBufferSize = 4 })
	defer s.Close()
	defer c.Stop()
	var rvs []int64
	for i := range 10 {
		rvs = append(rvs, create(t, c, res, cm(fmt.Sprintf("cm%d", i), nil, "x")))
	}
	waitFor := func(w watch.Interface) watch.Event {
		select {
		case e := <-w.ResultChan():
			return e
		case <-time.After(20 * time.Second):
			t.Fatal("no event")
		}
		return watch.Event{}
	}
	// The ring holds the last 4 events: a watch from rvs[5] replays 6..9.
	w, err := c.Watch(context.Background(), res.ResourcePrefix, storage.ListOptions{Recursive: true,
		ResourceVersion: strconv.FormatInt(rvs[5], 10), Predicate: everything(false)})
	if err != nil {
		t.Fatal(err)
	}
	for i := 6; i < 10; i++ {
		e := waitFor(w)
		if e.Type != watch.Added || e.Object.(*corev1.ConfigMap).Name != fmt.Sprintf("cm%d", i) {
			t.Fatalf("replayed %v %v, want ADDED cm%d", e.Type, e.Object, i)
		}
	}
	w.Stop()
	old, err := c.Watch(context.Background(), res.ResourcePrefix, storage.ListOptions{Recursive: true,
		ResourceVersion: strconv.FormatInt(rvs[2], 10), Predicate: everything(false)})
	if err != nil {
		t.Fatal(err)
	}
	e := waitFor(old)
	st, ok := e.Object.(*metav1.Status)
	if e.Type != watch.Error || !ok || st.Code != http.StatusGone || st.Reason != metav1.StatusReasonExpired {
		t.Fatalf("watch from before the window: %v %v, want ERROR 410 Expired", e.Type, e.Object)
	}
	old.Stop()
}

// A read that asks for a revision written to another resource waits for the
// cache to learn (through an etcd progress notification) that it is there.
func TestNotOlderThanAnotherResourcesWrite(t *testing.T) {
	defer leakcheck.Check(t)()
	res := storagetest.ConfigMaps()
	c, s := newCacher(t, res, nil)
	defer s.Close()
	defer c.Stop()
	create(t, c, res, cm("a", nil, "x"))
	other := storagetest.ConfigMaps()
	oc, os := newCacher(t, other, nil)
	defer os.Close()
	defer oc.Stop()
	rv := create(t, oc, other, cm("elsewhere", nil, "x"))
	l := &corev1.ConfigMapList{}
	err := c.GetList(context.Background(), res.ResourcePrefix, storage.ListOptions{Recursive: true,
		ResourceVersion: strconv.FormatInt(rv, 10), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
		Predicate: everything(false)}, l)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := strconv.ParseInt(l.ResourceVersion, 10, 64); got < rv || len(l.Items) != 1 {
		t.Fatalf("list at %s with %d items, want >= %d with 1", l.ResourceVersion, len(l.Items), rv)
	}
	got := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), res.ResourcePrefix+"/ns/a", storage.GetOptions{ResourceVersion: strconv.FormatInt(rv, 10)}, got); err != nil {
		t.Fatal(err)
	}
	// Objects handed out are copies: changing one does not change the cache.
	got.Data["v"] = "mutated"
	again := &corev1.ConfigMap{}
	if err := c.Get(context.Background(), res.ResourcePrefix+"/ns/a", storage.GetOptions{ResourceVersion: "0"}, again); err != nil {
		t.Fatal(err)
	}
	if again.Data["v"] != "x" {
		t.Fatalf("cache changed through a returned object: %q", again.Data["v"])
	}
}

// etcd's progress notifications make the cache current (a read at a later
// revision of another resource is served) without sending its watchers
// anything: a watcher's bookmarks come from its own timer, about once a
// minute, as upstream's cacher sends them, not one per notification to
// every watcher (1,000 kubelets' ConfigMap watches each got every one
// until session 12).
func TestProgressNotificationsAreNotBookmarksForEveryWatcher(t *testing.T) {
	defer leakcheck.Check(t)()
	res := storagetest.ConfigMaps()
	c, s := newCacher(t, res, func(cfg *cacher.Config) { cfg.BookmarkFrequency = time.Hour })
	defer s.Close()
	defer c.Stop()
	create(t, c, res, cm("a", nil, "x"))
	ctx := context.Background()
	var watchers []watch.Interface
	for range 3 {
		w, err := c.Watch(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true, ResourceVersion: "0", Predicate: everything(true)})
		if err != nil {
			t.Fatal(err)
		}
		defer w.Stop()
		if e := <-w.ResultChan(); e.Type != watch.Added {
			t.Fatalf("initial event %s, want ADDED", e.Type)
		}
		watchers = append(watchers, w)
	}
	other := storagetest.ConfigMaps()
	oc, os := newCacher(t, other, nil)
	defer os.Close()
	defer oc.Stop()
	for i := range 5 {
		rv := create(t, oc, other, cm(fmt.Sprintf("elsewhere-%d", i), nil, "x"))
		// The read waits for the cache to pass rv, asking etcd for progress
		// notifications (and the store asks every 100 ms on its own).
		l := &corev1.ConfigMapList{}
		if err := c.GetList(ctx, res.ResourcePrefix, storage.ListOptions{Recursive: true,
			ResourceVersion: strconv.FormatInt(rv, 10), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
			Predicate: everything(false)}, l); err != nil {
			t.Fatal(err)
		}
		if got, _ := strconv.ParseInt(l.ResourceVersion, 10, 64); got < rv {
			t.Fatalf("list at %s, want >= %d", l.ResourceVersion, rv)
		}
	}
	if err := s.RequestWatchProgress(ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(500 * time.Millisecond) // for a bookmark the notifications might have caused
	for _, w := range watchers {
		select {
		case e := <-w.ResultChan():
			t.Fatalf("watcher got %s after progress notifications, want nothing before its bookmark time", e.Type)
		default:
		}
	}
}

// Paging a list served from the cache continues in etcd at the cache's
// revision.
func TestCachedListPagesContinueInEtcd(t *testing.T) {
	defer leakcheck.Check(t)()
	res := storagetest.ConfigMaps()
	c, s := newCacher(t, res, nil)
	defer s.Close()
	defer c.Stop()
	var last int64
	for i := range 5 {
		last = create(t, c, res, cm(fmt.Sprintf("cm%d", i), nil, "x"))
	}
	var names []string
	opts := storage.ListOptions{Recursive: true, ResourceVersion: strconv.FormatInt(last, 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, Predicate: everything(false)}
	opts.Predicate.Limit = 2
	for {
		l := &corev1.ConfigMapList{}
		if err := c.GetList(context.Background(), res.ResourcePrefix+"/ns", opts, l); err != nil {
			t.Fatal(err)
		}
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
		if l.Continue == "" {
			break
		}
		opts.ResourceVersion, opts.ResourceVersionMatch = "", ""
		opts.Predicate.Continue = l.Continue
		create(t, c, res, cm("zz-later-"+strconv.Itoa(len(names)), nil, "x")) // not in the snapshot
	}
	if fmt.Sprint(names) != "[cm0 cm1 cm2 cm3 cm4]" {
		t.Fatalf("paged %v", names)
	}
}

// The cache and etcd give every watcher the same events: run the same random
// history under a selector through both and compare.
func TestCacheAndEtcdWatchesAgree(t *testing.T) {
	defer leakcheck.Check(t)()
	res := storagetest.ConfigMaps()
	c, s := newCacher(t, res, nil)
	defer s.Close()
	defer c.Stop()
	ctx := context.Background()
	start := create(t, c, res, cm("start", map[string]string{"pick": "true"}, "x"))
	sel, _ := labels.Parse("pick=true")
	opts := storage.ListOptions{Recursive: true, ResourceVersion: strconv.FormatInt(start, 10),
		Predicate: storage.SelectionPredicate{Label: sel}}
	wc, err := c.Watch(ctx, res.ResourcePrefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer wc.Stop()
	we, err := s.Watch(ctx, res.ResourcePrefix, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer we.Stop()

	rng := rand.New(rand.NewSource(1))
	live := map[string]bool{}
	for i := range 150 {
		name := fmt.Sprintf("k%d", rng.Intn(8))
		k := res.ResourcePrefix + "/ns/" + name
		pick := strconv.FormatBool(rng.Intn(2) == 0)
		switch {
		case !live[name]:
			create(t, c, res, cm(name, map[string]string{"pick": pick}, strconv.Itoa(i)))
			live[name] = true
		case rng.Intn(4) == 0:
			if err := c.Delete(ctx, k, &corev1.ConfigMap{}, nil, nil); err != nil {
				t.Fatal(err)
			}
			live[name] = false
		default:
			err := c.GuaranteedUpdate(ctx, k, &corev1.ConfigMap{}, false, nil, func(in runtime.Object) (runtime.Object, error) {
				o := in.(*corev1.ConfigMap)
				o.Labels["pick"] = pick
				o.Data["v"] = strconv.Itoa(i)
				return o, nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	end := create(t, c, res, cm("end", map[string]string{"pick": "true"}, "x"))
	collect := func(w watch.Interface) []string {
		var out []string
		timeout := time.After(30 * time.Second)
		for {
			select {
			case e := <-w.ResultChan():
				if e.Type == watch.Bookmark {
					continue
				}
				o := e.Object.(*corev1.ConfigMap)
				out = append(out, fmt.Sprintf("%s %s@%s v=%s", e.Type, o.Name, o.ResourceVersion, o.Data["v"]))
				if o.ResourceVersion == strconv.FormatInt(end, 10) {
					return out
				}
			case <-timeout:
				t.Fatalf("watch did not reach the end marker; got %d events", len(out))
			}
		}
	}
	fromCache, fromEtcd := collect(wc), collect(we)
	if len(fromCache) != len(fromEtcd) {
		t.Fatalf("cache sent %d events, etcd %d", len(fromCache), len(fromEtcd))
	}
	for i := range fromCache {
		if fromCache[i] != fromEtcd[i] {
			t.Fatalf("event %d: cache %q, etcd %q", i, fromCache[i], fromEtcd[i])
		}
	}
	if len(fromCache) < 20 {
		t.Fatalf("only %d events; the history should produce many", len(fromCache))
	}
}
