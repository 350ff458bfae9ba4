package kubelet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
)

// The watch of one ConfigMap, Secret or RuntimeClass, run by one
// goroutine: list the object by name (field selector metadata.name=<name>
// in its namespace, if it has one),
// then watch it from the list's resourceVersion with bookmarks, keeping
// the latest version of the object or that there is none. A watch that
// ends or breaks resumes from the last resourceVersion it saw; one the
// API server no longer can resume (410 Expired or Gone) lists again.
// Attempts that make no progress back off (0.5 s doubling to 30 s).
// Once the object it holds is immutable (ConfigMap or Secret with
// immutable: true) the watch ends, as upstream's kubelet stops watching
// such an object: it cannot change, and it keeps being served as it was
// last seen (also if it is deleted later, as upstream).
//
// With a REST client (every real clientset) the loop reads the watch
// stream itself (protobuf, length-delimited frames), so the HTTP/2
// stream's writer is the watch's only other goroutine; client-go's Watch
// would add a stream watcher goroutine between the stream and the loop.
// Clients without one (fake clientsets) are watched through their Watch.
//
// What the loop does next is decided by watchCursor, a value with pure
// transitions; the loop only does the requests and keeps the result.

// watchedObject is a synced watch's object: nil when it does not exist.
type watchedObject struct{ obj runtime.Object }

// sharedObjectWatch is the watch of one object, shared by the kubelets
// of a process that share a clientset (the node-memory agent runs
// thousands of simulated nodes over one): a pod's kube-root-ca.crt, say,
// is watched once per namespace, not once per node. Kubelets with
// clientsets of their own (each its node's credentials, as in kubeproof
// up, whose Node authorizer allows a node only its own pods' objects)
// watch on their own.
type sharedObjectWatch struct {
	latest atomic.Pointer[watchedObject] // nil until the first list
	cur    watchCursor                   // where the watch stands; run's goroutine only
	cancel context.CancelFunc
	done   chan struct{} // closed when the watch's goroutine has returned
}

// current returns the watch's object and whether the watch has synced.
func (w *sharedObjectWatch) current() (obj runtime.Object, synced bool) {
	l := w.latest.Load()
	if l == nil {
		return nil, false
	}
	return l.obj, true
}

func (w *sharedObjectWatch) synced() bool { return w.latest.Load() != nil }

// startObjectWatch starts the watch of r through client.
func startObjectWatch(client kubernetes.Interface, r objectRef) *sharedObjectWatch {
	ctx, cancel := context.WithCancel(context.Background())
	w := &sharedObjectWatch{cancel: cancel, done: make(chan struct{})}
	src := newObjectSource(client, r)
	go func() {
		defer close(w.done)
		w.run(ctx, src)
	}()
	return w
}

// run lists and watches until ctx ends.
//
// run and watch keep small frames, their work in callees (list, openWatch,
// apply): the goroutine waits for events under them for minutes at a time,
// and the runtime halves an idle goroutine's stack only while it uses under
// a quarter of it, so what stays on the stack while it waits decides
// whether each watch (one per node and object in kubeproof up) keeps 4 or
// 8 KiB of stack.
func (w *sharedObjectWatch) run(ctx context.Context, src objectSource) {
	for ctx.Err() == nil {
		if d := w.cur.backoff(); d > 0 && !sleepJittered(ctx, d) {
			return
		}
		var done bool
		if w.cur.mustList() {
			done = w.list(ctx, src)
		} else {
			done = w.watch(ctx, src)
		}
		if done {
			return
		}
	}
}

// sleepJittered waits d/2 plus up to d/2 more (nodes that lost the API
// server together come back apart); false if ctx ended first.
//
//go:noinline
func sleepJittered(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d/2 + rand.N(d/2))
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// list lists the object, keeping what it finds; done when that is
// immutable.
//
//go:noinline
func (w *sharedObjectWatch) list(ctx context.Context, src objectSource) (done bool) {
	list, err := src.list(ctx, w.cur.listOptions(src.selector()))
	if err != nil {
		w.cur = w.cur.failed(err)
		return false
	}
	obj, rv, err := listedObject(src.name(), list)
	if err != nil {
		w.cur = w.cur.failed(err)
		return false
	}
	w.latest.Store(&watchedObject{obj})
	if immutable(obj) {
		return true
	}
	w.cur = w.cur.listed(rv)
	return false
}

