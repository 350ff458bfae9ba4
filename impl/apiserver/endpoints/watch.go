package endpoints

import (
	"bytes"
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
func (h *Handler) watch(w http.ResponseWriter, r *http.Request, info *request.Info) error {
	target, err := h.opts.Codecs.Negotiate(r, objectConversions, true)
	if err != nil {
		return err
	}
	topts, err := tableOptions(r)
	if err != nil {
		return err
	}
	opts, sopts, err := h.listOptions(r, info, true)
	if err != nil {
		return err
	}
	key, err := h.listKey(info.Namespace)
	if err != nil {
		return err
	}
	timeout := h.watchTimeout(opts.TimeoutSeconds)
	ctx, cancel := contextWithTimeout(r.Context(), timeout)
	defer cancel()
	wi, err := h.store.Watch(ctx, key, sopts)
	if err != nil {
		return err
	}
	defer wi.Stop()
	if h.opts.WatchStarted != nil {
		done := h.opts.WatchStarted(info)
		defer done()
	}

	ct := target.ContentType
	if target.MediaType != codec.JSON {
		ct += ";stream=watch"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(http.StatusOK)
	flusher, _ := w.(http.Flusher)
	if flusher != nil {
		flusher.Flush()
	}
	ew := newEventWriter(h, target, topts)
	for {
		select {
		case <-ctx.Done():
			return nil
		case ev, ok := <-wi.ResultChan():
			if !ok {
				return nil
			}
			frame, err := ew.encode(r, ev)
			if err != nil {
				// Nothing more can be said on a started stream but an
				// ERROR event; end the watch so the client re-establishes it.
				return nil
			}
			if _, err := w.Write(frame); err != nil {
				return nil
			}
			if len(wi.ResultChan()) == 0 && flusher != nil {
				flusher.Flush()
			}
		}
	}
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
