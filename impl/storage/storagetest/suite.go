package storagetest

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/compact"
	"github.com/kubeproof/kubeproof/impl/storage/internal/leakcheck"
)

// Backend builds the stores the suite tests.
type Backend struct {
	// Client is the etcd the stores keep their data in; the suite writes
	// through it behind the stores' backs and compacts it.
	Client *clientv3.Client
	// New builds the store of res. The store must send bookmarks to watches
	// that allow them at least every 200ms, and give up waiting for a too
	// large resourceVersion within a second.
	New func(t *testing.T, res storage.ResourceConfig) (storage.Interface, storage.DestroyFunc)
}

// Run runs every behaviour test against b.
func Run(t *testing.T, b Backend) {
	tests := []struct {
		name string
		run  func(t *testing.T, b Backend)
	}{
		{"CreateAssignsIncreasingResourceVersions", testCreateIncreasingRVs},
		{"SecondCreateIsKeyExists", testSecondCreate},
		{"GetOptions", testGet},
		{"UpdateRetriesStaleCAS", testUpdateRetriesStaleCAS},
		{"UpdatePreconditions", testUpdatePreconditions},
		{"UpdateNoOpDoesNotWrite", testUpdateNoOp},
		{"UpdateIgnoreNotFoundCreates", testUpdateIgnoreNotFound},
		{"DeleteReturnsLastState", testDelete},
		{"DeletePreconditionsAndValidation", testDeletePreconditions},
		{"ListSelectors", testListSelectors},
		{"ListResourceVersions", testListResourceVersions},
		{"PaginationIsOneSnapshot", testPaginationSnapshot},
		{"LimitWithSelectorFillsPages", testLimitWithSelector},
		{"BadContinueToken", testBadContinue},
		{"ListAfterCompaction", testListAfterCompaction},
		{"WatchFromResourceVersion", testWatchFromRV},
		{"WatchSelectorTransitions", testWatchSelectorTransitions},
		{"WatchInitialEvents", testWatchInitialEvents},
		{"WatchSendInitialEvents", testWatchSendInitialEvents},
		{"WatchBookmarks", testWatchBookmarks},
		{"WatchCompacted", testWatchCompacted},
		{"WatchStop", testWatchStop},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// Cleanups run last-registered first: the check runs after the
			// stores and watches of the test are gone.
			t.Cleanup(leakcheck.Check(t))
			tc.run(t, b)
		})
	}
}

// newStore builds a store and destroys it when t ends.
func newStore(t *testing.T, b Backend, res storage.ResourceConfig) storage.Interface {
	t.Helper()
	s, destroy := b.New(t, res)
	t.Cleanup(destroy)
	return s
}

