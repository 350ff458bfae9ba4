package clientgo

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestSemantics runs the API semantics clients rely on through client-go,
// once with the watch cache and once straight from etcd. Subtests share a
// cluster per mode and run in order (the compaction ones last).
func TestSemantics(t *testing.T) {
	for _, mode := range cacheModes {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			c, _ := clustertest.Start(t, clustertest.Options{NoWatchCache: !mode.watchCache})
			cs := fastClient(t, c)
			for _, tc := range []struct {
				name string
				test func(t *testing.T, c *cluster.Cluster, cs kubernetes.Interface, ns string)
			}{
				{"ListResourceVersion", testListResourceVersion},
				{"WatchFromResourceVersion", testWatchFromResourceVersion},
				{"WatchSelectorTransitions", testWatchSelectorTransitions},
				{"Bookmarks", testBookmarks},
				{"BookmarkBeforeTimeout", func(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
					if !mode.watchCache {
						t.Skip("without the watch cache upstream sends no bookmark before a watch's timeout either")
					}
					testBookmarkBeforeTimeout(t, cs, ns)
				}},
				{"WatchList", testWatchList},
				{"ConflictAndAlreadyExists", testConflict},
				{"InvalidCauses", testInvalidCauses},
				{"PaginationConsistency", testPagination},
				{"PaginationWithSelector", testPaginationWithSelector},
				{"WatchUnderConcurrentWrites", testWatchUnderConcurrentWrites},
				{"ReadYourWrites", testReadYourWrites},
				{"CompactedResourceVersions", testCompacted},
			} {
				t.Run(tc.name, func(t *testing.T) {
					ns := strings.ToLower(tc.name)
					if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
						t.Fatal(err)
					}
					tc.test(t, c, cs, ns)
				})
			}
		})
	}
}

func configMap(name string, labels map[string]string, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Data: map[string]string{"v": data}}
}

func mustCreate(t *testing.T, cs kubernetes.Interface, ns string, cm *corev1.ConfigMap) *corev1.ConfigMap {
	t.Helper()
	out, err := cs.CoreV1().ConfigMaps(ns).Create(context.Background(), cm, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("creating configmap %s: %v", cm.Name, err)
	}
	return out
}

func mustPatch(t *testing.T, cs kubernetes.Interface, ns, name, patch string) *corev1.ConfigMap {
	t.Helper()
	out, err := cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
	if err != nil {
		t.Fatalf("patching configmap %s with %s: %v", name, patch, err)
	}
	return out
}

func mustDelete(t *testing.T, cs kubernetes.Interface, ns, name string) {
	t.Helper()
	if err := cs.CoreV1().ConfigMaps(ns).Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting configmap %s: %v", name, err)
	}
}

// nextEvent is the next event of w, failing after a generous timeout.
func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(30 * time.Second):
		t.Fatal("no watch event within 30s")
	}
	return watch.Event{}
}

// nextNonBookmark skips bookmarks.
func nextNonBookmark(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	for {
		if ev := nextEvent(t, w); ev.Type != watch.Bookmark {
			return ev
		}
	}
}

// describe is "TYPE name rv" of a watch event.
func describe(t *testing.T, ev watch.Event) string {
	t.Helper()
	m, err := meta.Accessor(ev.Object)
	if err != nil {
		t.Fatalf("watch event %s of %T: %v", ev.Type, ev.Object, err)
	}
	return fmt.Sprintf("%s %s %s", ev.Type, m.GetName(), m.GetResourceVersion())
}

func snapshot(items []corev1.ConfigMap) map[string]string {
	m := map[string]string{}
	for _, cm := range items {
		m[cm.Name] = cm.ResourceVersion + "/" + cm.Data["v"]
	}
	return m
}

