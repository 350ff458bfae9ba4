package endpoints

import (
	"bytes"
	"encoding/binary"
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

// One watch's eventWriter reuses its buffers from frame to frame: each
// frame, larger or smaller than the one before, is exactly the event's own
// encoding (a length-prefixed metav1.WatchEvent, or a JSON line).
func TestEventWriterFramesOfChangingSizes(t *testing.T) {
	h := podHandler(t)
	small := runningPod()
	small.ManagedFields, small.Status = nil, corev1.PodStatus{}
	large := runningPod()
	large.Annotations = map[string]string{"big": strings.Repeat("x", 10_000)}
	events := []watch.Event{
		{Type: watch.Added, Object: small}, {Type: watch.Modified, Object: large},
		{Type: watch.Modified, Object: small}, {Type: watch.Deleted, Object: runningPod()},
		{Type: watch.Bookmark, Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "9"}}},
	}
	for _, accept := range []string{codec.Protobuf, codec.JSON} {
		t.Run(accept, func(t *testing.T) {
			r := httptest.NewRequest("GET", "/api/v1/pods?watch=true", nil)
			r.Header.Set("Accept", accept)
			target, err := h.opts.Codecs.Negotiate(r, objectConversions, true)
			if err != nil {
				t.Fatal(err)
			}
			ew := newEventWriter(h, target, nil)
			var frames [][]byte
			for _, ev := range events {
				frame, err := ew.encode(r, ev)
				if err != nil {
					t.Fatal(err)
				}
				frames = append(frames, bytes.Clone(frame))
			}
			for i, ev := range events {
				var buf bytes.Buffer
				if err := target.Info.Serializer.Encode(ev.Object, &buf); err != nil {
					t.Fatal(err)
				}
				raw := bytes.TrimRight(buf.Bytes(), "\n")
				var want []byte
				if accept == codec.Protobuf {
					data, err := (&metav1.WatchEvent{Type: string(ev.Type), Object: runtime.RawExtension{Raw: raw}}).Marshal()
					if err != nil {
						t.Fatal(err)
					}
					want = binary.BigEndian.AppendUint32(nil, uint32(len(data)))
					want = append(want, data...)
				} else {
					want = []byte(`{"type":"` + string(ev.Type) + `","object":` + string(raw) + "}\n")
				}
				if !bytes.Equal(frames[i], want) {
					t.Errorf("event %d (%s): frame of %d bytes differs from the event's own encoding (%d bytes)", i, ev.Type, len(frames[i]), len(want))
				}
			}
		})
	}
}