// immutable reports whether obj is a ConfigMap or Secret marked
// immutable: its watch has nothing more to bring.
func immutable(obj runtime.Object) bool {
	switch o := obj.(type) {
	case *v1.ConfigMap:
		return o.Immutable != nil && *o.Immutable
	case *v1.Secret:
		return o.Immutable != nil && *o.Immutable
	}
	return false
}

// watch runs one watch from the cursor's resourceVersion until it ends,
// keeping what its events bring; done when the object it now holds is
// immutable.
func (w *sharedObjectWatch) watch(ctx context.Context, src objectSource) (done bool) {
	events, err := w.openWatch(ctx, src)
	if err != nil {
		return false
	}
	defer events.close()
	for {
		t, obj, err := events.next(ctx)
		if done, end := w.apply(src, t, obj, err); end {
			return done
		}
	}
}

// openWatch starts a watch from the cursor's resourceVersion (a failure
// is the cursor's).
//
//go:noinline
func (w *sharedObjectWatch) openWatch(ctx context.Context, src objectSource) (objectEvents, error) {
	timeout := int64(minWatchTimeout.Seconds()) + rand.Int64N(int64(minWatchTimeout.Seconds()))
	events, err := src.watch(ctx, w.cur.watchOptions(src.selector(), timeout))
	if err != nil {
		w.cur = w.cur.failed(err)
		return nil, err
	}
	w.cur = w.cur.watchStarted()
	return events, nil
}

// apply takes what the watch's next read returned into the cursor: end
// when the watch ends, done when the watching does too (the object it now
// holds is immutable).
//
//go:noinline
func (w *sharedObjectWatch) apply(src objectSource, t watch.EventType, obj runtime.Object, err error) (done, end bool) {
	if err != nil {
		w.cur = w.cur.failed(err)
		return false, true
	}
	var keep *watchedObject
	if w.cur, keep, err = w.cur.event(src.name(), t, obj); err != nil {
		w.cur = w.cur.failed(err)
		return false, true
	}
	if keep != nil {
		w.latest.Store(keep)
		if immutable(keep.obj) {
			return true, true
		}
	}
	return false, false
}

// minWatchTimeout: each watch asks the server to end it after 5–10
// minutes (as client-go's reflectors), so that no stream lives forever.
const minWatchTimeout = 5 * time.Minute

// Back-off of attempts that make no progress.
const (
	watchBackoffBase = 500 * time.Millisecond
	watchBackoffMax  = 30 * time.Second
)

// watchCursor is where a watch stands: the resourceVersion to resume
// from, and how many attempts in a row made no progress.
type watchCursor struct {
	rv         string // resume point; "" until listed, and after a 410
	consistent bool   // the next list must be a consistent read (after a 410)
	failures   int    // attempts in a row without progress
	progressed bool   // the running watch has delivered an event
}

// mustList reports whether the next request is a list.
func (c watchCursor) mustList() bool { return c.rv == "" }

// backoff is how long to wait before the next request.
func (c watchCursor) backoff() time.Duration {
	if c.failures == 0 {
		return 0
	}
	d := watchBackoffBase
	for i := 1; i < c.failures && d < watchBackoffMax; i++ {
		d *= 2
	}
	return min(d, watchBackoffMax)
}

// listOptions: the first list may be served from the API server's watch
// cache (resourceVersion 0, as client-go's reflectors); one after a 410
// reads the latest state.
func (c watchCursor) listOptions(selector string) metav1.ListOptions {
	o := metav1.ListOptions{FieldSelector: selector, ResourceVersion: "0"}
	if c.consistent {
		o.ResourceVersion = ""
	}
	return o
}

// watchOptions asks for the changes after c's resourceVersion, with
// bookmarks, for at most timeout seconds.
func (c watchCursor) watchOptions(selector string, timeout int64) metav1.ListOptions {
	return metav1.ListOptions{FieldSelector: selector, ResourceVersion: c.rv, AllowWatchBookmarks: true, Watch: true, TimeoutSeconds: &timeout}
}

// listed: the list succeeded at rv; a watch from rv follows.
func (c watchCursor) listed(rv string) watchCursor {
	c.rv, c.consistent = rv, false
	return c
}