// testListResourceVersion: "" is the latest state at the current
// revision; "0" is any state, possibly older but never newer than its list
// resourceVersion; an exact resourceVersion is the state at that revision.
func testListResourceVersion(t *testing.T, c *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	a := mustCreate(t, cs, ns, configMap("a", nil, "1"))
	mustCreate(t, cs, ns, configMap("b", nil, "1"))
	before := mustPatch(t, cs, ns, "a", `{"data":{"v":"2"}}`)
	after := mustPatch(t, cs, ns, "a", `{"data":{"v":"3"}}`)
	mustDelete(t, cs, ns, "b")

	latest, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := snapshot(latest.Items); fmt.Sprint(got) != fmt.Sprint(map[string]string{"a": after.ResourceVersion + "/3"}) {
		t.Errorf("list rv=\"\": %v", got)
	}
	rev, err := c.EtcdClient.Get(ctx, "/e2e-revision-probe")
	if err != nil {
		t.Fatal(err)
	}
	if listRV := rvInt(t, latest.ResourceVersion); listRV < rvInt(t, after.ResourceVersion) || listRV > rev.Header.Revision {
		t.Errorf("list rv=\"\" at resourceVersion %d, want between the last write %s and etcd's revision %d", listRV, after.ResourceVersion, rev.Header.Revision)
	}

	eventually(t, 10*time.Second, "list rv=0 catches up", func() (bool, string) {
		any, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: "0"})
		if err != nil {
			return false, err.Error()
		}
		for _, cm := range any.Items {
			if rvInt(t, cm.ResourceVersion) > rvInt(t, any.ResourceVersion) {
				t.Fatalf("list rv=0: item %s at %s newer than the list's %s", cm.Name, cm.ResourceVersion, any.ResourceVersion)
			}
		}
		got := snapshot(any.Items)
		return fmt.Sprint(got) == fmt.Sprint(snapshot(latest.Items)), fmt.Sprint(got)
	})

	exact, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: before.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatalf("list exact rv=%s: %v", before.ResourceVersion, err)
	}
	if exact.ResourceVersion != before.ResourceVersion {
		t.Errorf("exact list resourceVersion %s, want %s", exact.ResourceVersion, before.ResourceVersion)
	}
	if got, want := snapshot(exact.Items), map[string]string{"a": before.ResourceVersion + "/2", "b": "?"}; got["a"] != want["a"] || len(got) != 2 {
		t.Errorf("exact list at %s: %v, want a at step 2 and b", before.ResourceVersion, got)
	}
	atCreate, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: a.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil {
		t.Fatal(err)
	}
	if got := snapshot(atCreate.Items); fmt.Sprint(got) != fmt.Sprint(map[string]string{"a": a.ResourceVersion + "/1"}) {
		t.Errorf("exact list at a's creation %s: %v", a.ResourceVersion, got)
	}
	// NotOlderThan an old revision is at least that fresh.
	nto, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: a.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	if rvInt(t, nto.ResourceVersion) < rvInt(t, a.ResourceVersion) {
		t.Errorf("list NotOlderThan %s answered at %s", a.ResourceVersion, nto.ResourceVersion)
	}
	// A get at an exact-or-newer resourceVersion of an object.
	got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "a", metav1.GetOptions{ResourceVersion: "0"})
	if err != nil || rvInt(t, got.ResourceVersion) < rvInt(t, a.ResourceVersion) {
		t.Errorf("get rv=0: %v %v", got.ResourceVersion, err)
	}
	// Malformed resourceVersions are a 400, not a 5xx.
	_, err = cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: "abc"})
	if !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) {
		t.Errorf("list rv=abc: %v, want BadRequest or Invalid", err)
	}
}

