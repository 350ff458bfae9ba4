package kubelet

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"mime"
	"net/http"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
)

// The shared pod informer's watch (podListWatch) reads the API server's
// protobuf watch stream with its own decoder, podWatchDecoder, instead of
// client-go's. client-go's copies every event's bytes twice before the pod
// is decoded from them: the frame into the WatchEvent's RawExtension, then
// the object out of the runtime.Unknown envelope. At 30,000 pods every pod
// arrives about four times (created, bound, Running, later writes); the two
// copies were ~200 MB of garbage in a 300 x 9,000 startup run, a quarter
// of the watch's. podWatchDecoder reads each frame into one reused buffer
// and decodes the pod straight from its place in it (Pod.Unmarshal copies
// every string and byte slice it keeps, so nothing refers to the buffer
// afterwards). It also leaves out the pods' managedFields, which
// NewPodInformer's transform drops anyway (sourceTransform): their
// entries and FieldsV1 bytes were a fifth of what a pod's decode
// allocated. Anything but a plain v1 Pod (a Status in an ERROR event, an
// encoded or unknown object) goes to client-go's decoder, as before.
//
// Only a 200 answer with a protobuf watch stream is read this way; any
// other answer, or a failed request, is left to client-go's own Watch,
// which asks again and turns the answer into the same errors and retries
// as it always did (the second request costs only on failures).

// protobufWatchType is the media type of the API server's protobuf watch
// stream (length-prefixed frames).
const protobufWatchType = "application/vnd.kubernetes.protobuf;stream=watch"

// maxWatchFrame is the largest frame read, as client-go's streaming
// decoder's limit.
const maxWatchFrame = 16 * 1024 * 1024

// k8sProtobufMagic starts every object in the protobuf envelope.
var k8sProtobufMagic = []byte{0x6b, 0x38, 0x73, 0x00}

// podListWatch is the ListWatch of every pod that NewPodInformer uses:
// lists as client-go's pod informer does, watches with podWatch.
func podListWatch(client kubernetes.Interface) cache.ListerWatcher {
	pods := client.CoreV1().Pods(metav1.NamespaceAll)
	return cache.ToListWatcherWithWatchListSemantics(&cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return pods.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return podWatch(ctx, client, opts)
		},
	}, client)
}

// podWatch starts a watch of every pod, decoded by podWatchDecoder when
// the client talks to an API server over HTTP and it answers with a
// protobuf watch stream; otherwise (a fake clientset, an error, another
// media type) it is client-go's Watch.
func podWatch(ctx context.Context, client kubernetes.Interface, opts metav1.ListOptions) (watch.Interface, error) {
	standard := func() (watch.Interface, error) {
		return client.CoreV1().Pods(metav1.NamespaceAll).Watch(ctx, opts)
	}
	rc, ok := client.CoreV1().RESTClient().(*rest.RESTClient)
	if !ok || rc == nil || rc.Client == nil {
		return standard()
	}
	opts.Watch = true
	req := rc.Get().Resource("pods").VersionedParams(&opts, scheme.ParameterCodec)
	if opts.TimeoutSeconds != nil {
		req = req.Timeout(time.Duration(*opts.TimeoutSeconds) * time.Second) // as client-go's Watch
	}
	if err := req.Error(); err != nil {
		return standard()
	}
	hreq, err := http.NewRequestWithContext(ctx, http.MethodGet, req.URL().String(), nil)
	if err != nil {
		return standard()
	}
	hreq.Header.Set("Accept", runtime.ContentTypeProtobuf)
	resp, err := rc.Client.Do(hreq)
	if err != nil {
		return standard()
	}
	if resp.StatusCode != http.StatusOK || !isProtobufWatch(resp.Header.Get("Content-Type")) {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64*1024))
		_ = resp.Body.Close()
		return standard()
	}
	return watch.NewStreamWatcher(newPodWatchDecoder(resp.Body),
		apierrors.NewClientErrorReporter(http.StatusInternalServerError, http.MethodGet, "ClientWatchDecoding")), nil
}

