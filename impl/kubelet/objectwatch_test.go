package kubelet

import (
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	goruntime "runtime"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restwatch "k8s.io/client-go/rest/watch"
)

func cmAt(name, rv, data string) *v1.ConfigMap {
	return &v1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", ResourceVersion: rv}, Data: map[string]string{"k": data}}
}

// The cursor's decisions, one scenario per row: what the next request
// is, from where, and after how long a wait.
func TestWatchCursor(t *testing.T) {
	expired := apierrors.NewResourceExpired("too old")
	gone := apierrors.NewGone("gone")
	broken := errors.New("connection reset")
	var c watchCursor
	type want struct {
		list    bool
		rv      string
		listRV  string
		backoff time.Duration
	}
	check := func(step string, w want) {
		t.Helper()
		if c.mustList() != w.list || c.rv != w.rv || c.backoff() != w.backoff {
			t.Fatalf("%s: list %v rv %q backoff %v, want %v %q %v", step, c.mustList(), c.rv, c.backoff(), w.list, w.rv, w.backoff)
		}
		if w.list {
			if got := c.listOptions("metadata.name=x").ResourceVersion; got != w.listRV {
				t.Fatalf("%s: list at resourceVersion %q, want %q", step, got, w.listRV)
			}
		} else if o := c.watchOptions("metadata.name=x", 300); o.ResourceVersion != w.rv || !o.AllowWatchBookmarks || !o.Watch || o.FieldSelector != "metadata.name=x" {
			t.Fatalf("%s: watch options %+v", step, o)
		}
	}
	event := func(typ watch.EventType, obj runtime.Object) *watchedObject {
		t.Helper()
		var keep *watchedObject
		var err error
		if c, keep, err = c.event("x", typ, obj); err != nil {
			t.Fatalf("%s event: %v", typ, err)
		}
		return keep
	}

	check("start", want{list: true, listRV: "0"})
	c = c.failed(broken)
	check("the list failed", want{list: true, listRV: "0", backoff: 500 * time.Millisecond})
	c = c.failed(broken)
	check("twice", want{list: true, listRV: "0", backoff: time.Second})
	c = c.listed("10")
	check("listed", want{rv: "10", backoff: time.Second}) // a list alone is no progress
	c = c.watchStarted()
	if keep := event(watch.Bookmark, cmAt("", "12", "")); keep != nil {
		t.Fatalf("a bookmark changed the object: %v", keep)
	}
	check("bookmark", want{rv: "12"})
	if keep := event(watch.Modified, cmAt("x", "13", "v2")); keep == nil || keep.obj.(*v1.ConfigMap).Data["k"] != "v2" {
		t.Fatalf("modified: keep %v", keep)
	}
	if keep := event(watch.Modified, cmAt("other", "14", "v9")); keep != nil {
		t.Fatalf("another object's event changed the object: %v", keep)
	}
	c = c.failed(io.EOF)
	check("the stream ended after events: resume at once", want{rv: "14"})
	c = c.watchStarted()
	c = c.failed(io.EOF)
	check("a watch that ended without events backs off", want{rv: "14", backoff: 500 * time.Millisecond})
	c = c.watchStarted()
	if keep := event(watch.Deleted, cmAt("x", "20", "v2")); keep == nil || keep.obj != nil {
		t.Fatalf("deleted: keep %v", keep)
	}
	var err error
	c, _, err = c.event("x", watch.Error, &expired.ErrStatus)
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("ERROR event: %v", err)
	}
	c = c.failed(err)
	check("410 after progress: list again at once, consistently", want{list: true, listRV: ""})
	c = c.listed("30").watchStarted().failed(gone)
	check("410 Gone at once: list again after a wait", want{list: true, listRV: "", backoff: 500 * time.Millisecond})
	for range 20 {
		c = c.failed(broken)
	}
	check("back-off is capped", want{list: true, listRV: "", backoff: 30 * time.Second})
	c = c.listed("40")
	check("a list at rv 40", want{rv: "40", backoff: 30 * time.Second})
}

// fakeAPI is an API server for one ConfigMap whose lists and watches a
// test scripts: each list request takes the next list from lists, each
// watch request the next script from watches (both wait for one), and
// every request is reported to seen ("list 0", "watch 10", "get x"). It
// speaks protobuf, as the object watch asks.
type fakeAPI struct {
	t       *testing.T
	lists   chan runtime.Object
	watches chan watchScript
	seen    chan string
}

// watchScript answers one watch: with status (not 200) and a Status
// body, or with a stream of events that then ends, or stays open until
// the client goes (hold).
type watchScript struct {
	status int
	events []watch.Event
	hold   bool
}

var protobufEncoder = func() runtime.Encoder {
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	return scheme.Codecs.EncoderForVersion(info.Serializer, v1.SchemeGroupVersion)
}()