// testWatchFromResourceVersion: a watch from R delivers exactly the events
// after R, in order, and nothing more.
func testWatchFromResourceVersion(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	start := mustCreate(t, cs, ns, configMap("a", nil, "1"))
	var want []string
	m := mustPatch(t, cs, ns, "a", `{"data":{"v":"2"}}`)
	want = append(want, "MODIFIED a "+m.ResourceVersion)
	b := mustCreate(t, cs, ns, configMap("b", nil, "1"))
	want = append(want, "ADDED b "+b.ResourceVersion)
	mustDelete(t, cs, ns, "a")
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleteRV := list.ResourceVersion // the delete's revision: nothing was written after it

	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for _, want := range want {
		if got := describe(t, nextNonBookmark(t, w)); got != want {
			t.Errorf("watch from %s: got %q, want %q", start.ResourceVersion, got, want)
		}
	}
	ev := nextNonBookmark(t, w)
	if got := describe(t, ev); got != "DELETED a "+deleteRV {
		t.Errorf("watch from %s: got %q, want the delete at %s", start.ResourceVersion, got, deleteRV)
	}
	// A sentinel write shows nothing came in between.
	s := mustCreate(t, cs, ns, configMap("sentinel", nil, "1"))
	if got := describe(t, nextNonBookmark(t, w)); got != "ADDED sentinel "+s.ResourceVersion {
		t.Errorf("watch: got %q, want the sentinel", got)
	}

	// From the delete's revision: only the sentinel.
	w2, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: deleteRV})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	if got := describe(t, nextNonBookmark(t, w2)); got != "ADDED sentinel "+s.ResourceVersion {
		t.Errorf("watch from %s: got %q, want only the sentinel", deleteRV, got)
	}
	// A single object watch (fieldSelector metadata.name) from start.
	w3, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion, FieldSelector: "metadata.name=b"})
	if err != nil {
		t.Fatal(err)
	}
	defer w3.Stop()
	if got := describe(t, nextNonBookmark(t, w3)); got != "ADDED b "+b.ResourceVersion {
		t.Errorf("watch metadata.name=b: got %q", got)
	}
	mustPatch(t, cs, ns, "sentinel", `{"data":{"v":"2"}}`)
	bb := mustPatch(t, cs, ns, "b", `{"data":{"v":"2"}}`)
	if got := describe(t, nextNonBookmark(t, w3)); got != "MODIFIED b "+bb.ResourceVersion {
		t.Errorf("watch metadata.name=b: got %q, want b's update (and not the sentinel's)", got)
	}
}

// testWatchSelectorTransitions: an object entering a watcher's label
// selector is ADDED for it, leaving it is DELETED.
func testWatchSelectorTransitions(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	out := mustCreate(t, cs, ns, configMap("obj", map[string]string{"app": "other"}, "1"))
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: out.ResourceVersion, LabelSelector: "app=web"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var want []string
	mustPatch(t, cs, ns, "obj", `{"data":{"v":"2"}}`) // outside: nothing
	in := mustPatch(t, cs, ns, "obj", `{"metadata":{"labels":{"app":"web"}}}`)
	want = append(want, "ADDED obj "+in.ResourceVersion)
	mod := mustPatch(t, cs, ns, "obj", `{"data":{"v":"3"}}`)
	want = append(want, "MODIFIED obj "+mod.ResourceVersion)
	left := mustPatch(t, cs, ns, "obj", `{"metadata":{"labels":{"app":"db"}}}`)
	want = append(want, "DELETED obj "+left.ResourceVersion)
	mustPatch(t, cs, ns, "obj", `{"data":{"v":"4"}}`) // outside again: nothing
	back := mustPatch(t, cs, ns, "obj", `{"metadata":{"labels":{"app":"web"}}}`)
	want = append(want, "ADDED obj "+back.ResourceVersion)
	s := mustCreate(t, cs, ns, configMap("sentinel", map[string]string{"app": "web"}, "1"))
	want = append(want, "ADDED sentinel "+s.ResourceVersion)
	for _, want := range want {
		ev := nextNonBookmark(t, w)
		if got := describe(t, ev); got != want {
			t.Errorf("label-selector watch: got %q, want %q", got, want)
		}
		if ev.Type == watch.Deleted {
			// The DELETED of a transition carries the object's last state
			// inside the selector at the transition's resourceVersion, as
			// upstream (etcd3 watcher and cacher alike).
			if l := ev.Object.(*corev1.ConfigMap).Labels["app"]; l != "web" {
				t.Errorf("DELETED on leaving the selector carries app=%q, want the last state inside it, app=web", l)
			}
		}
	}
}

// testBookmarks: bookmarks carry only a resourceVersion that never goes
// back; a watch-list ends its initial events with one (testWatchList).
func testBookmarks(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	watchWithBookmarks(t, cs, ns)
}

// testBookmarkBeforeTimeout: upstream's watch cache sends a bookmark 2 s
// before a watch's timeout, so a 4 s watch gets one about 2 s in.
func testBookmarkBeforeTimeout(t *testing.T, cs kubernetes.Interface, ns string) {
	if n := watchWithBookmarks(t, cs, ns); n == 0 {
		t.Error("a 4 s watch with allowWatchBookmarks got no bookmark")
	}
}