func ctxFor(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func key(res storage.ResourceConfig, ns, name string) string {
	return res.ResourcePrefix + "/" + ns + "/" + name
}

func nsKey(res storage.ResourceConfig, ns string) string { return res.ResourcePrefix + "/" + ns }

func mustCreate(t *testing.T, s storage.Interface, k string, obj runtime.Object) int64 {
	t.Helper()
	out := obj.DeepCopyObject()
	if err := s.Create(context.Background(), k, obj, out); err != nil {
		t.Fatalf("create %s: %v", k, err)
	}
	return rvOf(out)
}

func wantCode(t *testing.T, err error, code storage.ErrorCode) {
	t.Helper()
	if err == nil {
		t.Fatalf("got no error, want error code %d", code)
	}
	if got := storage.CodeOf(err); got != code {
		t.Fatalf("got error %v (code %d), want code %d", err, got, code)
	}
}

// setData is an UpdateFunc that sets the "v" data of a ConfigMap.
func setData(v string) storage.UpdateFunc {
	return func(in runtime.Object) (runtime.Object, error) {
		cm := in.(*corev1.ConfigMap)
		if cm.Data == nil {
			cm.Data = map[string]string{}
		}
		cm.Data["v"] = v
		return cm, nil
	}
}

func currentRevision(t *testing.T, c *clientv3.Client) int64 {
	t.Helper()
	resp, err := c.Get(context.Background(), "kubeproof-storagetest-probe", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	return resp.Header.Revision
}

func testCreateIncreasingRVs(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	var last int64
	for i := range 5 {
		obj := newCM("ns", fmt.Sprintf("cm%d", i), nil, "x")
		out := &corev1.ConfigMap{}
		if err := s.Create(ctxFor(t), key(res, "ns", obj.Name), obj, out); err != nil {
			t.Fatal(err)
		}
		rv := rvOf(out)
		if rv <= last {
			t.Fatalf("create %d got resourceVersion %d, not above the previous %d", i, rv, last)
		}
		if out.Name != obj.Name || out.Data["v"] != "x" {
			t.Fatalf("create returned %+v", out)
		}
		last = rv
		got := &corev1.ConfigMap{}
		if err := s.Get(ctxFor(t), key(res, "ns", obj.Name), storage.GetOptions{}, got); err != nil {
			t.Fatal(err)
		}
		if rvOf(got) != rv {
			t.Fatalf("get after create: resourceVersion %d, create returned %d", rvOf(got), rv)
		}
	}
	withRV := newCM("ns", "has-rv", nil, "x")
	withRV.ResourceVersion = "5"
	if err := s.Create(ctxFor(t), key(res, "ns", "has-rv"), withRV, nil); err == nil {
		t.Fatal("create of an object with a resourceVersion succeeded")
	}
	// As kube-apiserver's store (its versioner reads the resourceVersion
	// as an unsigned number): one that is 0 or not such a number is no
	// resourceVersion, and ignored.
	for _, rv := range []string{"0", "x", "-1"} {
		obj := newCM("ns", "rv-"+rv, nil, "x")
		obj.ResourceVersion = rv
		out := &corev1.ConfigMap{}
		if err := s.Create(ctxFor(t), key(res, "ns", obj.Name), obj, out); err != nil {
			t.Fatalf("create of an object with resourceVersion %q: %v", rv, err)
		}
		if rvOf(out) <= last {
			t.Fatalf("create of an object with resourceVersion %q returned resourceVersion %q", rv, out.ResourceVersion)
		}
	}
}

func testSecondCreate(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := key(res, "ns", "a")
	first := mustCreate(t, s, k, newCM("ns", "a", nil, "first"))
	err := s.Create(ctxFor(t), k, newCM("ns", "a", nil, "second"), &corev1.ConfigMap{})
	wantCode(t, err, storage.ErrCodeKeyExists)
	got := &corev1.ConfigMap{}
	if err := s.Get(ctxFor(t), k, storage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["v"] != "first" || rvOf(got) != first {
		t.Fatalf("after a failed second create the object is %v at %d, want the first at %d", got.Data, rvOf(got), first)
	}
}

func testGet(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := key(res, "ns", "a")
	wantCode(t, s.Get(ctxFor(t), k, storage.GetOptions{}, &corev1.ConfigMap{}), storage.ErrCodeKeyNotFound)
	zero := newCM("ns", "junk", nil, "junk")
	if err := s.Get(ctxFor(t), k, storage.GetOptions{IgnoreNotFound: true}, zero); err != nil {
		t.Fatal(err)
	}
	if zero.Name != "" || zero.Data != nil {
		t.Fatalf("IgnoreNotFound left %+v, want a zero object", zero)
	}
	rv := mustCreate(t, s, k, newCM("ns", "a", nil, "x"))
	// "0" may be served by a cache that has not seen the create yet; asked
	// after a not-older-than read it must have.
	for _, opt := range []string{"", strconv.FormatInt(rv, 10), "0"} {
		got := &corev1.ConfigMap{}
		if err := s.Get(ctxFor(t), k, storage.GetOptions{ResourceVersion: opt}, got); err != nil {
			t.Fatalf("get with resourceVersion %q: %v", opt, err)
		}
		if opt != "0" && rvOf(got) != rv {
			t.Fatalf("get with resourceVersion %q returned %d, want %d", opt, rvOf(got), rv)
		}
	}
	future := strconv.FormatInt(currentRevision(t, b.Client)+1000, 10)
	wantCode(t, s.Get(ctxFor(t), k, storage.GetOptions{ResourceVersion: future}, &corev1.ConfigMap{}),
		storage.ErrCodeTooLargeResourceVersion)
	wantCode(t, s.Get(ctxFor(t), k, storage.GetOptions{ResourceVersion: "abc"}, &corev1.ConfigMap{}),
		storage.ErrCodeInvalidArgument)
}

func testUpdateRetriesStaleCAS(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := key(res, "ns", "a")
	mustCreate(t, s, k, newCM("ns", "a", nil, "0"))
	// The first attempt races with another writer; the store must see the
	// CAS fail and call tryUpdate again on the other writer's result.
	var seen []string
	out := &corev1.ConfigMap{}
	err := s.GuaranteedUpdate(ctxFor(t), k, out, false, nil, func(in runtime.Object) (runtime.Object, error) {
		cm := in.(*corev1.ConfigMap)
		seen = append(seen, cm.Data["v"])
		if len(seen) == 1 {
			if err := s.GuaranteedUpdate(ctxFor(t), k, &corev1.ConfigMap{}, false, nil, setData("other")); err != nil {
				return nil, err
			}
		}
		cm.Data["v"] += "+mine"
		return cm, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "0,other" {
		t.Fatalf("tryUpdate saw %v, want [0 other]", seen)
	}
	if out.Data["v"] != "other+mine" {
		t.Fatalf("update result %q, want other+mine", out.Data["v"])
	}
	got := &corev1.ConfigMap{}
	if err := s.Get(ctxFor(t), k, storage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["v"] != "other+mine" || rvOf(got) != rvOf(out) {
		t.Fatalf("stored %q at %d, update returned %d", got.Data["v"], rvOf(got), rvOf(out))
	}
	wantCode(t, s.GuaranteedUpdate(ctxFor(t), key(res, "ns", "missing"), &corev1.ConfigMap{}, false, nil, setData("x")),
		storage.ErrCodeKeyNotFound)
}

func testUpdatePreconditions(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := key(res, "ns", "a")
	rv := mustCreate(t, s, k, newCM("ns", "a", nil, "0"))
	wrongUID := types.UID("other")
	called := false
	err := s.GuaranteedUpdate(ctxFor(t), k, &corev1.ConfigMap{}, false, &storage.Preconditions{UID: &wrongUID},
		func(in runtime.Object) (runtime.Object, error) { called = true; return in, nil })
	wantCode(t, err, storage.ErrCodeResourceVersionConflicts)
	if called {
		t.Fatal("tryUpdate was called although the preconditions failed")
	}
	staleRV := strconv.FormatInt(rv-1, 10)
	err = s.GuaranteedUpdate(ctxFor(t), k, &corev1.ConfigMap{}, false, &storage.Preconditions{ResourceVersion: &staleRV}, setData("1"))
	wantCode(t, err, storage.ErrCodeResourceVersionConflicts)
	goodUID := types.UID("ns-a")
	goodRV := strconv.FormatInt(rv, 10)
	if err := s.GuaranteedUpdate(ctxFor(t), k, &corev1.ConfigMap{}, false,
		&storage.Preconditions{UID: &goodUID, ResourceVersion: &goodRV}, setData("1")); err != nil {
		t.Fatalf("update with matching preconditions: %v", err)
	}
}

func testUpdateNoOp(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := key(res, "ns", "a")
	rv := mustCreate(t, s, k, newCM("ns", "a", nil, "same"))
	before := currentRevision(t, b.Client)
	out := &corev1.ConfigMap{}
	if err := s.GuaranteedUpdate(ctxFor(t), k, out, false, nil, setData("same")); err != nil {
		t.Fatal(err)
	}
	if after := currentRevision(t, b.Client); after != before {
		t.Fatalf("a no-op update wrote: etcd revision %d -> %d", before, after)
	}
	if rvOf(out) != rv || out.Data["v"] != "same" {
		t.Fatalf("no-op update returned %v at %d, want the stored object at %d", out.Data, rvOf(out), rv)
	}
}

func testUpdateIgnoreNotFound(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := key(res, "ns", "new")
	out := &corev1.ConfigMap{}
	err := s.GuaranteedUpdate(ctxFor(t), k, out, true, nil, func(in runtime.Object) (runtime.Object, error) {
		cm := in.(*corev1.ConfigMap)
		if cm.Name != "" {
			return nil, fmt.Errorf("expected a zero object, got %q", cm.Name)
		}
		return newCM("ns", "new", nil, "created"), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	got := &corev1.ConfigMap{}
	if err := s.Get(ctxFor(t), k, storage.GetOptions{}, got); err != nil {
		t.Fatal(err)
	}
	if got.Data["v"] != "created" || rvOf(got) != rvOf(out) {
		t.Fatalf("got %v at %d", got.Data, rvOf(got))
	}
}

func testDelete(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := key(res, "ns", "a")
	mustCreate(t, s, k, newCM("ns", "a", nil, "0"))
	updated := &corev1.ConfigMap{}
	if err := s.GuaranteedUpdate(ctxFor(t), k, updated, false, nil, setData("last")); err != nil {
		t.Fatal(err)
	}
	out := &corev1.ConfigMap{}
	if err := s.Delete(ctxFor(t), k, out, nil, nil); err != nil {
		t.Fatal(err)
	}
	if out.Data["v"] != "last" {
		t.Fatalf("delete returned %v, want the last state", out.Data)
	}
	if rvOf(out) <= rvOf(updated) {
		t.Fatalf("deleted object carries resourceVersion %d, want the deletion's revision (> %d)", rvOf(out), rvOf(updated))
	}
	wantCode(t, s.Get(ctxFor(t), k, storage.GetOptions{}, &corev1.ConfigMap{}), storage.ErrCodeKeyNotFound)
	wantCode(t, s.Delete(ctxFor(t), k, &corev1.ConfigMap{}, nil, nil), storage.ErrCodeKeyNotFound)
}

func testDeletePreconditions(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := key(res, "ns", "a")
	rv := mustCreate(t, s, k, newCM("ns", "a", nil, "0"))
	stale := strconv.FormatInt(rv-1, 10)
	wantCode(t, s.Delete(ctxFor(t), k, &corev1.ConfigMap{}, &storage.Preconditions{ResourceVersion: &stale}, nil),
		storage.ErrCodeResourceVersionConflicts)
	refused := errors.New("refused")
	err := s.Delete(ctxFor(t), k, &corev1.ConfigMap{}, nil, func(context.Context, runtime.Object) error { return refused })
	if !errors.Is(err, refused) {
		t.Fatalf("delete with a refusing validation: %v", err)
	}
	if err := s.Get(ctxFor(t), k, storage.GetOptions{}, &corev1.ConfigMap{}); err != nil {
		t.Fatalf("object gone after refused deletes: %v", err)
	}
	// A write between the read and the CAS makes the store validate again
	// on the new state.
	var seen []string
	out := &corev1.ConfigMap{}
	err = s.Delete(ctxFor(t), k, out, nil, func(_ context.Context, obj runtime.Object) error {
		seen = append(seen, obj.(*corev1.ConfigMap).Data["v"])
		if len(seen) == 1 {
			return s.GuaranteedUpdate(ctxFor(t), k, &corev1.ConfigMap{}, false, nil, setData("raced"))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(seen, ",") != "0,raced" || out.Data["v"] != "raced" {
		t.Fatalf("validation saw %v and delete returned %q, want [0 raced] and raced", seen, out.Data["v"])
	}
}

func listCMs(t *testing.T, s storage.Interface, k string, opts storage.ListOptions) *corev1.ConfigMapList {
	t.Helper()
	opts.Recursive = true
	if opts.Predicate.Label == nil {
		opts.Predicate.Label = labels.Everything()
	}
	if opts.Predicate.Field == nil {
		opts.Predicate.Field = fields.Everything()
	}
	l := &corev1.ConfigMapList{}
	if err := s.GetList(ctxFor(t), k, opts, l); err != nil {
		t.Fatalf("list %s %+v: %v", k, opts, err)
	}
	return l
}

func names[T any](items []T, name func(*T) string) []string {
	out := make([]string, 0, len(items))
	for i := range items {
		out = append(out, name(&items[i]))
	}
	sort.Strings(out)
	return out
}

func cmNames(l *corev1.ConfigMapList) []string {
	return names(l.Items, func(c *corev1.ConfigMap) string { return c.Name })
}

func podNames(l *corev1.PodList) []string {
	return names(l.Items, func(p *corev1.Pod) string { return p.Name })
}

func testListSelectors(t *testing.T, b Backend) {
	res := Pods()
	s := newStore(t, b, res)
	for i := range 6 {
		p := newPod("ns", fmt.Sprintf("p%d", i), fmt.Sprintf("node%d", i%2))
		p.Labels = map[string]string{"tier": []string{"web", "db", "cache"}[i%3]}
		mustCreate(t, s, key(res, "ns", p.Name), p)
	}
	mustCreate(t, s, key(res, "other", "p9"), newPod("other", "p9", "node0"))
	rev := currentRevision(t, b.Client)
	list := func(k string, sel storage.SelectionPredicate) []string {
		l := &corev1.PodList{}
		err := s.GetList(ctxFor(t), k, storage.ListOptions{Predicate: sel, Recursive: true,
			ResourceVersion: strconv.FormatInt(rev, 10), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, l)
		if err != nil {
			t.Fatal(err)
		}
		return podNames(l)
	}
	pred := func(l, f string) storage.SelectionPredicate {
		p := storage.Everything()
		p.GetAttrs = PodAttrs
		p.Label = labels.SelectorFromSet(nil)
		if l != "" {
			p.Label = mustLabels(t, l)
		}
		if f != "" {
			sel, err := fields.ParseSelector(f)
			if err != nil {
				t.Fatal(err)
			}
			p.Field = sel
		}
		return p
	}
	cases := []struct {
		key, label, field string
		want              string
	}{
		{nsKey(res, "ns"), "", "", "p0,p1,p2,p3,p4,p5"},
		{res.ResourcePrefix, "", "", "p0,p1,p2,p3,p4,p5,p9"},
		{nsKey(res, "ns"), "tier=web", "", "p0,p3"},
		{nsKey(res, "ns"), "tier in (db,cache)", "", "p1,p2,p4,p5"},
		{nsKey(res, "ns"), "", "spec.nodeName=node1", "p1,p3,p5"},
		{res.ResourcePrefix, "", "spec.nodeName=node0", "p0,p2,p4,p9"},
		{nsKey(res, "ns"), "tier=web", "spec.nodeName=node1", "p3"},
		{res.ResourcePrefix, "", "metadata.namespace=other", "p9"},
		{nsKey(res, "n"), "", "", ""}, // a namespace prefix does not match longer namespaces
	}
	for _, c := range cases {
		got := strings.Join(list(c.key, pred(c.label, c.field)), ",")
		if got != c.want {
			t.Errorf("list %s label %q field %q = %q, want %q", c.key, c.label, c.field, got, c.want)
		}
	}
}

func mustLabels(t *testing.T, s string) labels.Selector {
	t.Helper()
	sel, err := labels.Parse(s)
	if err != nil {
		t.Fatal(err)
	}
	return sel
}

func testListResourceVersions(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := nsKey(res, "ns")
	rv1 := mustCreate(t, s, key(res, "ns", "a"), newCM("ns", "a", nil, "1"))
	rv2 := mustCreate(t, s, key(res, "ns", "b"), newCM("ns", "b", nil, "1"))

	quorum := listCMs(t, s, k, storage.ListOptions{})
	if got := strings.Join(cmNames(quorum), ","); got != "a,b" {
		t.Fatalf("quorum list = %s", got)
	}
	if qrv, _ := strconv.ParseInt(quorum.ResourceVersion, 10, 64); qrv < rv2 {
		t.Fatalf("quorum list at %d, older than the last write %d", qrv, rv2)
	}
	exact := listCMs(t, s, k, storage.ListOptions{ResourceVersion: strconv.FormatInt(rv1, 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if got := strings.Join(cmNames(exact), ","); got != "a" || exact.ResourceVersion != strconv.FormatInt(rv1, 10) {
		t.Fatalf("exact list at %d = %s at %s, want a at %d", rv1, got, exact.ResourceVersion, rv1)
	}
	notOlder := listCMs(t, s, k, storage.ListOptions{ResourceVersion: strconv.FormatInt(rv2, 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if got := strings.Join(cmNames(notOlder), ","); got != "a,b" {
		t.Fatalf("not-older-than list = %s", got)
	}
	if nrv, _ := strconv.ParseInt(notOlder.ResourceVersion, 10, 64); nrv < rv2 {
		t.Fatalf("not-older-than %d list at %d", rv2, nrv)
	}
	anyList := listCMs(t, s, k, storage.ListOptions{ResourceVersion: "0"})
	if anyList.ResourceVersion == "" {
		t.Fatal("list with resourceVersion 0 has no resourceVersion")
	}
	future := strconv.FormatInt(currentRevision(t, b.Client)+1000, 10)
	err := s.GetList(ctxFor(t), k, storage.ListOptions{Recursive: true, Predicate: storage.Everything(),
		ResourceVersion: future, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan}, &corev1.ConfigMapList{})
	wantCode(t, err, storage.ErrCodeTooLargeResourceVersion)
	err = s.GetList(ctxFor(t), k, storage.ListOptions{Recursive: true, Predicate: storage.Everything(),
		ResourceVersion: "x1"}, &corev1.ConfigMapList{})
	wantCode(t, err, storage.ErrCodeInvalidArgument)
}

func testPaginationSnapshot(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := nsKey(res, "ns")
	for i := range 20 {
		name := fmt.Sprintf("cm%02d", i)
		mustCreate(t, s, key(res, "ns", name), newCM("ns", name, nil, "0"))
	}
	// Writers change the collection while the later pages are read; they
	// start after the first page so that its remainingItemCount is known.
	stop := make(chan struct{})
	var wg sync.WaitGroup
	startWriters := func() {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				ctx := context.Background()
				name := fmt.Sprintf("cm%02d", i%20)
				_ = s.GuaranteedUpdate(ctx, key(res, "ns", name), &corev1.ConfigMap{}, false, nil, setData(strconv.Itoa(i)))
				extra := fmt.Sprintf("new%03d", i)
				_ = s.Create(ctx, key(res, "ns", extra), newCM("ns", extra, nil, "0"), nil)
				if i%3 == 0 {
					_ = s.Delete(ctx, key(res, "ns", fmt.Sprintf("cm%02d", (i+7)%20)), &corev1.ConfigMap{}, nil, nil)
				}
			}
		}()
	}
	defer func() { close(stop); wg.Wait() }()

	var items []corev1.ConfigMap
	var firstRV string
	cont := ""
	for page := 0; ; page++ {
		l := listCMs(t, s, k, storage.ListOptions{Predicate: storage.SelectionPredicate{Limit: 7, Continue: cont}})
		if page == 0 {
			firstRV = l.ResourceVersion
			if l.RemainingItemCount == nil || *l.RemainingItemCount != 13 {
				t.Fatalf("first page remainingItemCount %v, want 13", l.RemainingItemCount)
			}
			startWriters()
		} else if l.ResourceVersion != firstRV {
			t.Fatalf("page %d read at %s, first page at %s", page, l.ResourceVersion, firstRV)
		}
		if len(l.Items) > 7 {
			t.Fatalf("page %d has %d items, limit 7", page, len(l.Items))
		}
		items = append(items, l.Items...)
		if l.Continue == "" {
			break
		}
		cont = l.Continue
		time.Sleep(5 * time.Millisecond) // let the writers move on between pages
	}
	if len(items) != 20 {
		t.Fatalf("paged through %d items, want the 20 of the first page's snapshot", len(items))
	}
	// Every item is as it was at the first page's revision.
	snapshot := listCMs(t, s, k, storage.ListOptions{ResourceVersion: firstRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if len(snapshot.Items) != len(items) {
		t.Fatalf("snapshot has %d items, pages %d", len(snapshot.Items), len(items))
	}
	for i := range items {
		if items[i].Name != snapshot.Items[i].Name || items[i].ResourceVersion != snapshot.Items[i].ResourceVersion {
			t.Fatalf("item %d: paged %s@%s, snapshot %s@%s", i, items[i].Name, items[i].ResourceVersion,
				snapshot.Items[i].Name, snapshot.Items[i].ResourceVersion)
		}
	}
}

func testLimitWithSelector(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := nsKey(res, "ns")
	// One in five matches: a page of 3 needs many etcd reads.
	for i := range 40 {
		name := fmt.Sprintf("cm%02d", i)
		lbl := map[string]string{"pick": strconv.FormatBool(i%5 == 0)}
		mustCreate(t, s, key(res, "ns", name), newCM("ns", name, lbl, "0"))
	}
	var got []string
	cont := ""
	pages := 0
	for {
		l := listCMs(t, s, k, storage.ListOptions{Predicate: storage.SelectionPredicate{
			Label: mustLabels(t, "pick=true"), Limit: 3, Continue: cont}})
		pages++
		if l.Continue != "" && len(l.Items) != 3 {
			t.Fatalf("page %d has %d items and a continue token; pages must be full", pages, len(l.Items))
		}
		if l.RemainingItemCount != nil {
			t.Fatalf("remainingItemCount set on a selector list")
		}
		got = append(got, cmNames(l)...)
		if l.Continue == "" {
			break
		}
		cont = l.Continue
	}
	want := "cm00,cm05,cm10,cm15,cm20,cm25,cm30,cm35"
	if strings.Join(got, ",") != want {
		t.Fatalf("paged selector list = %v, want %s", got, want)
	}
}

func testBadContinue(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	for _, token := range []string{"not base64!", "e30", // {}
		"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MCwic3RhcnQiOiJhIn0",             // rv 0
		"eyJ2IjoibWV0YS5rOHMuaW8vdjIiLCJydiI6MSwic3RhcnQiOiJhIn0",             // unknown version
		"eyJ2IjoibWV0YS5rOHMuaW8vdjEiLCJydiI6MSwic3RhcnQiOiIuLi9zZWNyZXRzIn0", // ../secrets
	} {
		err := s.GetList(ctxFor(t), nsKey(res, "ns"), storage.ListOptions{Recursive: true,
			Predicate: storage.SelectionPredicate{Limit: 2, Continue: token}}, &corev1.ConfigMapList{})
		if storage.CodeOf(err) != storage.ErrCodeInvalidArgument {
			t.Errorf("continue %q: %v, want ErrCodeInvalidArgument", token, err)
		}
	}
}

func testListAfterCompaction(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := nsKey(res, "ns")
	for i := range 5 {
		name := fmt.Sprintf("cm%d", i)
		mustCreate(t, s, key(res, "ns", name), newCM("ns", name, nil, "0"))
	}
	first := listCMs(t, s, k, storage.ListOptions{Predicate: storage.SelectionPredicate{Limit: 2}})
	oldRV, _ := strconv.ParseInt(first.ResourceVersion, 10, 64)
	mustCreate(t, s, key(res, "ns", "later"), newCM("ns", "later", nil, "0"))
	if err := compact.Compact(ctxFor(t), b.Client, currentRevision(t, b.Client)); err != nil {
		t.Fatal(err)
	}
	err := s.GetList(ctxFor(t), k, storage.ListOptions{Recursive: true, Predicate: storage.Everything(),
		ResourceVersion: strconv.FormatInt(oldRV, 10), ResourceVersionMatch: metav1.ResourceVersionMatchExact}, &corev1.ConfigMapList{})
	wantCode(t, err, storage.ErrCodeExpired)
	var se *storage.Error
	errors.As(err, &se)
	if se.Message != "The resourceVersion for the provided list is too old." {
		t.Errorf("exact list expired message %q", se.Message)
	}
	err = s.GetList(ctxFor(t), k, storage.ListOptions{Recursive: true,
		Predicate: storage.SelectionPredicate{Limit: 2, Continue: first.Continue}}, &corev1.ConfigMapList{})
	wantCode(t, err, storage.ErrCodeExpired)
	errors.As(err, &se)
	const prefix = "The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter"
	if !strings.HasPrefix(se.Message, prefix) {
		t.Errorf("continue expired message %q", se.Message)
	}
	// The error carries a token that continues at the latest revision.
	if se.Continue == "" {
		t.Errorf("expired continue carries no inconsistent continuation token")
	} else {
		token := se.Continue
		l := listCMs(t, s, k, storage.ListOptions{Predicate: storage.SelectionPredicate{Limit: 10, Continue: token}})
		if got := strings.Join(cmNames(l), ","); got != "cm2,cm3,cm4,later" {
			t.Errorf("inconsistent continuation listed %s, want cm2,cm3,cm4,later", got)
		}
	}
}
