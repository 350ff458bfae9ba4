package endpoints

import (
	"bytes"
	"fmt"
	"net/http/httptest"
	"strconv"
	"testing"

	corev1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

// Watchers of one resource sent the same event object share its encoding:
// the second watcher's frame is the first's, from the encoding the first
// kept, and a watcher in another media type encodes its own.
func TestWatchersShareAnEventsEncoding(t *testing.T) {
	h := podHandler(t)
	writer := func(accept string) *eventWriter {
		r := httptest.NewRequest("GET", "/api/v1/pods?watch=true", nil)
		r.Header.Set("Accept", accept)
		target, err := h.opts.Codecs.Negotiate(r, objectConversions, true)
		if err != nil {
			t.Fatal(err)
		}
		return newEventWriter(h, target, nil)
	}
	r := httptest.NewRequest("GET", "/api/v1/pods?watch=true", nil)
	first, second, jsonWatcher := writer(codec.Protobuf), writer(codec.Protobuf), writer(codec.JSON)
	pod := runningPod()
	ev := watch.Event{Type: watch.Modified, Object: pod}
	f1, err := first.encode(r, ev)
	if err != nil {
		t.Fatal(err)
	}
	f1 = bytes.Clone(f1)
	kept := h.encodings.get(pod, first.target.Info.Serializer.Identifier())
	if kept == nil {
		t.Fatal("the first watcher's encoding was not kept")
	}
	if h.encodings.get(pod, jsonWatcher.target.Info.Serializer.Identifier()) != nil {
		t.Fatal("a protobuf encoding is kept as the JSON one")
	}
	f2, err := second.encode(r, watch.Event{Type: watch.Added, Object: pod})
	if err != nil {
		t.Fatal(err)
	}
	// A WatchEvent's object is its last field: both frames end with it.
	if !bytes.HasSuffix(f1, kept) || !bytes.HasSuffix(f2, kept) || !bytes.Contains(f2, []byte("ADDED")) {
		t.Fatal("the second watcher did not send the kept encoding")
	}
	fj, err := jsonWatcher.encode(r, ev)
	if err != nil || !bytes.HasPrefix(fj, []byte(`{"type":"MODIFIED","object":{"kind":"Pod"`)) {
		t.Fatalf("JSON watcher's frame %.60q, %v", fj, err)
	}
	// A bookmark is made per watcher and never kept.
	bm := watch.Event{Type: watch.Bookmark, Object: &corev1.PartialObjectMetadata{}}
	if _, err := first.encode(r, bm); err != nil {
		t.Fatal(err)
	}
	if h.encodings.get(bm.Object, first.target.Info.Serializer.Identifier()) != nil {
		t.Fatal("a bookmark's encoding was kept")
	}
}

// The kept encodings are the latest sharedEncodingEntries; older ones are
// dropped (with the objects they hold).
func TestSharedEncodingsKeepTheLatest(t *testing.T) {
	s := newSharedEncodings()
	pods := make([]*corev1.PartialObjectMetadata, sharedEncodingEntries+10)
	for i := range pods {
		pods[i] = &corev1.PartialObjectMetadata{}
		s.put(pods[i], "protobuf", []byte(strconv.Itoa(i)))
	}
	if len(s.entries) != sharedEncodingEntries {
		t.Fatalf("%d entries kept, want %d", len(s.entries), sharedEncodingEntries)
	}
	for i, p := range pods {
		raw := s.get(p, "protobuf")
		if kept := i >= 10; kept != (raw != nil) || (kept && string(raw) != strconv.Itoa(i)) {
			t.Fatalf("entry %d: %q, kept %v", i, raw, kept)
		}
	}
}

// Watchers encoding the same events at the same time (each watch has its
// own goroutine) each send every event's own encoding.
func TestConcurrentWatchersShareEncodings(t *testing.T) {
	h := podHandler(t)
	r := httptest.NewRequest("GET", "/api/v1/pods?watch=true", nil)
	r.Header.Set("Accept", codec.Protobuf)
	target, err := h.opts.Codecs.Negotiate(r, objectConversions, true)
	if err != nil {
		t.Fatal(err)
	}
	events := make([]watch.Event, 50)
	want := make([][]byte, len(events))
	alone := &eventWriter{h: &Handler{res: h.res, opts: h.opts}, target: target}
	for i := range events {
		pod := runningPod()
		pod.ResourceVersion = strconv.Itoa(i + 1)
		events[i] = watch.Event{Type: watch.Modified, Object: pod}
		frame, err := alone.encode(r, events[i])
		if err != nil {
			t.Fatal(err)
		}
		want[i] = bytes.Clone(frame)
	}
	errs := make(chan error, 8)
	for range 8 {
		go func() {
			ew := newEventWriter(h, target, nil)
			for i, ev := range events {
				frame, err := ew.encode(r, ev)
				if err == nil && !bytes.Equal(frame, want[i]) {
					err = fmt.Errorf("event %d: the frame differs from the event's own encoding", i)
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range 8 {
		if err := <-errs; err != nil {
			t.Fatal(err)
		}
	}
}