// watchWithBookmarks watches a configmap for 4 s with bookmarks and checks
// every event; it returns how many bookmarks came.
func watchWithBookmarks(t *testing.T, cs kubernetes.Interface, ns string) int {
	ctx := context.Background()
	name := fmt.Sprintf("bm-%d", time.Now().UnixNano())
	cm := mustCreate(t, cs, ns, configMap(name, nil, "1"))
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: cm.ResourceVersion, AllowWatchBookmarks: true, TimeoutSeconds: ptr.To[int64](4), FieldSelector: "metadata.name=" + name})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	m := mustPatch(t, cs, ns, name, `{"data":{"v":"2"}}`)
	last := rvInt(t, cm.ResourceVersion)
	bookmarks, modified := 0, false
	for ev := range w.ResultChan() {
		obj, ok := ev.Object.(*corev1.ConfigMap)
		if !ok {
			t.Fatalf("watch event %s of %T", ev.Type, ev.Object)
		}
		rv := rvInt(t, obj.ResourceVersion)
		if rv < last {
			t.Errorf("%s at %d after %d: resourceVersion went back", ev.Type, rv, last)
		}
		last = rv
		switch ev.Type {
		case watch.Bookmark:
			bookmarks++
			if obj.Name != "" || obj.Data != nil {
				t.Errorf("bookmark carries more than a resourceVersion: %+v", obj)
			}
		case watch.Modified:
			modified = obj.ResourceVersion == m.ResourceVersion
		default:
			t.Errorf("unexpected %s", describe(t, ev))
		}
	}
	if !modified {
		t.Error("the update was not delivered")
	}
	return bookmarks
}

// testWatchList: sendInitialEvents=true streams the current objects as
// ADDED, then a BOOKMARK annotated k8s.io/initial-events-end, then changes.
func testWatchList(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	want := map[string]string{}
	for i := range 5 {
		cm := mustCreate(t, cs, ns, configMap(fmt.Sprintf("cm-%d", i), nil, "1"))
		want[cm.Name] = cm.ResourceVersion
	}
	mustDelete(t, cs, ns, "cm-4")
	delete(want, "cm-4")
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{
		SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	got := map[string]string{}
	var endRV int64
	for endRV == 0 {
		ev := nextEvent(t, w)
		obj := ev.Object.(*corev1.ConfigMap)
		switch ev.Type {
		case watch.Added:
			got[obj.Name] = obj.ResourceVersion
		case watch.Bookmark:
			if obj.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
				endRV = rvInt(t, obj.ResourceVersion)
			}
		default:
			t.Fatalf("before the initial-events-end bookmark: %s", describe(t, ev))
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("initial events %v, want %v", got, want)
	}
	for name, rv := range got {
		if rvInt(t, rv) > endRV {
			t.Errorf("%s at %s is newer than the initial-events-end bookmark %d", name, rv, endRV)
		}
	}
	m := mustPatch(t, cs, ns, "cm-0", `{"data":{"v":"2"}}`)
	if got := describe(t, nextNonBookmark(t, w)); got != "MODIFIED cm-0 "+m.ResourceVersion {
		t.Errorf("after the initial events: %q", got)
	}
	// sendInitialEvents needs resourceVersionMatch=NotOlderThan.
	_, err = cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{SendInitialEvents: ptr.To(true), AllowWatchBookmarks: true})
	if !apierrors.IsBadRequest(err) && !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "sendInitialEvents requires setting resourceVersionMatch to NotOlderThan") {
		t.Errorf("sendInitialEvents without resourceVersionMatch: %v, want a 4xx naming the rule", err)
	}
}