// watchStarted: a watch stream is open.
func (c watchCursor) watchStarted() watchCursor {
	c.progressed = false
	return c
}

// event applies one watch event of the object name: it returns the
// object to keep (nil: unchanged), or an error ending the watch (an ERROR
// event, or an event not of a watch). Events of other objects (from a
// server that ignores the field selector, as fake clientsets do) only
// move the resourceVersion.
func (c watchCursor) event(name string, t watch.EventType, obj runtime.Object) (watchCursor, *watchedObject, error) {
	if t == watch.Error {
		return c, nil, errorEvent(obj)
	}
	m, err := meta.Accessor(obj)
	if err != nil {
		return c, nil, fmt.Errorf("watch event %s of %T: %w", t, obj, err)
	}
	var keep *watchedObject
	switch t {
	case watch.Added, watch.Modified:
		keep = &watchedObject{obj}
	case watch.Deleted:
		keep = &watchedObject{}
	case watch.Bookmark:
	default:
		return c, nil, fmt.Errorf("unknown watch event type %q", t)
	}
	if t != watch.Bookmark && m.GetName() != name {
		keep = nil
	}
	c.rv, c.progressed, c.failures = m.GetResourceVersion(), true, 0
	return c, keep, nil
}

// failed: a list or watch ended with err (a clean end of a watch stream
// included). A 410 lists again, consistently; other ends resume from the
// resourceVersion. An attempt that made no progress counts toward the
// back-off; a watch that delivered events does not.
func (c watchCursor) failed(err error) watchCursor {
	if c.rv != "" && (apierrors.IsResourceExpired(err) || apierrors.IsGone(err)) {
		c.rv, c.consistent = "", true
	}
	if !c.progressed {
		c.failures++
	}
	c.progressed = false
	return c
}

// errorEvent is the error an ERROR watch event carries.
func errorEvent(obj runtime.Object) error {
	if s, ok := obj.(*metav1.Status); ok {
		return apierrors.FromObject(s)
	}
	return fmt.Errorf("watch error event of %T", obj)
}

// listedObject returns the object called name in a list (nil when there
// is none) and the list's resourceVersion.
func listedObject(name string, list runtime.Object) (runtime.Object, string, error) {
	lm, err := meta.ListAccessor(list)
	if err != nil {
		return nil, "", fmt.Errorf("list of %T: %w", list, err)
	}
	if lm.GetResourceVersion() == "" {
		return nil, "", errors.New("list without a resourceVersion")
	}
	items, err := meta.ExtractList(list)
	if err != nil {
		return nil, "", fmt.Errorf("list of %T: %w", list, err)
	}
	var obj runtime.Object
	for _, o := range items {
		if m, err := meta.Accessor(o); err == nil && m.GetName() == name {
			obj = o
		}
	}
	return obj, lm.GetResourceVersion(), nil
}

// objectSource lists and watches one object.
type objectSource interface {
	name() string
	selector() string
	list(ctx context.Context, o metav1.ListOptions) (runtime.Object, error)
	watch(ctx context.Context, o metav1.ListOptions) (objectEvents, error)
}

// objectEvents is one watch's events, read by the watch's goroutine.
type objectEvents interface {
	next(ctx context.Context) (watch.EventType, runtime.Object, error) // an error at the end
	close()
}

// clientSource is r through a clientset.
type clientSource struct {
	client kubernetes.Interface
	rest   *rest.RESTClient // r's group's; nil for clientsets without one (fakes)
	r      objectRef
	sel    string
}

func newObjectSource(client kubernetes.Interface, r objectRef) *clientSource {
	s := &clientSource{client: client, r: r, sel: fields.OneTermEqualSelector("metadata.name", r.name).String()}
	group := client.CoreV1().RESTClient()
	if r.resource == resourceRuntimeClasses {
		group = client.NodeV1().RESTClient()
	}
	if rc, ok := group.(*rest.RESTClient); ok && rc != nil && protobufStream != nil {
		s.rest = rc
	}
	return s
}

func (s *clientSource) name() string     { return s.r.name }
func (s *clientSource) selector() string { return s.sel }

func (s *clientSource) list(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
	switch s.r.resource {
	case resourceConfigMaps:
		return s.client.CoreV1().ConfigMaps(s.r.namespace).List(ctx, o)
	case resourceRuntimeClasses:
		return s.client.NodeV1().RuntimeClasses().List(ctx, o)
	}
	return s.client.CoreV1().Secrets(s.r.namespace).List(ctx, o)
}