func newFakeAPI(t *testing.T) (*fakeAPI, *httptest.Server, kubernetes.Interface) {
	a := &fakeAPI{t: t, lists: make(chan runtime.Object, 10), watches: make(chan watchScript, 10), seen: make(chan string, 100)}
	srv := httptest.NewServer(a)
	t.Cleanup(srv.Close) // after the watches' stops, registered later
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeProtobuf}, QPS: -1})
	if err != nil {
		t.Fatal(err)
	}
	return a, srv, client
}

func (a *fakeAPI) writeObject(w http.ResponseWriter, status int, obj runtime.Object) {
	b, err := runtime.Encode(protobufEncoder, obj)
	if err != nil {
		a.t.Errorf("encode %T: %v", obj, err)
		return
	}
	w.Header().Set("Content-Type", runtime.ContentTypeProtobuf)
	w.WriteHeader(status)
	_, _ = w.Write(b)
}

func (a *fakeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	tail, _ := strings.CutPrefix(r.URL.Path, "/api/v1/namespaces/ns/configmaps")
	switch {
	case tail != "":
		a.seen <- "get " + strings.TrimPrefix(tail, "/")
		a.writeObject(w, http.StatusNotFound, &apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, strings.TrimPrefix(tail, "/")).ErrStatus)
	case q.Get("watch") != "true":
		a.seen <- "list " + q.Get("resourceVersion")
		select {
		case l := <-a.lists:
			a.writeObject(w, http.StatusOK, l)
		case <-r.Context().Done():
		}
	default:
		a.seen <- "watch " + q.Get("resourceVersion")
		if got := r.Header.Get("Accept"); got != runtime.ContentTypeProtobuf || q.Get("allowWatchBookmarks") != "true" || q.Get("fieldSelector") != "metadata.name=x" {
			a.t.Errorf("watch request: Accept %q, query %v", got, q)
		}
		var s watchScript
		select {
		case s = <-a.watches:
		case <-r.Context().Done():
			return
		}
		if s.status != 0 {
			a.writeObject(w, s.status, s.events[0].Object)
			return
		}
		w.Header().Set("Content-Type", runtime.ContentTypeProtobuf+";stream=watch")
		w.WriteHeader(http.StatusOK)
		enc := restwatch.NewEncoder(streaming.NewEncoder(protobufStream.Framer.NewFrameWriter(w), protobufStream.Serializer), protobufEncoder)
		for _, ev := range s.events {
			if err := enc.Encode(&ev); err != nil {
				a.t.Errorf("encode event: %v", err)
			}
			w.(http.Flusher).Flush()
		}
		if s.hold {
			<-r.Context().Done()
		}
	}
}

// expect waits for the next request to be want.
func (a *fakeAPI) expect(want string) {
	a.t.Helper()
	select {
	case got := <-a.seen:
		if got != want {
			a.t.Fatalf("request %q, want %q", got, want)
		}
	case <-time.After(10 * time.Second):
		a.t.Fatalf("no request, want %q", want)
	}
}

// watchOf starts the watch of ConfigMap ns/x through client and returns
// it with a stop that ends it and waits.
func watchOf(t *testing.T, client kubernetes.Interface) (*sharedObjectWatch, func()) {
	w := startObjectWatch(client, objectRef{resourceConfigMaps, "ns", "x"})
	stop := func() { w.cancel(); <-w.done }
	t.Cleanup(stop)
	return w, stop
}

// holds waits until w holds data (or, with data "", holds that there is
// no object).
func holds(t *testing.T, w *sharedObjectWatch, data string) {
	t.Helper()
	eventually(t, "the watch to hold "+data, func() bool {
		obj, synced := w.current()
		if !synced {
			return false
		}
		if obj == nil {
			return data == ""
		}
		return obj.(*v1.ConfigMap).Data["k"] == data
	})
}

func list(rv string, items ...v1.ConfigMap) *v1.ConfigMapList {
	return &v1.ConfigMapList{ListMeta: metav1.ListMeta{ResourceVersion: rv}, Items: items}
}

// A watch the API server can no longer resume (410, as an ERROR event and
// as the watch request's status) lists again, reading the latest state.
func TestObjectWatchRelistsAfterExpired(t *testing.T) {
	a, _, client := newFakeAPI(t)
	expired := apierrors.NewResourceExpired("too old resource version: 10 (15)")
	a.lists <- list("10", *cmAt("x", "9", "v1"))
	a.watches <- watchScript{events: []watch.Event{
		{Type: watch.Bookmark, Object: cmAt("", "11", "")},
		{Type: watch.Error, Object: &expired.ErrStatus}}}
	a.lists <- list("20", *cmAt("x", "18", "v2"))
	a.watches <- watchScript{status: http.StatusGone, events: []watch.Event{{Object: &apierrors.NewGone("gone").ErrStatus}}}
	a.lists <- list("30", *cmAt("x", "25", "v3"))
	a.watches <- watchScript{hold: true}
	w, _ := watchOf(t, client)
	a.expect("list 0")
	a.expect("watch 10")
	a.expect("list ") // consistent
	a.expect("watch 20")
	a.expect("list ")
	a.expect("watch 30")
	holds(t, w, "v3")
}

