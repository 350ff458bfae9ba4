package faults

import (
	"bytes"
	"encoding/json"
	"io"
	"net/http"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// WatchFault is what a component's watches suffer: the stale-state and
// unobserved-state faults of issue 6 (published as the classes that found
// most controller bugs in Sieve and Acto).
type WatchFault struct {
	// Delay holds every watch event this long after it arrived before the
	// component sees it: the component acts on a lagging cache.
	Delay time.Duration
	// Coalesce drops a MODIFIED event when a later MODIFIED event of the
	// same object is already waiting behind it: the component never sees
	// that intermediate state (as after a relist), only the later one.
	Coalesce bool
}

// TransportEnvVar arms the transport hooks in a process started outside a
// test (any non-empty value).
const TransportEnvVar = "KUBEPROOF_FAULT_TRANSPORT"

var (
	armed       atomic.Bool
	watchMu     sync.Mutex
	watchFaults = map[string]WatchFault{}
	delivered   atomic.Int64
	coalesced   atomic.Int64

	observerMu sync.Mutex
	observer   func(Delivery)
	writeMu    sync.Mutex
	writeMax   = map[string]time.Duration{}
)

// Delivery is one watch event a wrapped transport handed to its component.
type Delivery struct {
	Component       string
	Type            string // ADDED, MODIFIED, DELETED, BOOKMARK, ERROR
	Namespace, Name string
	ResourceVersion string // of the event's object
	At              time.Time
	// Initial marks the initial events of a watch that asked for them
	// (sendInitialEvents=true, client-go's watch-list, which replaces a
	// list): they carry the current state with each object's last
	// resourceVersion, however old, so they say nothing about delivery lag.
	Initial bool
}

// ObserveDeliveries calls f with every watch event wrapped transports
// deliver from now on (after any WatchFault delay), from the delivering
// goroutine; f must be quick. It returns a function that stops the calls.
// The property harness uses it to measure how far each component's view
// lags behind its recorder.
func ObserveDeliveries(f func(Delivery)) (stop func()) {
	observerMu.Lock()
	observer = f
	observerMu.Unlock()
	return func() {
		observerMu.Lock()
		observer = nil
		observerMu.Unlock()
	}
}

func observeDelivery(d Delivery) {
	observerMu.Lock()
	f := observer
	observerMu.Unlock()
	if f != nil {
		f(d)
	}
}

// MaxWriteLatency returns the longest round trip of a write (POST, PUT,
// PATCH, DELETE) a wrapped transport of component has carried, and resets
// it.
func MaxWriteLatency(component string) time.Duration {
	writeMu.Lock()
	defer writeMu.Unlock()
	d := writeMax[component]
	delete(writeMax, component)
	return d
}

func isWrite(req *http.Request) bool {
	switch req.Method {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

func init() {
	if os.Getenv(TransportEnvVar) != "" {
		armed.Store(true)
	}
}

// ArmTransports makes WrapTransport wrap the transports built after it:
// tests call it before starting a cluster. Unarmed, WrapTransport returns
// the transport unchanged, so a production process pays nothing.
func ArmTransports() { armed.Store(true) }

// SetWatchFault sets the watch fault of component (the name its client
// was wrapped with) and returns a function clearing it. It applies at once,
// also to watches already open.
func SetWatchFault(component string, f WatchFault) (clear func()) {
	watchMu.Lock()
	watchFaults[component] = f
	watchMu.Unlock()
	return func() {
		watchMu.Lock()
		delete(watchFaults, component)
		watchMu.Unlock()
	}
}

func watchFault(component string) WatchFault {
	watchMu.Lock()
	defer watchMu.Unlock()
	return watchFaults[component]
}

// WatchStats returns how many watch events wrapped transports delivered
// and how many they dropped as coalesced.
func WatchStats() (deliveredEvents, coalescedEvents int64) {
	return delivered.Load(), coalesced.Load()
}

// WrapTransport returns a transport wrapper (rest.Config.Wrap) for
// component's client: JSON watch responses pass through a queue that
// applies the component's current WatchFault. Other requests are
// untouched.
func WrapTransport(component string) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		if !armed.Load() {
			return rt
		}
		return &faultTransport{component: component, next: rt}
	}
}

type faultTransport struct {
	component string
	next      http.RoundTripper
}

func (t *faultTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if isWatch(req) {
		// Typed clientsets ask for protobuf first; the queue re-frames
		// JSON events, and the client decodes by the response's
		// Content-Type. Other parameters (as=PartialObjectMetadata) stay.
		req = req.Clone(req.Context())
		req.Header.Set("Accept", jsonOnly(req.Header.Get("Accept")))
	}
	start := time.Now()
	resp, err := t.next.RoundTrip(req)
	if isWrite(req) {
		took := time.Since(start)
		writeMu.Lock()
		writeMax[t.component] = max(writeMax[t.component], took)
		writeMu.Unlock()
	}
	if err != nil || resp.StatusCode != http.StatusOK || !isWatch(req) ||
		!strings.HasPrefix(resp.Header.Get("Content-Type"), "application/json") {
		return resp, err
	}
	resp.Body = newFaultBody(t.component, resp.Body, req.URL.Query().Get("sendInitialEvents") == "true")
	return resp, nil
}

func isWatch(req *http.Request) bool {
	w := req.URL.Query().Get("watch")
	return w == "true" || w == "1"
}

// watchEvent is one frame of a JSON watch stream.
type watchEvent struct {
	Type   string          `json:"type"`
	Object json.RawMessage `json:"object"`
}

type queued struct {
	at        time.Time
	initial   bool // before the initial-events-end bookmark
	typ       string
	namespace string
	name      string
	rv        string
	raw       []byte
}

// faultBody re-frames a watch stream through a queue: one goroutine
// decodes events from the server into the queue, another writes them to
// the component after the fault's delay, dropping superseded ones.
type faultBody struct {
	component string
	src       io.ReadCloser
	pr        *io.PipeReader
	pw        *io.PipeWriter
	done      chan struct{}
	wg        sync.WaitGroup
	closeOnce sync.Once

	mu      sync.Mutex
	initial bool // still in the initial events of a watch-list
	queue   []queued
	ended   error // set when the source ended
	notify  chan struct{}
}

func newFaultBody(component string, src io.ReadCloser, initialEvents bool) *faultBody {
	pr, pw := io.Pipe()
	b := &faultBody{component: component, src: src, pr: pr, pw: pw, done: make(chan struct{}), notify: make(chan struct{}, 1),
		initial: initialEvents}
	b.wg.Add(2)
	go b.readEvents()
	go b.writeEvents()
	return b
}

func (b *faultBody) Read(p []byte) (int, error) { return b.pr.Read(p) }

// Close stops both goroutines and waits for them.
func (b *faultBody) Close() error {
	var err error
	b.closeOnce.Do(func() {
		close(b.done)
		err = b.src.Close()
		_ = b.pr.Close()
		b.wg.Wait()
	})
	return err
}

func (b *faultBody) signal() {
	select {
	case b.notify <- struct{}{}:
	default:
	}
}

func (b *faultBody) readEvents() {
	defer b.wg.Done()
	dec := json.NewDecoder(b.src)
	for {
		var ev watchEvent
		err := dec.Decode(&ev)
		if err != nil {
			b.mu.Lock()
			b.ended = err
			b.mu.Unlock()
			b.signal()
			return
		}
		raw, _ := json.Marshal(ev)
		var meta struct {
			Metadata struct {
				Namespace, Name string
				ResourceVersion string            `json:"resourceVersion"`
				Annotations     map[string]string `json:"annotations"`
			} `json:"metadata"`
		}
		_ = json.Unmarshal(ev.Object, &meta)
		md := meta.Metadata
		b.mu.Lock()
		b.queue = append(b.queue, queued{at: time.Now(), initial: b.initial, typ: ev.Type, namespace: md.Namespace, name: md.Name, rv: md.ResourceVersion, raw: append(raw, '\n')})
		if ev.Type == "BOOKMARK" && md.Annotations[metav1.InitialEventsAnnotationKey] == "true" {
			b.initial = false
		}
		b.mu.Unlock()
		b.signal()
	}
}

func (b *faultBody) writeEvents() {
	defer b.wg.Done()
	for {
		b.mu.Lock()
		if len(b.queue) == 0 {
			ended := b.ended
			b.mu.Unlock()
			if ended != nil {
				if ended == io.EOF {
					_ = b.pw.Close()
				} else {
					_ = b.pw.CloseWithError(ended)
				}
				return
			}
			select {
			case <-b.notify:
				continue
			case <-b.done:
				return
			}
		}
		head := b.queue[0]
		b.mu.Unlock()
		f := watchFault(b.component)
		if wait := time.Until(head.at.Add(f.Delay)); wait > 0 {
			timer := time.NewTimer(wait)
			select {
			case <-timer.C:
			case <-b.done:
				timer.Stop()
				return
			}
			continue // the fault may have changed meanwhile
		}
		b.mu.Lock()
		b.queue = b.queue[1:]
		superseded := false
		if f.Coalesce && head.typ == "MODIFIED" {
			for _, q := range b.queue {
				if q.namespace == head.namespace && q.name == head.name && q.typ == "MODIFIED" {
					superseded = true
					break
				}
			}
		}
		b.mu.Unlock()
		if superseded {
			coalesced.Add(1)
			continue
		}
		if _, err := io.Copy(b.pw, bytes.NewReader(head.raw)); err != nil {
			return
		}
		delivered.Add(1)
		observeDelivery(Delivery{Component: b.component, Type: head.typ, Namespace: head.namespace, Name: head.name,
			ResourceVersion: head.rv, At: time.Now(), Initial: head.initial})
	}
}

// jsonOnly drops the protobuf media ranges of an Accept header.
func jsonOnly(accept string) string {
	var keep []string
	for _, r := range strings.Split(accept, ",") {
		if r = strings.TrimSpace(r); r != "" && !strings.HasPrefix(r, "application/vnd.kubernetes.protobuf") {
			keep = append(keep, r)
		}
	}
	if len(keep) == 0 || !strings.HasPrefix(keep[0], "application/json") {
		keep = append([]string{"application/json"}, keep...)
	}
	return strings.Join(keep, ",")
}