func (s *clientSource) watch(ctx context.Context, o metav1.ListOptions) (objectEvents, error) {
	if s.rest == nil {
		var w watch.Interface
		var err error
		switch s.r.resource {
		case resourceConfigMaps:
			w, err = s.client.CoreV1().ConfigMaps(s.r.namespace).Watch(ctx, o)
		case resourceRuntimeClasses:
			w, err = s.client.NodeV1().RuntimeClasses().Watch(ctx, o)
		default:
			w, err = s.client.CoreV1().Secrets(s.r.namespace).Watch(ctx, o)
		}
		if err != nil {
			return nil, err
		}
		return watcherEvents{w}, nil
	}
	body, err := s.rest.Get().Namespace(s.r.namespace).Resource(s.r.resource).
		VersionedParams(&o, scheme.ParameterCodec).
		SetHeader("Accept", runtime.ContentTypeProtobuf). // one type, so the stream's is known
		Stream(ctx)
	if err != nil {
		return nil, err
	}
	return &streamEvents{body: body}, nil
}

// protobufStream tells whether client-go's scheme can decode protobuf
// (nil if it has no such serializer: watches then go through Watch).
var protobufStream = func() *runtime.StreamSerializerInfo {
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		return nil
	}
	return info.StreamSerializer
}()

// maxWatchFrame is the largest watch frame read, as client-go's streaming
// decoder's limit.
const maxWatchFrame = 16 << 20

// streamEvents reads a protobuf watch stream in the watch's goroutine:
// frames of a 4-byte big-endian length and a metav1.WatchEvent, whose
// object is decoded with client-go's scheme, as client-go's rest/watch
// Decoder does. It reads the frames itself, not through that Decoder and
// its streaming decoder and frame reader, whose frames would sit on the
// goroutine's stack for as long as it waits (see run). The request's
// context ends the read.
type streamEvents struct {
	body io.ReadCloser
	head [4]byte
	buf  []byte // the last frame's bytes, reused (decoding copies out)
}

func (s *streamEvents) next(context.Context) (watch.EventType, runtime.Object, error) {
	if _, err := io.ReadFull(s.body, s.head[:]); err != nil {
		return "", nil, err
	}
	return s.decode()
}

// decode reads the frame whose length s.head holds and decodes its event.
//
//go:noinline
func (s *streamEvents) decode() (watch.EventType, runtime.Object, error) {
	n := binary.BigEndian.Uint32(s.head[:])
	if n > maxWatchFrame {
		return "", nil, fmt.Errorf("watch frame of %d bytes is larger than %d", n, maxWatchFrame)
	}
	if uint32(cap(s.buf)) < n {
		s.buf = make([]byte, n)
	}
	b := s.buf[:n]
	if _, err := io.ReadFull(s.body, b); err != nil {
		if err == io.EOF {
			err = io.ErrUnexpectedEOF
		}
		return "", nil, err
	}
	var ev metav1.WatchEvent
	if err := ev.Unmarshal(b); err != nil {
		return "", nil, fmt.Errorf("decoding watch event: %w", err)
	}
	obj, err := runtime.Decode(scheme.Codecs.UniversalDeserializer(), ev.Object.Raw)
	if err != nil {
		return "", nil, fmt.Errorf("decoding watch event object: %w", err)
	}
	switch t := watch.EventType(ev.Type); t {
	case watch.Added, watch.Modified, watch.Deleted, watch.Error, watch.Bookmark:
		return t, obj, nil
	}
	return "", nil, fmt.Errorf("got invalid watch event type: %v", ev.Type)
}

func (s *streamEvents) close() { s.body.Close() }

// watcherEvents reads a watch.Interface (fake clientsets).
type watcherEvents struct{ w watch.Interface }

func (e watcherEvents) next(ctx context.Context) (watch.EventType, runtime.Object, error) {
	select {
	case ev, ok := <-e.w.ResultChan():
		if !ok {
			return "", nil, errWatchClosed
		}
		return ev.Type, ev.Object, nil
	case <-ctx.Done():
		return "", nil, ctx.Err()
	}
}

func (e watcherEvents) close() { e.w.Stop() }

var errWatchClosed = errors.New("watch closed")