// A watch that breaks (the stream ends) resumes from the last
// resourceVersion it saw, without listing again, and keeps what the new
// stream brings.
func TestObjectWatchResumesAfterABreak(t *testing.T) {
	a, _, client := newFakeAPI(t)
	a.lists <- list("10", *cmAt("x", "9", "v1"))
	a.watches <- watchScript{events: []watch.Event{{Type: watch.Modified, Object: cmAt("x", "11", "v2")}}}
	a.watches <- watchScript{events: []watch.Event{{Type: watch.Bookmark, Object: cmAt("", "15", "")}}}
	a.watches <- watchScript{hold: true, events: []watch.Event{{Type: watch.Modified, Object: cmAt("x", "16", "v3")}}}
	w, _ := watchOf(t, client)
	a.expect("list 0")
	a.expect("watch 10")
	a.expect("watch 11")
	a.expect("watch 15")
	holds(t, w, "v3")
	select {
	case r := <-a.seen:
		t.Errorf("unexpected request %q", r)
	default:
	}
}

// An object that does not exist is NotFound from the synced watch,
// without a GET, and found once the watch sees it created.
func TestObjectWatchNotFoundThenCreated(t *testing.T) {
	a, _, client := newFakeAPI(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	m := newObjectManager(client)
	m.start(ctx)
	defer m.stop()
	m.registerPod(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "p"}, Spec: v1.PodSpec{
		Volumes: []v1.Volume{{Name: "v", VolumeSource: v1.VolumeSource{ConfigMap: &v1.ConfigMapVolumeSource{LocalObjectReference: v1.LocalObjectReference{Name: "x"}}}}}}})

	// Before the watch has synced, a read is a GET.
	if _, err := m.configMap(ctx, "ns", "x"); !apierrors.IsNotFound(err) {
		t.Fatalf("read before sync: %v, want NotFound", err)
	}
	got := map[string]bool{}
	for range 2 { // the GET and the list, in either order
		select {
		case r := <-a.seen:
			got[r] = true
		case <-time.After(10 * time.Second):
			t.Fatal("requests missing")
		}
	}
	if !got["get x"] || !got["list 0"] {
		t.Fatalf("requests %v, want a GET and a list", got)
	}
	a.lists <- list("5")
	a.expect("watch 5")
	eventually(t, "the watch to sync", m.allSynced)
	if _, err := m.configMap(ctx, "ns", "x"); !apierrors.IsNotFound(err) {
		t.Fatalf("read from the synced watch: %v, want NotFound", err)
	}
	a.watches <- watchScript{hold: true, events: []watch.Event{{Type: watch.Added, Object: cmAt("x", "6", "new")}}}
	eventually(t, "the created ConfigMap", func() bool {
		c, err := m.configMap(ctx, "ns", "x")
		return err == nil && c.Data["k"] == "new"
	})
	select {
	case r := <-a.seen:
		t.Errorf("unexpected request %q (reads of a synced watch send none)", r)
	default:
	}
}

// A running watch is one goroutine of ours reading the stream itself (no
// client-go stream watcher); stopping it, while a list or a watch waits
// on the API server, ends every goroutine it started.
func TestObjectWatchStopReleasesGoroutines(t *testing.T) {
	before := goruntime.NumGoroutine()
	a, srv, client := newFakeAPI(t)
	a.lists <- list("10", *cmAt("x", "9", "v1"))
	a.watches <- watchScript{hold: true}
	w, stop := watchOf(t, client)
	a.expect("list 0")
	a.expect("watch 10")
	holds(t, w, "v1")
	buf := make([]byte, 1<<20)
	stacks := string(buf[:goruntime.Stack(buf, true)])
	if n := strings.Count(stacks, "(*sharedObjectWatch).run("); n != 1 {
		t.Errorf("%d goroutines of the watch loop, want 1", n)
	}
	if strings.Contains(stacks, "StreamWatcher") {
		t.Errorf("a client-go stream watcher runs:\n%s", stacks)
	}
	stop()

	// Stopped while its list waits for an answer.
	w2, stop2 := watchOf(t, client)
	a.expect("list 0")
	stop2()
	if _, synced := w2.current(); synced {
		t.Error("a watch whose list never came back has synced")
	}
	srv.Close()
	client.CoreV1().RESTClient().(*rest.RESTClient).Client.CloseIdleConnections()
	goroutinesEnd(t, before)
}

