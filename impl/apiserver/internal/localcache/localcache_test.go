package localcache

import (
	"context"
	"errors"
	"runtime"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	kruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// scriptedStore lets a test drive every list and watch the cache makes:
// GetList announces itself on listStarted, then serves the next reply of
// lists; Watch serves the next reply of watches. Every other method is
// unused by the cache.
type scriptedStore struct {
	storage.Interface
	listStarted chan struct{}
	lists       chan listReply
	watches     chan watchReply

	mu        sync.Mutex
	watchOpts []storage.ListOptions
}

type listReply struct {
	items []corev1.ConfigMap
	rv    string
	err   error
}

type watchReply struct {
	w   *watch.FakeWatcher
	err error
}

func newScriptedStore() *scriptedStore {
	return &scriptedStore{listStarted: make(chan struct{}), lists: make(chan listReply), watches: make(chan watchReply)}
}

func (s *scriptedStore) GetList(ctx context.Context, _ string, _ storage.ListOptions, out kruntime.Object) error {
	select {
	case s.listStarted <- struct{}{}:
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case r := <-s.lists:
		if r.err != nil {
			return r.err
		}
		l := out.(*corev1.ConfigMapList)
		l.Items, l.ResourceVersion = r.items, r.rv
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (s *scriptedStore) Watch(ctx context.Context, _ string, opts storage.ListOptions) (watch.Interface, error) {
	s.mu.Lock()
	s.watchOpts = append(s.watchOpts, opts)
	s.mu.Unlock()
	select {
	case r := <-s.watches:
		if r.err != nil {
			return nil, r.err
		}
		return r.w, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

func (s *scriptedStore) opts(i int) storage.ListOptions {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.watchOpts[i]
}

// list serves one list, after the cache has started it.
func (s *scriptedStore) list(rv string, items ...corev1.ConfigMap) {
	<-s.listStarted
	s.lists <- listReply{items: items, rv: rv}
}

// watch serves one watch and returns it.
func (s *scriptedStore) watch() *watch.FakeWatcher {
	w := watch.NewFake()
	s.watches <- watchReply{w: w}
	return w
}

func cm(ns, name string) corev1.ConfigMap {
	return corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
}

func ptr(c corev1.ConfigMap) *corev1.ConfigMap { return &c }

func newConfigMapList() kruntime.Object { return &corev1.ConfigMapList{} }

// run starts c.Run and returns the function that stops it and checks
// that no goroutine was left behind.
func run(t *testing.T, c *Cache) (stop func()) {
	t.Helper()
	before := runtime.NumGoroutine()
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { c.Run(ctx); close(done) }()
	return func() {
		t.Helper()
		cancel()
		<-done
		waitFor(t, "goroutines back to the count before Run", func() bool { return runtime.NumGoroutine() <= before })
	}
}

// waitFor polls cond: the cache applies events on its own goroutine.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting: %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// names lists the cached namespace/name keys of namespace ns, sorted.
func names(t *testing.T, c *Cache, ns string) string {
	t.Helper()
	objs, synced := c.List(ns)
	if !synced {
		return "<not synced>"
	}
	var out []string
	for _, o := range objs {
		m := o.(*corev1.ConfigMap)
		out = append(out, m.Namespace+"/"+m.Name)
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestListThenWatchFollowsEventsAndRelistsAfterExpired(t *testing.T) {
	s := newScriptedStore()
	c := New(Config{Store: s, Key: "/configmaps/", NewList: newConfigMapList, RetryDelay: time.Millisecond})
	if _, _, synced := c.Get("a", "x"); synced {
		t.Fatal("a cache that never listed says it is synced")
	}
	if objs, synced := c.List(""); synced || objs != nil {
		t.Fatalf("a cache that never listed lists %v (synced %v)", objs, synced)
	}
	stop := run(t, c)
	defer stop()

	s.list("10", cm("a", "x"), cm("b", "y"), cm("", "global"))
	w := s.watch()
	if o := s.opts(0); o.ResourceVersion != "10" || !o.Recursive || o.SendInitialEvents != nil {
		t.Fatalf("first watch options %+v: want a recursive watch from the list's resourceVersion 10", o)
	}
	if err := c.WaitLoaded(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := names(t, c, ""); got != "/global a/x b/y" {
		t.Fatalf("after the list: %q", got)
	}
	if got := names(t, c, "a"); got != "a/x" {
		t.Fatalf("namespace a: %q", got)
	}
	if o, found, synced := c.Get("", "global"); !found || !synced || o.(*corev1.ConfigMap).Name != "global" {
		t.Fatalf("cluster-scoped get: %v %v %v", o, found, synced)
	}

	w.Add(ptr(cm("a", "new")))
	w.Modify(ptr(cm("b", "y")))
	w.Delete(ptr(cm("a", "x")))
	w.Action(watch.Bookmark, ptr(cm("", "")))
	waitFor(t, "events applied", func() bool { return names(t, c, "") == "/global a/new b/y" })
	if _, found, synced := c.Get("a", "x"); found || !synced {
		t.Fatalf("deleted object: found %v synced %v", found, synced)
	}

	// A 410 ends the watch: the cache stops answering until it has listed
	// again, so its readers go to the store meanwhile.
	w.Error(&metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired})
	<-s.listStarted
	if c.Synced() {
		t.Fatal("the cache answers while it relists")
	}
	if _, found, synced := c.Get("b", "y"); found || synced {
		t.Fatalf("get while relisting: found %v synced %v", found, synced)
	}
	s.lists <- listReply{items: []corev1.ConfigMap{cm("c", "z")}, rv: "20"}
	s.watch()
	waitFor(t, "relisted", func() bool { return names(t, c, "") == "c/z" })
	if o := s.opts(1); o.ResourceVersion != "20" {
		t.Fatalf("second watch from %q, want the relist's 20", o.ResourceVersion)
	}
}

func TestFailuresOfListAndWatchLeadToARelist(t *testing.T) {
	s := newScriptedStore()
	c := New(Config{Store: s, Key: "/configmaps/", NewList: newConfigMapList, RetryDelay: time.Millisecond})
	stop := run(t, c)
	defer stop()

	<-s.listStarted
	s.lists <- listReply{err: errors.New("etcd unavailable")}
	s.list("5", cm("a", "x"))
	s.watches <- watchReply{err: errors.New("too old resource version")}
	<-s.listStarted
	if c.Synced() {
		t.Fatal("synced after its watch failed")
	}
	s.lists <- listReply{items: []corev1.ConfigMap{cm("a", "y")}, rv: "6"}
	w := s.watch()
	waitFor(t, "synced", c.Synced)
	if got := names(t, c, ""); got != "a/y" {
		t.Fatalf("after the third list: %q", got)
	}
	// A watch the server ends is resumed (TestAWatchTheServerEndsIsResumed);
	// one that cannot be resumed is a relist.
	w.Stop()
	serveWatch(t, s, watchReply{err: errors.New("too old resource version")})
	s.list("7", cm("a", "z"))
	s.watch()
	waitFor(t, "relisted after the resumed watch failed", func() bool { return names(t, c, "") == "a/z" })
}

// rvCM is a ConfigMap with a resourceVersion.
func rvCM(ns, name, rv string) *corev1.ConfigMap {
	c := cm(ns, name)
	c.ResourceVersion = rv
	return &c
}

// expectWatch serves the cache's next request, which must be a watch (not
// a list), and returns it.
func expectWatch(t *testing.T, s *scriptedStore) *watch.FakeWatcher {
	t.Helper()
	w := watch.NewFake()
	serveWatch(t, s, watchReply{w: w})
	return w
}

// serveWatch answers the cache's next request, which must be a watch, with r.
func serveWatch(t *testing.T, s *scriptedStore, r watchReply) {
	t.Helper()
	select {
	case s.watches <- r:
	case <-s.listStarted:
		t.Fatal("the cache listed again instead of resuming its watch")
	case <-time.After(10 * time.Second):
		t.Fatal("timed out waiting for the cache's next watch")
	}
}

// A watch whose channel the server closes (its timeout, or the watch cache
// closing a watcher that fell behind) is resumed from the last
// resourceVersion it delivered, as client-go's reflector resumes: no list,
// the cache keeps answering from its state meanwhile, and the events since
// then arrive on the resumed watch. Only an error (410) reloads.
func TestAWatchTheServerEndsIsResumedFromItsLastResourceVersion(t *testing.T) {
	s := newScriptedStore()
	c := New(Config{Store: s, Key: "/configmaps/", NewList: newConfigMapList, RetryDelay: time.Millisecond})
	stop := run(t, c)
	defer stop()

	s.list("6", cm("a", "x"))
	w := s.watch()
	w.Add(rvCM("a", "y", "8"))
	w.Action(watch.Bookmark, rvCM("", "", "9"))
	waitFor(t, "event applied", func() bool { return names(t, c, "a") == "a/x a/y" })
	w.Stop()
	w2 := expectWatch(t, s)
	if o := s.opts(1); o.ResourceVersion != "9" || o.SendInitialEvents != nil || o.ResourceVersionMatch != "" || !o.Recursive {
		t.Fatalf("resumed watch options %+v: want a recursive watch from the last bookmark's 9", o)
	}
	if got := names(t, c, "a"); got != "a/x a/y" {
		t.Fatalf("while resuming: %q, want the state it had", got)
	}
	w2.Delete(rvCM("a", "x", "10"))
	waitFor(t, "resumed watch's event applied", func() bool { return names(t, c, "a") == "a/y" })
	w2.Stop()
	expectWatch(t, s)
	if o := s.opts(2); o.ResourceVersion != "10" {
		t.Fatalf("second resume from %q, want 10", o.ResourceVersion)
	}
}

// A watch-list cache resumes with a plain watch from the last
// resourceVersion once its initial events have ended; a watch that ends
// before then loads again with initial events.
func TestWatchListResumesAfterItsInitialEvents(t *testing.T) {
	s := newScriptedStore()
	c := New(Config{Store: s, Key: "/configmaps/", Load: WatchList, RetryDelay: time.Millisecond})
	stop := run(t, c)
	defer stop()

	w := s.watch()
	w.Add(rvCM("", "a", "20"))
	w.Stop() // before the end bookmark: the load did not finish
	w = expectWatch(t, s)
	if o := s.opts(1); o.SendInitialEvents == nil || !*o.SendInitialEvents {
		t.Fatalf("after an unfinished load the watch options are %+v: want initial events again", o)
	}
	w.Add(rvCM("", "a", "20"))
	end := rvCM("", "", "30")
	end.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	w.Action(watch.Bookmark, end)
	w.Add(rvCM("", "b", "31"))
	waitFor(t, "loaded and followed", func() bool { return names(t, c, "") == "/a /b" })
	w.Stop()
	expectWatch(t, s)
	if o := s.opts(2); o.ResourceVersion != "31" || o.SendInitialEvents != nil || o.ResourceVersionMatch != "" {
		t.Fatalf("resumed watch options %+v: want a plain watch from 31", o)
	}
	if !c.Synced() {
		t.Fatal("a resuming cache stopped answering")
	}
}

func TestKeepWhileReloadingAnswersFromTheLastStateAndReportsChanges(t *testing.T) {
	s := newScriptedStore()
	type change struct{ old, cur string }
	var mu sync.Mutex
	var changes []change
	name := func(o kruntime.Object) string {
		if o == nil {
			return ""
		}
		return o.(*corev1.ConfigMap).Name
	}
	c := New(Config{Store: s, Key: "/configmaps/", NewList: newConfigMapList, RetryDelay: time.Millisecond,
		KeepWhileReloading: true,
		OnChange: func(old, cur kruntime.Object) {
			mu.Lock()
			changes = append(changes, change{name(old), name(cur)})
			mu.Unlock()
		}})
	stop := run(t, c)
	defer stop()

	s.list("1", cm("n", "a"), cm("n", "b"))
	w := s.watch()
	w.Add(ptr(cm("n", "d")))
	w.Delete(ptr(cm("n", "a")))
	w.Delete(ptr(cm("n", "never-seen")))
	w.Error(&metav1.Status{Code: 410, Reason: metav1.StatusReasonExpired})
	<-s.listStarted
	if !c.Synced() || !c.HasLoaded() {
		t.Fatal("a KeepWhileReloading cache stopped answering while it relists")
	}
	if got := names(t, c, "n"); got != "n/b n/d" {
		t.Fatalf("while relisting: %q", got)
	}
	s.lists <- listReply{items: []corev1.ConfigMap{cm("n", "b"), cm("n", "c")}, rv: "2"}
	s.watch()
	waitFor(t, "relisted", func() bool { return names(t, c, "n") == "n/b n/c" })
	stop() // stopping twice (here and deferred) is harmless

	mu.Lock()
	defer mu.Unlock()
	seen := map[change]int{}
	for _, ch := range changes {
		seen[ch]++
	}
	want := map[change]int{{"", "a"}: 1, {"", "b"}: 1, {"", "d"}: 1, {"a", ""}: 1, {"d", ""}: 1, {"", "c"}: 1, {"b", "b"}: 1}
	if len(seen) != len(want) {
		t.Errorf("changes %+v, want %+v", changes, want)
	}
	for ch, n := range want {
		if seen[ch] != n {
			t.Errorf("change %+v seen %d times, want %d; all: %+v", ch, seen[ch], n, changes)
		}
	}
}

func TestWatchListLoadsFromInitialEventsUntilTheirEndBookmark(t *testing.T) {
	s := newScriptedStore()
	c := New(Config{Store: s, Key: "/configmaps/", Load: WatchList, RetryDelay: time.Millisecond})
	stop := run(t, c)
	defer stop()

	w := s.watch()
	o := s.opts(0)
	if o.SendInitialEvents == nil || !*o.SendInitialEvents || o.ResourceVersion != "" ||
		o.ResourceVersionMatch != metav1.ResourceVersionMatchNotOlderThan || !o.Predicate.AllowWatchBookmarks {
		t.Fatalf("watch-list options %+v: want sendInitialEvents, resourceVersion \"\" NotOlderThan, bookmarks", o)
	}
	w.Add(ptr(cm("", "a")))
	w.Add(ptr(cm("", "b")))
	w.Delete(ptr(cm("", "b")))
	w.Action(watch.Bookmark, ptr(cm("", ""))) // an ordinary bookmark does not end the initial events
	if c.Synced() {
		t.Fatal("synced before the initial-events-end bookmark")
	}
	end := cm("", "")
	end.Annotations = map[string]string{metav1.InitialEventsAnnotationKey: "true"}
	w.Action(watch.Bookmark, &end)
	waitFor(t, "synced at the initial-events-end bookmark", c.Synced)
	if got := names(t, c, ""); got != "/a" {
		t.Fatalf("initial state %q, want /a", got)
	}
	w.Add(ptr(cm("", "c")))
	waitFor(t, "event after the initial ones applied", func() bool { return names(t, c, "") == "/a /c" })

	// The watch ends: not synced until the next watch's initial events end.
	w.Stop()
	w2 := s.watch()
	if c.Synced() {
		t.Fatal("synced before the second watch's initial events")
	}
	w2.Add(ptr(cm("", "z")))
	w2.Action(watch.Bookmark, &end)
	waitFor(t, "reloaded", func() bool { return names(t, c, "") == "/z" })
}

func TestRunEndsWithItsContextWhereverItIs(t *testing.T) {
	for _, where := range []string{"listing", "opening the watch", "watching", "waiting to retry"} {
		t.Run(where, func(t *testing.T) {
			s := newScriptedStore()
			delay := time.Millisecond
			if where == "waiting to retry" {
				delay = time.Hour
			}
			c := New(Config{Store: s, Key: "/configmaps/", NewList: newConfigMapList, RetryDelay: delay})
			stop := run(t, c)
			switch where {
			case "listing":
				<-s.listStarted
			case "opening the watch":
				s.list("1")
				waitFor(t, "watch opened", func() bool { s.mu.Lock(); defer s.mu.Unlock(); return len(s.watchOpts) == 1 })
			case "watching":
				s.list("1", cm("a", "x"))
				s.watch()
				waitFor(t, "synced", c.Synced)
			case "waiting to retry":
				<-s.listStarted
				s.lists <- listReply{err: errors.New("unavailable")}
			}
			stop()
			if where == "watching" && c.Synced() {
				t.Error("a stopped cache still says it is synced")
			}
		})
	}
}

func TestWaitLoadedReturnsTheContextsError(t *testing.T) {
	c := New(Config{Key: "/configmaps/"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := c.WaitLoaded(ctx); !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "/configmaps/") {
		t.Fatalf("WaitLoaded on a cancelled context: %v", err)
	}
}
