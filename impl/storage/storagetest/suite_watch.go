package storagetest

import (
	"context"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/compact"
)

// eventTimeout bounds waiting for an event that must come; it only turns a
// hang into a failure.
const eventTimeout = 20 * time.Second

func startWatch(t *testing.T, s storage.Interface, k string, opts storage.ListOptions) watch.Interface {
	t.Helper()
	opts.Recursive = true
	if opts.Predicate.Label == nil {
		opts.Predicate.Label = labels.Everything()
	}
	if opts.Predicate.Field == nil {
		opts.Predicate.Field = fields.Everything()
	}
	w, err := s.Watch(ctxFor(t), k, opts)
	if err != nil {
		t.Fatalf("watch %s %+v: %v", k, opts, err)
	}
	t.Cleanup(w.Stop)
	return w
}

// nextEvent returns the next event that is not a periodic bookmark.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	timeout := time.After(eventTimeout)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed while an event was expected")
			}
			if e.Type == watch.Bookmark && !isInitialEventsEnd(e.Object) {
				continue
			}
			return e
		case <-timeout:
			t.Fatal("no watch event")
		}
	}
}

// describe renders an event as "TYPE name@rv".
func describe(e watch.Event) string {
	if e.Type == watch.Error {
		return fmt.Sprintf("ERROR %v", e.Object)
	}
	return fmt.Sprintf("%s %s@%d", e.Type, nameOf(e.Object), rvOf(e.Object))
}

func isInitialEventsEnd(obj runtime.Object) bool {
	m, err := meta.Accessor(obj)
	return err == nil && m.GetAnnotations()[metav1.InitialEventsAnnotationKey] == "true"
}

func expectEvents(t *testing.T, w watch.Interface, want ...string) {
	t.Helper()
	for i, wantEv := range want {
		got := describe(nextEvent(t, w))
		if got != wantEv {
			t.Fatalf("event %d = %s, want %s (all wanted: %v)", i, got, wantEv, want)
		}
	}
}

// expectNoEventBefore writes and deletes a marker object and checks that the
// next events are the marker's: no other event was pending. It returns the
// revision of the marker's deletion.
func expectNoEventBefore(t *testing.T, s storage.Interface, res storage.ResourceConfig, w watch.Interface, ns string) int64 {
	t.Helper()
	marker := fmt.Sprintf("marker-%d", time.Now().UnixNano())
	rv := mustCreate(t, s, key(res, ns, marker), newCM(ns, marker, map[string]string{"marker": "true", "pick": "true"}, "m"))
	rvDel := deleteCM(t, s, key(res, ns, marker))
	expectEvents(t, w, fmt.Sprintf("ADDED %s@%d", marker, rv), fmt.Sprintf("DELETED %s@%d", marker, rvDel))
	return rvDel
}