// isProtobufWatch reports whether contentType is the protobuf watch
// stream's.
func isProtobufWatch(contentType string) bool {
	mediaType, params, err := mime.ParseMediaType(contentType)
	return err == nil && mediaType == runtime.ContentTypeProtobuf && params["stream"] == "watch"
}

// podWatchDecoder decodes a protobuf watch stream of pods (see above).
type podWatchDecoder struct {
	body    io.ReadCloser
	buf     []byte // the current frame; reused
	trimmed []byte // the current pod without managedFields; reused
}

func newPodWatchDecoder(body io.ReadCloser) *podWatchDecoder {
	return &podWatchDecoder{body: body}
}

// fallbackDecoder decodes what is not a plain pod, as client-go's typed
// clients do (no conversion, the kind cleared).
var fallbackDecoder = func() runtime.Decoder {
	codecs := scheme.Codecs.WithoutConversion()
	info, ok := runtime.SerializerInfoForMediaType(codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok {
		panic("client-go's scheme has no protobuf serializer")
	}
	return codecs.DecoderToVersion(info.Serializer, v1.SchemeGroupVersion)
}()

// Decode returns the next event. The end of the stream between frames is
// io.EOF; within one, io.ErrUnexpectedEOF.
func (d *podWatchDecoder) Decode() (watch.EventType, runtime.Object, error) {
	frame, err := d.readFrame()
	if err != nil {
		return "", nil, err
	}
	typ, raw, err := parseWatchEvent(frame)
	if err != nil {
		return "", nil, err
	}
	switch watch.EventType(typ) {
	case watch.Added, watch.Modified, watch.Deleted, watch.Error, watch.Bookmark:
	default:
		return "", nil, fmt.Errorf("got invalid watch event type: %v", typ)
	}
	obj, err := d.decodeObject(raw)
	if err != nil {
		return "", nil, fmt.Errorf("unable to decode watch event: %w", err)
	}
	return watch.EventType(typ), obj, nil
}

// Close closes the stream.
func (d *podWatchDecoder) Close() { _ = d.body.Close() }

func (d *podWatchDecoder) readFrame() ([]byte, error) {
	var hdr [4]byte
	if _, err := io.ReadFull(d.body, hdr[:]); err != nil {
		return nil, err
	}
	n := binary.BigEndian.Uint32(hdr[:])
	if n > maxWatchFrame {
		return nil, fmt.Errorf("watch frame of %d bytes exceeds the limit of %d", n, maxWatchFrame)
	}
	if uint32(cap(d.buf)) < n {
		d.buf = make([]byte, n)
	}
	frame := d.buf[:n]
	if _, err := io.ReadFull(d.body, frame); err != nil {
		if errors.Is(err, io.EOF) {
			err = io.ErrUnexpectedEOF
		}
		return nil, err
	}
	return frame, nil
}

// decodeObject decodes one watch event's object: a v1 Pod in the plain
// protobuf envelope straight from raw (without its managedFields), anything
// else with client-go's decoder. The pod's kind is left empty, as
// client-go's decoder leaves it.
func (d *podWatchDecoder) decodeObject(raw []byte) (runtime.Object, error) {
	if body, ok := plainPodEnvelope(raw); ok {
		body = withoutManagedFields(body, &d.trimmed)
		p := new(v1.Pod)
		if err := p.Unmarshal(body); err != nil {
			return nil, err
		}
		return p, nil
	}
	obj, _, err := fallbackDecoder.Decode(raw, nil, nil)
	return obj, err
}

// plainPodEnvelope returns the pod's bytes if raw is a v1 Pod in the
// protobuf envelope (magic, then runtime.Unknown: typeMeta = 1 {apiVersion
// = 1, kind = 2}, raw = 2, contentEncoding = 3, contentType = 4) with no
// content encoding or type.
func plainPodEnvelope(raw []byte) ([]byte, bool) {
	if len(raw) < len(k8sProtobufMagic) || string(raw[:len(k8sProtobufMagic)]) != string(k8sProtobufMagic) {
		return nil, false
	}
	var apiVersion, kind, body []byte
	rest := raw[len(k8sProtobufMagic):]
	for len(rest) > 0 {
		num, val, next, ok := nextBytesField(rest)
		if !ok {
			return nil, false
		}
		rest = next
		switch num {
		case 1:
			tm := val
			for len(tm) > 0 {
				n, v, tmNext, ok := nextBytesField(tm)
				if !ok {
					return nil, false
				}
				tm = tmNext
				switch n {
				case 1:
					apiVersion = v
				case 2:
					kind = v
				}
			}
		case 2:
			body = val
		case 3, 4:
			if len(val) > 0 {
				return nil, false
			}
		}
	}
	if string(apiVersion) != "v1" || string(kind) != "Pod" || body == nil {
		return nil, false
	}
	return body, true
}

// withoutManagedFields returns pod, a v1.Pod's bytes, with its metadata's
// managedFields (ObjectMeta field 17) left out, written into *scratch; pod
// itself if it has none or is not as expected (Unmarshal then reads it
// whole).
func withoutManagedFields(pod []byte, scratch *[]byte) []byte {
	const metadataField, managedFieldsField = 1, 17
	// Find the metadata and whether it has managed fields.
	var meta []byte
	rest := pod
	for len(rest) > 0 {
		num, val, next, ok := nextBytesField(rest)
		if !ok {
			return pod
		}
		if num == metadataField {
			if meta != nil {
				return pod // a repeated message field: leave merging to Unmarshal
			}
			meta = val
		}
		rest = next
	}
	var kept int
	found := false
	for m := meta; len(m) > 0; {
		num, _, next, ok := nextBytesField(m)
		if !ok {
			return pod
		}
		if num == managedFieldsField {
			found = true
		} else {
			kept += len(m) - len(next)
		}
		m = next
	}
	if !found {
		return pod
	}
	out := (*scratch)[:0]
	for rest := pod; len(rest) > 0; {
		num, _, next, _ := nextBytesField(rest)
		field := rest[:len(rest)-len(next)]
		rest = next
		if num != metadataField {
			out = append(out, field...)
			continue
		}
		out = binary.AppendUvarint(out, metadataField<<3|2)
		out = binary.AppendUvarint(out, uint64(kept))
		for m := meta; len(m) > 0; {
			n, _, mNext, _ := nextBytesField(m)
			if n != managedFieldsField {
				out = append(out, m[:len(m)-len(mNext)]...)
			}
			m = mNext
		}
	}
	*scratch = out
	return out
}

// parseWatchEvent reads a metav1.WatchEvent (type = 1, object = 2 {raw =
// 1}) without copying: raw is a slice of frame.
func parseWatchEvent(frame []byte) (typ string, raw []byte, err error) {
	rest := frame
	for len(rest) > 0 {
		num, val, next, ok := nextBytesField(rest)
		if !ok {
			return "", nil, errors.New("unable to decode to metav1.WatchEvent")
		}
		rest = next
		switch num {
		case 1:
			typ = string(val)
		case 2:
			ext := val
			for len(ext) > 0 {
				n, v, extNext, ok := nextBytesField(ext)
				if !ok {
					return "", nil, errors.New("unable to decode to metav1.WatchEvent")
				}
				ext = extNext
				if n == 1 {
					raw = v
				}
			}
		}
	}
	return typ, raw, nil
}

// nextBytesField reads the field at the start of b, which must be
// length-delimited (wire type 2, all the fields read here) or a varint
// (skipped, val nil). ok is false for anything else or a truncated field.
func nextBytesField(b []byte) (num int, val, rest []byte, ok bool) {
	key, n := binary.Uvarint(b)
	if n <= 0 {
		return 0, nil, nil, false
	}
	b = b[n:]
	num = int(key >> 3)
	switch key & 7 {
	case 0:
		_, m := binary.Uvarint(b)
		if m <= 0 {
			return 0, nil, nil, false
		}
		return num, nil, b[m:], true
	case 2:
		l, m := binary.Uvarint(b)
		if m <= 0 || l > uint64(len(b)-m) {
			return 0, nil, nil, false
		}
		b = b[m:]
		return num, b[:l], b[l:], true
	}
	return 0, nil, nil, false
}
