package apiserver_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
)

func nextEvent(t *testing.T, w watch.Interface) watch.Event {
	t.Helper()
	select {
	case ev, ok := <-w.ResultChan():
		if !ok {
			t.Fatal("watch closed")
		}
		return ev
	case <-time.After(10 * time.Second):
		t.Fatal("no watch event")
	}
	return watch.Event{}
}

func expectEvent(t *testing.T, w watch.Interface, typ watch.EventType, name string) *corev1.ConfigMap {
	t.Helper()
	ev := nextEvent(t, w)
	cm, ok := ev.Object.(*corev1.ConfigMap)
	if ev.Type != typ || !ok || cm.Name != name {
		t.Fatalf("got %s %T %v, want %s %s", ev.Type, ev.Object, ev.Object, typ, name)
	}
	return cm
}

func testWatch(t *testing.T, cs kubernetes.Interface) {
	c := ctx(t)
	cms := cs.CoreV1().ConfigMaps("default")
	first, err := cms.Create(c, configMap("", "w0", nil), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// from a resourceVersion: events strictly after it.
	w, err := cms.Watch(c, metav1.ListOptions{ResourceVersion: first.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// a label-selected watch: leaving the selector is a DELETED.
	sel, err := cms.Watch(c, metav1.ListOptions{ResourceVersion: first.ResourceVersion, LabelSelector: "team=a"})
	if err != nil {
		t.Fatal(err)
	}
	defer sel.Stop()

	a := configMap("", "w1", nil)
	a.Labels = map[string]string{"team": "a"}
	created, err := cms.Create(c, a, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := expectEvent(t, w, watch.Added, "w1")
	if got.ResourceVersion != created.ResourceVersion {
		t.Fatalf("event rv %s, created rv %s", got.ResourceVersion, created.ResourceVersion)
	}
	expectEvent(t, sel, watch.Added, "w1")
	if _, err := cms.Patch(c, "w1", types.MergePatchType, []byte(`{"metadata":{"labels":{"team":"b"}}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, watch.Modified, "w1")
	expectEvent(t, sel, watch.Deleted, "w1")
	if err := cms.Delete(c, "w1", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	expectEvent(t, w, watch.Deleted, "w1")
}

func TestWatchJSON(t *testing.T) {
	e := newEnv(t, nil)
	testWatch(t, e.cs)
}

func TestWatchProtobuf(t *testing.T) {
	e := newEnv(t, nil)
	cfg := *e.rest
	cfg.ContentType = "application/vnd.kubernetes.protobuf"
	cfg.AcceptContentTypes = "application/vnd.kubernetes.protobuf,application/json"
	cs, err := kubernetes.NewForConfig(&cfg)
	if err != nil {
		t.Fatal(err)
	}
	testWatch(t, cs)
	// protobuf request and response bodies on plain verbs too.
	c := ctx(t)
	out, err := cs.CoreV1().ConfigMaps("default").Create(c, configMap("", "pb", map[string]string{"x": "y"}), metav1.CreateOptions{})
	if err != nil || out.Data["x"] != "y" {
		t.Fatalf("protobuf create: %v %+v", err, out)
	}
	r := e.do("GET", "/api/v1/namespaces/default/configmaps/pb", nil, "Accept", "application/vnd.kubernetes.protobuf")
	if r.code != 200 || r.header.Get("Content-Type") != "application/vnd.kubernetes.protobuf" || string(r.body[:4]) != "k8s\x00" {
		t.Fatalf("protobuf get: %d %q %q", r.code, r.header.Get("Content-Type"), r.body)
	}
}

func TestWatchSingleObjectAndTimeout(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	cms := e.cs.CoreV1().ConfigMaps("default")
	for _, n := range []string{"one", "two"} {
		if _, err := cms.Create(c, configMap("", n, nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	// the legacy /watch/ path on one object, from "0": its current state first.
	req, _ := http.NewRequest("GET", e.url+"/api/v1/watch/namespaces/default/configmaps/two?resourceVersion=0&timeoutSeconds=1", nil)
	resp, err := e.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != 200 || resp.Header.Get("Content-Type") != "application/json" {
		t.Fatalf("watch: %d %s", resp.StatusCode, resp.Header.Get("Content-Type"))
	}
	sc := bufio.NewScanner(resp.Body)
	var names []string
	for sc.Scan() {
		var ev struct {
			Type   string
			Object corev1.ConfigMap
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("event %q: %v", sc.Text(), err)
		}
		names = append(names, ev.Type+" "+ev.Object.Name)
	}
	// the stream ended by itself after timeoutSeconds.
	if len(names) != 1 || names[0] != "ADDED two" {
		t.Fatalf("events %v", names)
	}
}

func TestWatchBookmarksAndInitialEvents(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	cms := e.cs.CoreV1().ConfigMaps("default")
	for i := range 3 {
		if _, err := cms.Create(c, configMap("", fmt.Sprintf("i%d", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	yes := true
	w, err := cms.Watch(c, metav1.ListOptions{SendInitialEvents: &yes, AllowWatchBookmarks: true,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	for i := range 3 {
		expectEvent(t, w, watch.Added, fmt.Sprintf("i%d", i))
	}
	ev := nextEvent(t, w)
	cm, ok := ev.Object.(*corev1.ConfigMap)
	if ev.Type != watch.Bookmark || !ok || cm.Annotations[metav1.InitialEventsAnnotationKey] != "true" || cm.ResourceVersion == "" {
		t.Fatalf("want initial-events-end bookmark, got %s %+v", ev.Type, ev.Object)
	}
	// sendInitialEvents without the right resourceVersionMatch is invalid.
	_, err = cms.Watch(c, metav1.ListOptions{SendInitialEvents: &yes})
	if !apierrors.IsInvalid(err) {
		t.Fatalf("sendInitialEvents without match: %v", err)
	}
}

func TestPagination(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	cms := e.cs.CoreV1().ConfigMaps("default")
	for i := range 7 {
		if _, err := cms.Create(c, configMap("", fmt.Sprintf("p%d", i), nil), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	var names []string
	opts := metav1.ListOptions{Limit: 3}
	var firstRV string
	for {
		l, err := cms.List(c, opts)
		if err != nil {
			t.Fatal(err)
		}
		if firstRV == "" {
			firstRV = l.ResourceVersion
			// writes between pages do not show up: every page is read at the first one's revision.
			if _, err := cms.Create(c, configMap("", "p9-late", nil), metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
		} else if l.ResourceVersion != firstRV {
			t.Fatalf("page rv %s, first page rv %s", l.ResourceVersion, firstRV)
		}
		for _, it := range l.Items {
			names = append(names, it.Name)
		}
		if l.Continue == "" {
			break
		}
		if len(l.Items) != 3 || l.RemainingItemCount == nil {
			t.Fatalf("page of %d, remaining %v", len(l.Items), l.RemainingItemCount)
		}
		opts.Continue = l.Continue
	}
	if fmt.Sprint(names) != "[p0 p1 p2 p3 p4 p5 p6]" {
		t.Fatalf("paged names %v", names)
	}
	// an exact resourceVersion list sees the past.
	l, err := cms.List(c, metav1.ListOptions{ResourceVersion: firstRV, ResourceVersionMatch: metav1.ResourceVersionMatchExact})
	if err != nil || len(l.Items) != 7 {
		t.Fatalf("exact list: %v %d", err, len(l.Items))
	}
	// a future one is not served.
	rv, _ := strconv.ParseInt(firstRV, 10, 64)
	r := e.do("GET", "/api/v1/namespaces/default/configmaps/p0?resourceVersion="+strconv.FormatInt(rv+1000000, 10), nil)
	st := expectStatus(t, r, http.StatusGatewayTimeout, metav1.StatusReasonTimeout, "Too large resource version")
	if st.Details == nil || len(st.Details.Causes) != 1 || st.Details.Causes[0].Type != metav1.CauseTypeResourceVersionTooLarge {
		t.Fatalf("causes: %s", r.body)
	}
}