// An immutable object is watched no more once held, listed or seen in a
// watch event (as upstream's kubelet): the watch's goroutine ends and the
// object stays served.
func TestObjectWatchEndsOnceTheObjectIsImmutable(t *testing.T) {
	yes := true
	ended := func(t *testing.T, w *sharedObjectWatch) {
		t.Helper()
		select {
		case <-w.done:
		case <-time.After(10 * time.Second):
			t.Fatal("the watch of an immutable object still runs")
		}
	}

	a, _, client := newFakeAPI(t)
	listed := cmAt("x", "9", "v1")
	listed.Immutable = &yes
	a.lists <- list("10", *listed)
	w, _ := watchOf(t, client)
	a.expect("list 0")
	ended(t, w)
	holds(t, w, "v1")
	select {
	case r := <-a.seen:
		t.Errorf("request %q after listing an immutable object", r)
	default:
	}

	a, _, client = newFakeAPI(t)
	a.lists <- list("10", *cmAt("x", "9", "v1"))
	made := cmAt("x", "11", "v2")
	made.Immutable = &yes
	a.watches <- watchScript{hold: true, events: []watch.Event{{Type: watch.Modified, Object: made}}}
	w, _ = watchOf(t, client)
	a.expect("list 0")
	a.expect("watch 10")
	ended(t, w)
	holds(t, w, "v2")
}

func TestImmutable(t *testing.T) {
	yes, no := true, false
	for _, tc := range []struct {
		obj  runtime.Object
		want bool
	}{
		{&v1.ConfigMap{Immutable: &yes}, true},
		{&v1.ConfigMap{Immutable: &no}, false},
		{&v1.ConfigMap{}, false},
		{&v1.Secret{Immutable: &yes}, true},
		{&v1.Secret{}, false},
		{nil, false},
	} {
		if got := immutable(tc.obj); got != tc.want {
			t.Errorf("immutable(%#v) = %v, want %v", tc.obj, got, tc.want)
		}
	}
}

// The stream reader takes frames as client-go's rest/watch Decoder does:
// each event's type and object, then the stream's end; a frame cut short,
// one over the size limit and an unknown event type are errors.
func TestStreamEventsFrames(t *testing.T) {
	frame := func(typ string, obj runtime.Object) []byte {
		pb, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
		raw, err := runtime.Encode(scheme.Codecs.EncoderForVersion(pb.Serializer, v1.SchemeGroupVersion), obj)
		if err != nil {
			t.Fatal(err)
		}
		ev := metav1.WatchEvent{Type: typ, Object: runtime.RawExtension{Raw: raw}}
		b, err := ev.Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte{byte(len(b) >> 24), byte(len(b) >> 16), byte(len(b) >> 8), byte(len(b))}, b...)
	}
	var stream []byte
	stream = append(stream, frame("ADDED", cmAt("x", "5", "v1"))...)
	stream = append(stream, frame("BOOKMARK", cmAt("", "7", ""))...)
	stream = append(stream, frame("ERROR", &apierrors.NewResourceExpired("too old").ErrStatus)...)
	s := &streamEvents{body: io.NopCloser(strings.NewReader(string(stream)))}
	typ, obj, err := s.next(context.Background())
	if cm, ok := obj.(*v1.ConfigMap); err != nil || typ != watch.Added || !ok || cm.Data["k"] != "v1" || cm.ResourceVersion != "5" {
		t.Fatalf("first event: %s %#v %v", typ, obj, err)
	}
	if typ, obj, err = s.next(context.Background()); err != nil || typ != watch.Bookmark || obj.(*v1.ConfigMap).ResourceVersion != "7" {
		t.Fatalf("second event: %s %#v %v", typ, obj, err)
	}
	if typ, obj, err = s.next(context.Background()); err != nil || typ != watch.Error || obj.(*metav1.Status).Reason != metav1.StatusReasonExpired {
		t.Fatalf("third event: %s %#v %v", typ, obj, err)
	}
	if _, _, err = s.next(context.Background()); err != io.EOF {
		t.Fatalf("after the last frame: %v, want EOF", err)
	}

	bad := map[string][]byte{
		"cut short":     frame("ADDED", cmAt("x", "5", "v1"))[:20],
		"too large":     {0x7f, 0, 0, 0, 1, 2, 3},
		"unknown type":  frame("CHANGED", cmAt("x", "5", "v1")),
		"not an event":  {0, 0, 0, 3, 0xff, 0xff, 0xff},
		"header only 2": {0, 0},
	}
	for name, b := range bad {
		s := &streamEvents{body: io.NopCloser(strings.NewReader(string(b)))}
		if typ, obj, err := s.next(context.Background()); err == nil || err == io.EOF {
			t.Errorf("%s: %s %v %v, want an error", name, typ, obj, err)
		}
	}
}