// testConflict: the errors of concurrent writers, as Kubernetes words them.
func testConflict(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	stale := mustCreate(t, cs, ns, configMap("a", nil, "1"))
	mustPatch(t, cs, ns, "a", `{"data":{"v":"2"}}`)
	stale.Data["v"] = "3"
	_, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, stale, metav1.UpdateOptions{})
	checkStatus(t, err, 409, metav1.StatusReasonConflict,
		`Operation cannot be fulfilled on configmaps "a": the object has been modified; please apply your changes to the latest version and try again`, "configmaps", "a")

	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap("a", nil, "1"), metav1.CreateOptions{})
	checkStatus(t, err, 409, metav1.StatusReasonAlreadyExists, `configmaps "a" already exists`, "configmaps", "a")

	_, err = cs.CoreV1().ConfigMaps(ns).Get(ctx, "nope", metav1.GetOptions{})
	checkStatus(t, err, 404, metav1.StatusReasonNotFound, `configmaps "nope" not found`, "configmaps", "nope")

	err = cs.CoreV1().ConfigMaps(ns).Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: ptr.To(types.UID("not-the-uid"))}})
	checkStatus(t, err, 409, metav1.StatusReasonConflict,
		fmt.Sprintf(`Operation cannot be fulfilled on ConfigMap "a": the UID in the precondition (not-the-uid) does not match the UID in record (%s). The object might have been deleted and then recreated`, stale.UID), "ConfigMap", "a")
	err = cs.CoreV1().ConfigMaps(ns).Delete(ctx, "a", metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: ptr.To(stale.ResourceVersion)}})
	if !apierrors.IsConflict(err) {
		t.Errorf("delete with a stale resourceVersion precondition: %v, want Conflict", err)
	}

	// Many writers, each retrying on Conflict: no increment is lost.
	const writers, each = 4, 5
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range each {
				for {
					cur, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "a", metav1.GetOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					n, _ := strconv.Atoi(cur.Data["n"])
					cur.Data["n"] = strconv.Itoa(n + 1)
					_, err = cs.CoreV1().ConfigMaps(ns).Update(ctx, cur, metav1.UpdateOptions{})
					if err == nil {
						break
					}
					if !apierrors.IsConflict(err) {
						t.Error(err)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	cur, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "a", metav1.GetOptions{})
	if err != nil || cur.Data["n"] != strconv.Itoa(writers*each) {
		t.Errorf("after %d conflicting increments: n=%q (%v)", writers*each, cur.Data["n"], err)
	}
}

// checkStatus checks an API error's code, reason, message and details.
func checkStatus(t *testing.T, err error, code int32, reason metav1.StatusReason, message, kind, name string) {
	t.Helper()
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		t.Errorf("got %v, want a %d %s Status", err, code, reason)
		return
	}
	s := se.Status()
	if s.Code != code || s.Reason != reason || s.Message != message {
		t.Errorf("got Status %d %s %q, want %d %s %q", s.Code, s.Reason, s.Message, code, reason, message)
	}
	if s.Details == nil || s.Details.Kind != kind || s.Details.Name != name {
		t.Errorf("Status details %+v, want kind %s name %s", s.Details, kind, name)
	}
}

// testInvalidCauses: a 422 names every invalid field as a cause.
func testInvalidCauses(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"bad key!": "x"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To[int32](-1),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c"}}},
			},
		},
	}
	_, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{})
	var se apierrors.APIStatus
	if !errors.As(err, &se) {
		t.Fatalf("invalid deployment: %v, want a 422", err)
	}
	s := se.Status()
	if s.Code != 422 || s.Reason != metav1.StatusReasonInvalid || !strings.HasPrefix(s.Message, `Deployment.apps "web" is invalid: [`) {
		t.Errorf("invalid deployment: %d %s %q", s.Code, s.Reason, s.Message)
	}
	if s.Details == nil || s.Details.Group != "apps" || s.Details.Kind != "Deployment" || s.Details.Name != "web" {
		t.Fatalf("details %+v, want group apps kind Deployment name web", s.Details)
	}
	var causes []string
	for _, c := range s.Details.Causes {
		causes = append(causes, string(c.Type)+" "+c.Field)
	}
	for _, want := range []string{
		"FieldValueInvalid metadata.labels",
		"FieldValueInvalid spec.replicas",
		"FieldValueRequired spec.template.spec.containers[0].image",
	} {
		if !slices.Contains(causes, want) {
			t.Errorf("causes %q lack %q", causes, want)
		}
	}
	// Immutable selector on update.
	d = &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "ok"},
		Spec: appsv1.DeploymentSpec{
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "ok"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "ok", "v": "1"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}}},
			},
		},
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, d, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	_, err = cs.AppsV1().Deployments(ns).Patch(ctx, "ok", types.MergePatchType, []byte(`{"spec":{"selector":{"matchLabels":{"v":"1"}}}}`), metav1.PatchOptions{})
	if !errors.As(err, &se) || se.Status().Code != 422 || !strings.Contains(se.Status().Message, "spec.selector: Invalid value") || !strings.Contains(se.Status().Message, "field is immutable") {
		t.Errorf("changing a deployment's selector: %v, want 422 spec.selector ... field is immutable", err)
	}
}

