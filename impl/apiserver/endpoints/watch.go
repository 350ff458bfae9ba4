package endpoints

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand/v2"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// watch streams events as metav1.WatchEvent: newline-delimited JSON, or
// protobuf frames each prefixed by its 4-byte big-endian length.
//
// The work is split in two so that what stays on the goroutine's stack for
// the watch's life is small: startWatch (options, the store's watch, the
// response header) returns before the events flow, and stream, which waits
// for them, has a frame of a few words. A watch's goroutine sits under the
// whole filter chain for minutes; the runtime halves an idle goroutine's
// stack only while it uses under a quarter of it, so every kilobyte parked
// here decides whether each watch (one per node and object, thousands in
// kubeproof up) keeps 8 KiB or 16 KiB of stack.
func (h *Handler) watch(w http.ResponseWriter, r *http.Request, info *request.Info) error {
	ws, err := h.startWatch(w, r, info)
	if err != nil {
		return err
	}
	defer ws.stop()
	ws.stream(w, r)
	return nil
}

// watchStream is a started watch: the store's watch, what ends it, and
// the writer of its frames.
type watchStream struct {
	ew      *eventWriter
	ctx     context.Context
	cancel  context.CancelFunc
	wi      watch.Interface
	done    func() // WatchStarted's, or nil
	flusher http.Flusher
}

// startWatch opens the store's watch for r and writes the response header.
//
//go:noinline
func (h *Handler) startWatch(w http.ResponseWriter, r *http.Request, info *request.Info) (*watchStream, error) {
	target, err := h.opts.Codecs.Negotiate(r, objectConversions, true)
	if err != nil {
		return nil, err
	}
	topts, err := tableOptions(r)
	if err != nil {
		return nil, err
	}
	opts, sopts, err := h.listOptions(r, info, true)
	if err != nil {
		return nil, err
	}
	key, err := h.listKey(info.Namespace)
	if err != nil {
		return nil, err
	}
	timeout := h.watchTimeout(opts.TimeoutSeconds)
	ctx, cancel := contextWithTimeout(r.Context(), timeout)
	wi, err := h.store.Watch(ctx, key, sopts)
	if err != nil {
		cancel()
		return nil, err
	}
	ws := &watchStream{ew: newEventWriter(h, target, topts), ctx: ctx, cancel: cancel, wi: wi}
	if h.opts.WatchStarted != nil {
		ws.done = h.opts.WatchStarted(info)
	}

	ct := target.ContentType
	if target.MediaType != codec.JSON {
		ct += ";stream=watch"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	ws.flusher, _ = w.(http.Flusher)
	if ws.flusher != nil {
		ws.flusher.Flush()
	}
	return ws, nil
}

// stop ends the store's watch and releases what startWatch took.
func (ws *watchStream) stop() {
	if ws.done != nil {
		ws.done()
	}
	ws.wi.Stop()
	ws.cancel()
}

// stream writes the watch's events to w until the watch, the request or
// the connection ends.
func (ws *watchStream) stream(w http.ResponseWriter, r *http.Request) {
	for {
		select {
		case <-ws.ctx.Done():
			return
		case ev, ok := <-ws.wi.ResultChan():
			if !ok || !ws.send(w, r, ev) {
				return
			}
		}
	}
}

// send writes ev's frame, flushing when no further event waits; false when
// the watch must end.
//
//go:noinline
func (ws *watchStream) send(w http.ResponseWriter, r *http.Request, ev watch.Event) bool {
	frame, err := ws.ew.encode(r, ev)
	if err != nil {
		// Nothing more can be said on a started stream but an
		// ERROR event; end the watch so the client re-establishes it.
		return false
	}
	if _, err := w.Write(frame); err != nil {
		return false
	}
	if len(ws.wi.ResultChan()) == 0 && ws.flusher != nil {
		ws.flusher.Flush()
	}
	return true
}

// watchTimeout is timeoutSeconds when given, else a random duration in
// [MinRequestTimeout, 2*MinRequestTimeout) as kube-apiserver does.
func (h *Handler) watchTimeout(timeoutSeconds *int64) time.Duration {
	if timeoutSeconds != nil && *timeoutSeconds > 0 {
		return time.Duration(*timeoutSeconds) * time.Second
	}
	min := h.opts.MinRequestTimeout
	if min <= 0 {
		min = 30 * time.Minute
	}
	return min + time.Duration(rand.Int64N(int64(min)))
}

// eventWriter encodes one watch's events into stream frames. Its buffers
// live as long as the watch: the frame it returns is valid until the next
// encode (the response writer has copied or sent it by then), so a stream
// of events of about the same size allocates nothing for them but the
// copy of an encoding kept for other watchers (sharedEncodings). The frame
// buffer is the watch's own, not pooled: a write that failed may leave it
// referenced by the connection.
type eventWriter struct {
	h      *Handler
	target codec.Target
	topts  *metav1.TableOptions
	sent   int
	buf    bytes.Buffer // the encoded object
	frame  []byte       // the last frame returned
	// allocEncoder is the target's serializer when it takes an allocator:
	// its encode buffer comes from runtime.AllocatorPool for one encode
	// at a time (kube-apiserver's watch takes one from the pool too), so
	// an idle watch holds none.
	allocEncoder runtime.EncoderWithAllocator
}

func newEventWriter(h *Handler, target codec.Target, topts *metav1.TableOptions) *eventWriter {
	ew := &eventWriter{h: h, target: target, topts: topts}
	if enc, ok := target.Info.Serializer.(runtime.EncoderWithAllocator); ok {
		ew.allocEncoder = enc
	}
	return ew
}

// encode returns ev's frame: for protobuf a 4-byte big-endian length and a
// metav1.WatchEvent, for JSON one line of {"type":..,"object":..}.
func (ew *eventWriter) encode(r *http.Request, ev watch.Event) ([]byte, error) {
	obj := ev.Object
	var err error
	switch {
	case ev.Type == watch.Error:
		if st, ok := obj.(*metav1.Status); ok {
			st.Kind, st.APIVersion = "Status", "v1"
		} else {
			obj = &metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
				Status: metav1.StatusFailure, Code: http.StatusInternalServerError,
				Reason: metav1.StatusReasonInternalError, Message: fmt.Sprintf("watch error: %v", obj)}
		}
	case ew.target.As == "Table":
		topts := *ew.topts
		topts.NoHeaders = ew.sent > 0
		if ev.Type == watch.Bookmark {
			// a bookmark carries only its resourceVersion.
			tbl := &metav1.Table{}
			tbl.ResourceVersion = accessor(obj).GetResourceVersion()
			tbl.SetGroupVersionKind(metav1.SchemeGroupVersion.WithKind("Table"))
			tbl.APIVersion = metaGroup + "/" + ew.target.Version
			obj = tbl
		} else {
			obj, err = ew.h.asTable(r.Context(), ew.target, obj, &topts)
		}
	default:
		obj, err = ew.h.render(r.Context(), ew.target, obj, ew.topts)
	}
	if err != nil {
		return nil, err
	}
	ew.sent++
	raw, err := ew.encodeObject(ev, obj)
	if err != nil {
		return nil, err
	}
	if ew.target.MediaType == codec.Protobuf {
		event := metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}
		size := event.Size()
		frame := ew.frameBuffer(4 + size)
		binary.BigEndian.PutUint32(frame, uint32(size))
		if _, err := event.MarshalToSizedBuffer(frame[4:]); err != nil {
			return nil, err
		}
		return frame, nil
	}
	out := ew.frameBuffer(len(raw) + 32)[:0]
	out = append(out, `{"type":`...)
	out = strconv.AppendQuote(out, string(ev.Type))
	out = append(out, `,"object":`...)
	out = append(out, raw...)
	out = append(out, "}\n"...)
	ew.frame = out
	return out, nil
}