func updateCM(t *testing.T, s storage.Interface, k string, f func(*corev1.ConfigMap)) int64 {
	t.Helper()
	out := &corev1.ConfigMap{}
	err := s.GuaranteedUpdate(ctxFor(t), k, out, false, nil, func(in runtime.Object) (runtime.Object, error) {
		cm := in.(*corev1.ConfigMap)
		f(cm)
		return cm, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rvOf(out)
}

func deleteCM(t *testing.T, s storage.Interface, k string) int64 {
	t.Helper()
	out := &corev1.ConfigMap{}
	if err := s.Delete(ctxFor(t), k, out, nil, nil); err != nil {
		t.Fatal(err)
	}
	return rvOf(out)
}

func testWatchFromRV(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := nsKey(res, "ns")
	mustCreate(t, s, key(res, "ns", "a"), newCM("ns", "a", nil, "0"))
	rvB := mustCreate(t, s, key(res, "ns", "b"), newCM("ns", "b", nil, "0"))
	// History after rvB, with some writes outside the watched prefix.
	rvA := updateCM(t, s, key(res, "ns", "a"), func(c *corev1.ConfigMap) { c.Data["v"] = "1" })
	mustCreate(t, s, key(res, "other", "x"), newCM("other", "x", nil, "0"))
	rvDel := deleteCM(t, s, key(res, "ns", "b"))
	rvC := mustCreate(t, s, key(res, "ns", "c"), newCM("ns", "c", nil, "0"))

	w := startWatch(t, s, k, storage.ListOptions{ResourceVersion: strconv.FormatInt(rvB, 10)})
	expectEvents(t, w,
		fmt.Sprintf("MODIFIED a@%d", rvA),
		fmt.Sprintf("DELETED b@%d", rvDel),
		fmt.Sprintf("ADDED c@%d", rvC))
	rvLive := updateCM(t, s, key(res, "ns", "c"), func(c *corev1.ConfigMap) { c.Data["v"] = "live" })
	e := nextEvent(t, w)
	if describe(e) != fmt.Sprintf("MODIFIED c@%d", rvLive) || e.Object.(*corev1.ConfigMap).Data["v"] != "live" {
		t.Fatalf("live event %s %v", describe(e), e.Object)
	}
	rvLast := expectNoEventBefore(t, s, res, w, "ns")

	// A watch from the last revision sees nothing old.
	w2 := startWatch(t, s, k, storage.ListOptions{ResourceVersion: strconv.FormatInt(rvLast, 10)})
	rvD := mustCreate(t, s, key(res, "ns", "d"), newCM("ns", "d", nil, "0"))
	expectEvents(t, w2, fmt.Sprintf("ADDED d@%d", rvD))

	// The DELETED object is the last state.
	w3 := startWatch(t, s, k, storage.ListOptions{ResourceVersion: strconv.FormatInt(rvD, 10)})
	rvDel2 := deleteCM(t, s, key(res, "ns", "c"))
	e = nextEvent(t, w3)
	if describe(e) != fmt.Sprintf("DELETED c@%d", rvDel2) || e.Object.(*corev1.ConfigMap).Data["v"] != "live" {
		t.Fatalf("delete event %s %v", describe(e), e.Object)
	}
}

func testWatchSelectorTransitions(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := nsKey(res, "ns")
	rv0 := mustCreate(t, s, key(res, "ns", "a"), newCM("ns", "a", map[string]string{"pick": "false"}, "0"))
	pred := storage.SelectionPredicate{Label: mustLabels(t, "pick=true")}
	w := startWatch(t, s, k, storage.ListOptions{ResourceVersion: strconv.FormatInt(rv0, 10), Predicate: pred})

	setPick := func(v string) int64 {
		return updateCM(t, s, key(res, "ns", "a"), func(c *corev1.ConfigMap) { c.Labels["pick"] = v })
	}
	rvIn := setPick("true")
	rvMod := updateCM(t, s, key(res, "ns", "a"), func(c *corev1.ConfigMap) { c.Data["v"] = "1" })
	rvOut := setPick("false")
	updateCM(t, s, key(res, "ns", "a"), func(c *corev1.ConfigMap) { c.Data["v"] = "2" }) // invisible
	rvIn2 := setPick("true")
	rvDel := deleteCM(t, s, key(res, "ns", "a"))
	expectEvents(t, w,
		fmt.Sprintf("ADDED a@%d", rvIn),
		fmt.Sprintf("MODIFIED a@%d", rvMod),
		fmt.Sprintf("DELETED a@%d", rvOut),
		fmt.Sprintf("ADDED a@%d", rvIn2),
		fmt.Sprintf("DELETED a@%d", rvDel))
	expectNoEventBefore(t, s, res, w, "ns")

	// Pods by spec.nodeName (the kubelet's watch).
	pres := Pods()
	ps := newStore(t, b, pres)
	pw := startWatch(t, ps, pres.ResourcePrefix, storage.ListOptions{ResourceVersion: strconv.FormatInt(currentRevision(t, b.Client), 10),
		Predicate: storage.SelectionPredicate{Field: fields.OneTermEqualSelector("spec.nodeName", "node1"), GetAttrs: PodAttrs}})
	mustCreate(t, ps, key(pres, "ns", "p0"), newPod("ns", "p0", ""))
	rvBind := func() int64 {
		out := &corev1.Pod{}
		err := ps.GuaranteedUpdate(ctxFor(t), key(pres, "ns", "p0"), out, false, nil, func(in runtime.Object) (runtime.Object, error) {
			p := in.(*corev1.Pod)
			p.Spec.NodeName = "node1"
			return p, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return rvOf(out)
	}()
	rvOther := mustCreate(t, ps, key(pres, "ns", "p1"), newPod("ns", "p1", "node2"))
	rvP2 := mustCreate(t, ps, key(pres, "ns", "p2"), newPod("ns", "p2", "node1"))
	expectEvents(t, pw, fmt.Sprintf("ADDED p0@%d", rvBind), fmt.Sprintf("ADDED p2@%d", rvP2))
	_ = rvOther
}

func testWatchInitialEvents(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := nsKey(res, "ns")
	rvA := mustCreate(t, s, key(res, "ns", "a"), newCM("ns", "a", map[string]string{"pick": "true"}, "0"))
	rvB := mustCreate(t, s, key(res, "ns", "b"), newCM("ns", "b", map[string]string{"pick": "true"}, "0"))
	mustCreate(t, s, key(res, "ns", "c"), newCM("ns", "c", map[string]string{"pick": "false"}, "0"))
	for _, rv := range []string{"", "0"} {
		t.Run("rv="+rv, func(t *testing.T) {
			pred := storage.SelectionPredicate{Label: mustLabels(t, "pick=true")}
			w := startWatch(t, s, k, storage.ListOptions{ResourceVersion: rv, Predicate: pred})
			got := []string{describe(nextEvent(t, w)), describe(nextEvent(t, w))}
			want := []string{fmt.Sprintf("ADDED a@%d", rvA), fmt.Sprintf("ADDED b@%d", rvB)}
			if strings.Join(got, ";") != strings.Join(want, ";") {
				t.Fatalf("initial events %v, want %v", got, want)
			}
			expectNoEventBefore(t, s, res, w, "ns")
		})
	}
	// sendInitialEvents=false: from now, without the current state.
	f := false
	w := startWatch(t, s, k, storage.ListOptions{ResourceVersion: "", SendInitialEvents: &f,
		Predicate: storage.SelectionPredicate{Label: mustLabels(t, "pick=true")}})
	expectNoEventBefore(t, s, res, w, "ns")
}

func testWatchSendInitialEvents(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := nsKey(res, "ns")
	rvA := mustCreate(t, s, key(res, "ns", "a"), newCM("ns", "a", nil, "0"))
	rvB := mustCreate(t, s, key(res, "ns", "b"), newCM("ns", "b", nil, "0"))
	tr := true
	// The initial state is not older than rvB, so it holds both objects.
	w := startWatch(t, s, k, storage.ListOptions{ResourceVersion: strconv.FormatInt(rvB, 10),
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, SendInitialEvents: &tr,
		Predicate: storage.SelectionPredicate{AllowWatchBookmarks: true}})
	expectEvents(t, w, fmt.Sprintf("ADDED a@%d", rvA), fmt.Sprintf("ADDED b@%d", rvB))
	end := nextEvent(t, w)
	if end.Type != watch.Bookmark || !isInitialEventsEnd(end.Object) {
		t.Fatalf("after the initial events got %s, want the initial-events-end BOOKMARK", describe(end))
	}
	if rvOf(end.Object) < rvB {
		t.Fatalf("initial-events-end bookmark at %d, before the last initial object %d", rvOf(end.Object), rvB)
	}
	rvC := mustCreate(t, s, key(res, "ns", "c"), newCM("ns", "c", nil, "0"))
	expectEvents(t, w, fmt.Sprintf("ADDED c@%d", rvC))
}

func testWatchBookmarks(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	k := nsKey(res, "ns")
	rv := mustCreate(t, s, key(res, "ns", "a"), newCM("ns", "a", nil, "0"))
	w := startWatch(t, s, k, storage.ListOptions{ResourceVersion: strconv.FormatInt(rv, 10),
		Predicate: storage.SelectionPredicate{AllowWatchBookmarks: true}})
	rvB := mustCreate(t, s, key(res, "ns", "b"), newCM("ns", "b", nil, "0"))
	// Writes elsewhere move the revision on; a bookmark reports progress
	// past them without any event of this watch.
	mustCreate(t, s, key(res, "other", "x"), newCM("other", "x", nil, "0"))
	last := currentRevision(t, b.Client)
	sawB := false
	timeout := time.After(eventTimeout)
	for {
		select {
		case e, ok := <-w.ResultChan():
			if !ok {
				t.Fatal("watch closed")
			}
			switch e.Type {
			case watch.Added:
				if describe(e) != fmt.Sprintf("ADDED b@%d", rvB) || sawB {
					t.Fatalf("unexpected %s", describe(e))
				}
				sawB = true
			case watch.Bookmark:
				brv := rvOf(e.Object)
				if !sawB && brv >= rvB {
					t.Fatalf("bookmark at %d before the event at %d", brv, rvB)
				}
				if sawB && brv >= last {
					return
				}
			default:
				t.Fatalf("unexpected %s", describe(e))
			}
		case <-timeout:
			t.Fatalf("no bookmark at or after revision %d", last)
		}
	}
}

func testWatchCompacted(t *testing.T, b Backend) {
	res := ConfigMaps()
	k := nsKey(res, "ns")
	// History written and compacted before the store under test existed:
	// neither etcd nor a watch cache can serve a watch from it.
	{
		s0 := newStore(t, b, res)
		mustCreate(t, s0, key(res, "ns", "a"), newCM("ns", "a", nil, "0"))
	}
	resp, err := b.Client.Get(ctxFor(t), "kubeproof-storagetest-probe", clientv3.WithCountOnly())
	if err != nil {
		t.Fatal(err)
	}
	rv := resp.Header.Revision
	s := newStore(t, b, res)
	for i := range 3 {
		updateCM(t, s, key(res, "ns", "a"), func(c *corev1.ConfigMap) { c.Data["v"] = strconv.Itoa(i) })
	}
	if err := compact.Compact(ctxFor(t), b.Client, currentRevision(t, b.Client)); err != nil {
		t.Fatal(err)
	}
	// A store from before the compaction may still have the history in
	// memory (a watch cache does); a store started after it must refuse.
	fresh := newStore(t, b, res)
	{
		w, err := fresh.Watch(ctxFor(t), k, storage.ListOptions{Recursive: true, ResourceVersion: strconv.FormatInt(rv, 10),
			Predicate: storage.Everything()})
		if err != nil {
			wantCode(t, err, storage.ErrCodeExpired)
			return
		}
		e := nextEvent(t, w)
		status, ok := e.Object.(*metav1.Status)
		if e.Type != watch.Error || !ok {
			t.Fatalf("watch from compacted %d: %s, want an ERROR event", rv, describe(e))
		}
		if status.Code != http.StatusGone || status.Reason != metav1.StatusReasonExpired {
			t.Fatalf("error status %+v, want 410 Expired", status)
		}
		select {
		case _, ok := <-w.ResultChan():
			if ok {
				t.Fatal("event after the ERROR")
			}
		case <-time.After(eventTimeout):
			t.Fatal("watch not closed after the ERROR event")
		}
		w.Stop()
	}
}

func testWatchStop(t *testing.T, b Backend) {
	res := ConfigMaps()
	s := newStore(t, b, res)
	ctx, cancel := context.WithCancel(context.Background())
	w, err := s.Watch(ctx, nsKey(res, "ns"), storage.ListOptions{Recursive: true, Predicate: storage.Everything()})
	if err != nil {
		t.Fatal(err)
	}
	cancel() // ending the context ends the watch
	for range w.ResultChan() {
	}
	w.Stop()
	w2, err := s.Watch(context.Background(), nsKey(res, "ns"), storage.ListOptions{Recursive: true, Predicate: storage.Everything()})
	if err != nil {
		t.Fatal(err)
	}
	w2.Stop()
	w2.Stop()
	for range w2.ResultChan() {
	}
}