// testPagination: pages of a list read while others write are one
// consistent snapshot: together exactly the exact-revision list at the
// first page's resourceVersion.
func testPagination(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	for i := range 40 {
		mustCreate(t, cs, ns, configMap(fmt.Sprintf("cm-%02d", i), nil, "0"))
	}
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for wid := range 3 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for n := 0; ; n++ {
				select {
				case <-stop:
					return
				default:
				}
				name := fmt.Sprintf("cm-%02d", (n*7+wid*13)%40)
				switch n % 3 {
				case 0:
					_, _ = cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, []byte(fmt.Sprintf(`{"data":{"v":"%d-%d"}}`, wid, n)), metav1.PatchOptions{})
				case 1:
					_ = cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{})
				case 2:
					_, _ = cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(name, nil, "new"), metav1.CreateOptions{})
				}
			}
		}()
	}
	defer func() {
		close(stop)
		wg.Wait()
	}()
	moved := 0 // rounds during which the writers wrote
	for round := range 3 {
		var items []corev1.ConfigMap
		opts := metav1.ListOptions{Limit: 7}
		var snapshotRV string
		pages := 0
		for {
			page, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
			if err != nil {
				t.Fatalf("round %d page %d: %v", round, pages, err)
			}
			pages++
			if snapshotRV == "" {
				snapshotRV = page.ResourceVersion
			} else if page.ResourceVersion != snapshotRV {
				t.Errorf("page %d at resourceVersion %s, the first at %s", pages, page.ResourceVersion, snapshotRV)
			}
			if len(page.Items) > 7 {
				t.Errorf("page of %d items with limit 7", len(page.Items))
			}
			items = append(items, page.Items...)
			if page.Continue == "" {
				if page.RemainingItemCount != nil && *page.RemainingItemCount != 0 {
					t.Errorf("last page remainingItemCount %d", *page.RemainingItemCount)
				}
				break
			}
			opts.Continue = page.Continue
			time.Sleep(5 * time.Millisecond) // let the writers move on between pages
		}
		names := make([]string, len(items))
		for i, it := range items {
			names[i] = it.Name
		}
		if !sort.StringsAreSorted(names) || len(slices.Compact(slices.Clone(names))) != len(names) {
			t.Errorf("paged names not sorted and unique: %v", names)
		}
		now, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 1})
		if err != nil {
			t.Fatal(err)
		}
		if rvInt(t, now.ResourceVersion) > rvInt(t, snapshotRV) {
			moved++
		}
		exact, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: snapshotRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
		if err != nil {
			t.Fatal(err)
		}
		if got, want := snapshot(items), snapshot(exact.Items); fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("round %d: %d pages at %s are not the snapshot at %s:\npages: %v\nexact: %v", round, pages, snapshotRV, snapshotRV, got, want)
		}
	}
	if moved == 0 {
		t.Error("the writers wrote nothing while the pages were read: the test proved nothing")
	}
}