// encodeObject is obj's encoding (without a trailing newline): another
// watcher's of the same event when there is one (sharedEncodings), else
// its own, shared if the object is.
func (ew *eventWriter) encodeObject(ev watch.Event, obj runtime.Object) ([]byte, error) {
	shared := ew.h.encodings
	if shared != nil && !shareable(ev, obj) {
		shared = nil
	}
	id := ew.target.Info.Serializer.Identifier()
	if shared != nil {
		if raw := shared.get(obj, id); raw != nil {
			return raw, nil
		}
	}
	ew.buf.Reset()
	var err error
	if ew.allocEncoder != nil {
		alloc := runtime.AllocatorPool.Get().(*runtime.Allocator)
		err = ew.allocEncoder.EncodeWithAllocator(obj, &ew.buf, alloc)
		runtime.AllocatorPool.Put(alloc)
	} else {
		err = ew.target.Info.Serializer.Encode(obj, &ew.buf)
	}
	if err != nil {
		return nil, err
	}
	raw := bytes.TrimRight(ew.buf.Bytes(), "\n")
	if shared != nil {
		raw = bytes.Clone(raw)
		shared.put(obj, id, raw)
	}
	return raw, nil
}

// frameBuffer returns the frame buffer with length n, grown if needed.
func (ew *eventWriter) frameBuffer(n int) []byte {
	if cap(ew.frame) < n {
		ew.frame = make([]byte, n, n+n/4)
	}
	ew.frame = ew.frame[:n]
	return ew.frame
}