// testCompacted: after compaction, an exact list at, a watch from and a
// continue token of a compacted revision are 410 Expired.
func testCompacted(t *testing.T, c *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	old := mustCreate(t, cs, ns, configMap("a", nil, "1"))
	var next *corev1.ConfigMap // the first write after old
	for i := range 5 {
		b := mustCreate(t, cs, ns, configMap(fmt.Sprintf("b-%d", i), nil, "1"))
		if next == nil {
			next = b
		}
	}
	first, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 2})
	if err != nil || first.Continue == "" {
		t.Fatalf("first page: %v (continue %q)", err, first.Continue)
	}
	latest := mustPatch(t, cs, ns, "a", `{"data":{"v":"2"}}`)
	if _, err := c.EtcdClient.Compact(ctx, rvInt(t, latest.ResourceVersion)); err != nil {
		t.Fatal(err)
	}

	_, err = cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{ResourceVersion: old.ResourceVersion, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
		t.Errorf("exact list at compacted %s: %v, want 410 Expired", old.ResourceVersion, err)
	} else if code := err.(apierrors.APIStatus).Status().Code; code != 410 {
		t.Errorf("exact list at compacted revision: code %d", code)
	}

	_, err = cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 2, Continue: first.Continue})
	if !apierrors.IsResourceExpired(err) {
		t.Errorf("continue from a compacted revision: %v, want 410 Expired", err)
	} else if s := err.(apierrors.APIStatus).Status(); s.Code != 410 || !strings.Contains(s.Message, "continue") {
		t.Errorf("expired continue: %d %q", s.Code, s.Message)
	}

	// A watch from before the compaction: 410 (from the watch cache the
	// window may still hold it, as upstream; then it must replay exactly).
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: old.ResourceVersion})
	if err != nil {
		if !apierrors.IsResourceExpired(err) && !apierrors.IsGone(err) {
			t.Fatalf("watch from compacted %s: %v", old.ResourceVersion, err)
		}
		return
	}
	defer w.Stop()
	ev := nextNonBookmark(t, w)
	if ev.Type == watch.Error {
		if s, ok := ev.Object.(*metav1.Status); !ok || s.Code != 410 || s.Reason != metav1.StatusReasonExpired {
			t.Errorf("watch from compacted %s: error event %+v, want 410 Expired", old.ResourceVersion, ev.Object)
		}
		return
	}
	if got := describe(t, ev); got != "ADDED b-0 "+next.ResourceVersion {
		t.Errorf("watch from compacted %s: %s, want 410 or exactly the next event (ADDED b-0 %s)", old.ResourceVersion, got, next.ResourceVersion)
	}
}

// testWatchUnderConcurrentWrites: with several writers at once, a watch
// from a resourceVersion delivers every write exactly once in revision
// order, and a second watch from the middle delivers exactly the suffix.
func testWatchUnderConcurrentWrites(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	start := mustCreate(t, cs, ns, configMap("start", nil, "0"))
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: start.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	const writers, each = 4, 30
	var (
		mu      sync.Mutex
		written = map[string]string{} // rv -> "TYPE name"
		wg      sync.WaitGroup
	)
	for wid := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			name := fmt.Sprintf("w%d", wid)
			for i := range each {
				var rv, typ string
				switch {
				case i%10 == 0:
					cm, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, configMap(name, nil, "0"), metav1.CreateOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					rv, typ = cm.ResourceVersion, "ADDED"
				case i%10 == 9:
					// A delete's revision is only in its DELETED event.
					if err := cs.CoreV1().ConfigMaps(ns).Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
						t.Error(err)
						return
					}
					typ = "DELETED"
				default:
					cm, err := cs.CoreV1().ConfigMaps(ns).Patch(ctx, name, types.MergePatchType, []byte(fmt.Sprintf(`{"data":{"v":"%d"}}`, i)), metav1.PatchOptions{})
					if err != nil {
						t.Error(err)
						return
					}
					rv, typ = cm.ResourceVersion, "MODIFIED"
				}
				mu.Lock()
				if rv != "" {
					written[rv] = typ + " " + name
				} else {
					written[fmt.Sprintf("del-%s-%d", name, i)] = typ + " " + name
				}
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	sentinel := mustCreate(t, cs, ns, configMap("sentinel", nil, "0"))
	var got []watch.Event
	for {
		ev := nextNonBookmark(t, w)
		if m, _ := meta.Accessor(ev.Object); m != nil && m.GetName() == "sentinel" {
			if m.GetResourceVersion() != sentinel.ResourceVersion {
				t.Errorf("sentinel at %s, want %s", m.GetResourceVersion(), sentinel.ResourceVersion)
			}
			break
		}
		got = append(got, ev)
	}
	if len(got) != writers*each {
		t.Errorf("watch delivered %d events for %d writes", len(got), writers*each)
	}
	var last int64
	deletes := 0
	for _, ev := range got {
		d := describe(t, ev)
		fields := strings.Fields(d)
		rv := rvInt(t, fields[2])
		if rv <= last {
			t.Errorf("event %s not after %d", d, last)
		}
		last = rv
		if ev.Type == watch.Deleted {
			deletes++
			continue
		}
		if want, ok := written[fields[2]]; !ok || want != fields[0]+" "+fields[1] {
			t.Errorf("event %s: the write at that revision was %q", d, want)
		}
	}
	if deletes != writers*each/10 {
		t.Errorf("%d DELETED events, want %d", deletes, writers*each/10)
	}
	// From the middle: exactly the suffix.
	mid := got[len(got)/2]
	midRV := strings.Fields(describe(t, mid))[2]
	w2, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: midRV})
	if err != nil {
		t.Fatal(err)
	}
	defer w2.Stop()
	for _, want := range got[len(got)/2+1:] {
		if g, wnt := describe(t, nextNonBookmark(t, w2)), describe(t, want); g != wnt {
			t.Fatalf("watch from %s: %q, want %q", midRV, g, wnt)
		}
	}
	if g := describe(t, nextNonBookmark(t, w2)); g != "ADDED sentinel "+sentinel.ResourceVersion {
		t.Errorf("watch from %s ends with %q, want the sentinel", midRV, g)
	}
}

// testReadYourWrites: a quorum read ("" resourceVersion) after a write
// always sees it.
func testReadYourWrites(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	mustCreate(t, cs, ns, configMap("a", nil, "0"))
	for i := 1; i <= 30; i++ {
		w := mustPatch(t, cs, ns, "a", fmt.Sprintf(`{"data":{"v":"%d"}}`, i))
		got, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "a", metav1.GetOptions{})
		if err != nil || got.ResourceVersion != w.ResourceVersion {
			t.Fatalf("get after write %d: %v at %s, want %s", i, err, got.ResourceVersion, w.ResourceVersion)
		}
		list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 1 || list.Items[0].ResourceVersion != w.ResourceVersion {
			t.Fatalf("list after write %d: %v %v, want a at %s", i, err, list.Items, w.ResourceVersion)
		}
	}
}

// testPaginationWithSelector: with a selector, pages may hold fewer items
// than the limit but together hold exactly the matching objects, and no
// remainingItemCount is promised (upstream sets it only without selectors).
func testPaginationWithSelector(t *testing.T, _ *cluster.Cluster, cs kubernetes.Interface, ns string) {
	ctx := context.Background()
	var want []string
	for i := range 20 {
		labels := map[string]string{"pick": "no"}
		if i%4 == 0 {
			labels["pick"] = "yes"
			want = append(want, fmt.Sprintf("cm-%02d", i))
		}
		mustCreate(t, cs, ns, configMap(fmt.Sprintf("cm-%02d", i), labels, "1"))
	}
	var got []string
	opts := metav1.ListOptions{Limit: 2, LabelSelector: "pick=yes"}
	for pages := 0; ; pages++ {
		if pages > 20 {
			t.Fatal("pagination does not end")
		}
		page, err := cs.CoreV1().ConfigMaps(ns).List(ctx, opts)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Items) > 2 {
			t.Errorf("page of %d with limit 2", len(page.Items))
		}
		if page.RemainingItemCount != nil {
			t.Errorf("remainingItemCount %d with a label selector", *page.RemainingItemCount)
		}
		for _, cm := range page.Items {
			got = append(got, cm.Name)
		}
		if page.Continue == "" {
			break
		}
		opts.Continue = page.Continue
	}
	if !slices.Equal(got, want) {
		t.Errorf("paged with selector: %v, want %v", got, want)
	}
	// Without a selector, the first page counts what remains.
	page, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{Limit: 5})
	if err != nil {
		t.Fatal(err)
	}
	if page.RemainingItemCount == nil || *page.RemainingItemCount != 15 || page.Continue == "" {
		t.Errorf("first page of 5 of 20: remainingItemCount %v continue %q", page.RemainingItemCount, page.Continue)
	}
	// A watch-list with a selector sends only matching objects.
	w, err := cs.CoreV1().ConfigMaps(ns).Watch(ctx, metav1.ListOptions{LabelSelector: "pick=yes",
		SendInitialEvents: ptr.To(true), ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan, AllowWatchBookmarks: true})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	var initial []string
	for {
		ev := nextEvent(t, w)
		if ev.Type == watch.Bookmark {
			if ev.Object.(*corev1.ConfigMap).Annotations[metav1.InitialEventsAnnotationKey] == "true" {
				break
			}
			continue
		}
		if ev.Type != watch.Added {
			t.Fatalf("initial events: %s", describe(t, ev))
		}
		initial = append(initial, ev.Object.(*corev1.ConfigMap).Name)
	}
	slices.Sort(initial)
	if !slices.Equal(initial, want) {
		t.Errorf("watch-list with selector: %v, want %v", initial, want)
	}
}
