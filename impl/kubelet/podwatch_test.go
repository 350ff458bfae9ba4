package kubelet

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/streaming"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	restclientwatch "k8s.io/client-go/rest/watch"
	"k8s.io/utils/ptr"
)

// watchPod is a pod as the API server sends it to the shared informer:
// managed fields, requests, a projected volume, conditions.
func watchPod(name, rv string) *v1.Pod {
	now := metav1.NewTime(time.Unix(1_790_000_000, 0))
	return &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("uid-" + name), ResourceVersion: rv,
			Labels: map[string]string{"app": "web"}, CreationTimestamp: now,
			ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
				FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:spec":{}}`)}, Time: &now}}},
		Spec: v1.PodSpec{NodeName: "node-1", Containers: []v1.Container{{Name: "app", Image: "nginx:1.27",
			Resources: v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceCPU: resource.MustParse("10m")}}}},
			Volumes: []v1.Volume{{Name: "kube-api-access-x", VolumeSource: v1.VolumeSource{Projected: &v1.ProjectedVolumeSource{
				Sources: []v1.VolumeProjection{{ServiceAccountToken: &v1.ServiceAccountTokenProjection{Path: "token", ExpirationSeconds: ptr.To[int64](3607)}}}}}}}},
		Status: v1.PodStatus{Phase: v1.PodRunning, PodIP: "10.0.0.9", StartTime: &now,
			Conditions: []v1.PodCondition{{Type: v1.PodReady, Status: v1.ConditionTrue, LastTransitionTime: now}}},
	}
}

// protobufWatchStream encodes events as the API server's protobuf watch
// stream: length-prefixed WatchEvent frames, each object in the protobuf
// envelope.
func protobufWatchStream(t testing.TB, events []watch.Event) []byte {
	t.Helper()
	info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	if !ok || info.StreamSerializer == nil {
		t.Fatal("no protobuf stream serializer")
	}
	var out bytes.Buffer
	fw := info.StreamSerializer.Framer.NewFrameWriter(&out)
	enc := scheme.Codecs.EncoderForVersion(info.Serializer, v1.SchemeGroupVersion)
	for _, e := range events {
		raw, err := runtime.Encode(enc, e.Object)
		if err != nil {
			t.Fatal(err)
		}
		var frame bytes.Buffer
		if err := info.StreamSerializer.Serializer.Encode(&metav1.WatchEvent{Type: string(e.Type), Object: runtime.RawExtension{Raw: raw}}, &frame); err != nil {
			t.Fatal(err)
		}
		if _, err := fw.Write(frame.Bytes()); err != nil {
			t.Fatal(err)
		}
	}
	return out.Bytes()
}

// clientGoDecoder is the decoder client-go's Watch builds for the stream.
func clientGoDecoder(t testing.TB, stream []byte) *restclientwatch.Decoder {
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	frames := info.StreamSerializer.Framer.NewFrameReader(io.NopCloser(bytes.NewReader(stream)))
	return restclientwatch.NewDecoder(streaming.NewDecoder(frames, info.StreamSerializer.Serializer), fallbackDecoder)
}

// TestPodWatchDecoderDecodesAsClientGo: every event as client-go's decoder
// returns it, the pods without their managedFields.
func TestPodWatchDecoderDecodesAsClientGo(t *testing.T) {
	bookmark := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "12", Annotations: map[string]string{metav1.InitialEventsAnnotationKey: "true"}}}
	gone := &metav1.Status{Status: metav1.StatusFailure, Code: http.StatusGone, Reason: metav1.StatusReasonExpired, Message: "too old resource version: 1 (12)"}
	events := []watch.Event{
		{Type: watch.Added, Object: watchPod("a", "10")},
		{Type: watch.Modified, Object: watchPod("a", "11")},
		{Type: watch.Bookmark, Object: bookmark},
		{Type: watch.Deleted, Object: watchPod("a", "12")},
		{Type: watch.Error, Object: gone},
	}
	stream := protobufWatchStream(t, events)
	want := clientGoDecoder(t, stream)
	got := newPodWatchDecoder(io.NopCloser(bytes.NewReader(stream)))
	for i := range events {
		wt, wo, werr := want.Decode()
		gt, gobj, gerr := got.Decode()
		if werr != nil || gerr != nil {
			t.Fatalf("event %d: client-go's decoder: %v, ours: %v", i, werr, gerr)
		}
		if p, ok := wo.(*v1.Pod); ok {
			p.ManagedFields = nil // ours leaves them out (the informer's transform drops them)
		}
		if gt != wt || !reflect.DeepEqual(gobj, wo) {
			t.Fatalf("event %d: got %s %#v\nwant %s %#v", i, gt, gobj, wt, wo)
		}
		if _, isStatus := wo.(*metav1.Status); !isStatus {
			if _, isPod := gobj.(*v1.Pod); !isPod {
				t.Fatalf("event %d: %T, not a pod", i, gobj)
			}
		}
	}
	if _, _, err := got.Decode(); err != io.EOF {
		t.Fatalf("after the last frame: %v, want io.EOF", err)
	}
}

func TestPodWatchDecoderReusesItsBufferWithoutAliasing(t *testing.T) {
	// The second, shorter frame lands in the first one's buffer: the
	// first pod must not change.
	stream := protobufWatchStream(t, []watch.Event{{Type: watch.Added, Object: watchPod("long-name-of-the-first-pod", "1")}, {Type: watch.Added, Object: watchPod("b", "2")}})
	d := newPodWatchDecoder(io.NopCloser(bytes.NewReader(stream)))
	_, first, err := d.Decode()
	if err != nil {
		t.Fatal(err)
	}
	before := first.(*v1.Pod).DeepCopy()
	if _, _, err := d.Decode(); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(first, before) {
		t.Fatalf("the first pod changed when the next frame was read:\n%#v\nwas\n%#v", first, before)
	}
}

func TestPodWatchDecoderBadStreams(t *testing.T) {
	stream := protobufWatchStream(t, []watch.Event{{Type: watch.Added, Object: watchPod("a", "1")}})
	huge := []byte{0x7f, 0xff, 0xff, 0xff}
	badType := protobufWatchStream(t, []watch.Event{{Type: "SURPRISE", Object: watchPod("a", "1")}})
	for _, tc := range []struct {
		name   string
		stream []byte
		want   func(error) bool
	}{
		{"cut inside the length", stream[:2], func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"cut inside the frame", stream[:len(stream)/2], func(err error) bool { return errors.Is(err, io.ErrUnexpectedEOF) }},
		{"frame over the limit", huge, func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
		{"unknown event type", badType, func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
		{"garbage frame", []byte{0, 0, 0, 3, 0xff, 0xff, 0xff}, func(err error) bool { return err != nil && !errors.Is(err, io.EOF) }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, obj, err := newPodWatchDecoder(io.NopCloser(bytes.NewReader(tc.stream))).Decode()
			if !tc.want(err) || obj != nil {
				t.Fatalf("got %v, %v", obj, err)
			}
		})
	}
}

// TestPodWatchOverHTTP: a protobuf watch stream is read by
// podWatchDecoder; any other answer goes to client-go's Watch, which asks
// again and reports the API's error as it always did.
func TestPodWatchOverHTTP(t *testing.T) {
	stream := protobufWatchStream(t, []watch.Event{{Type: watch.Added, Object: watchPod("a", "7")}})
	var requests atomic.Int32
	var answerGone atomic.Bool
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		if r.URL.Path != "/api/v1/pods" || r.URL.Query().Get("watch") != "true" || r.URL.Query().Get("resourceVersion") != "5" {
			http.Error(w, "unexpected request "+r.URL.String(), http.StatusBadRequest)
			return
		}
		if answerGone.Load() {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusGone)
			_, _ = w.Write([]byte(`{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"Expired","code":410,"message":"too old"}`))
			return
		}
		w.Header().Set("Content-Type", protobufWatchType)
		_, _ = w.Write(stream)
	}))
	defer srv.Close()
	client, err := kubernetes.NewForConfig(&rest.Config{Host: srv.URL, ContentConfig: rest.ContentConfig{ContentType: runtime.ContentTypeProtobuf}})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()

	w, err := podWatch(ctx, client, metav1.ListOptions{ResourceVersion: "5"})
	if err != nil {
		t.Fatal(err)
	}
	if _, ours := w.(*watch.StreamWatcher); !ours {
		t.Fatalf("watch %T", w)
	}
	e := <-w.ResultChan()
	if p, ok := e.Object.(*v1.Pod); e.Type != watch.Added || !ok || p.Name != "a" || p.ResourceVersion != "7" {
		t.Fatalf("event %s %#v", e.Type, e.Object)
	}
	if _, open := <-w.ResultChan(); open {
		t.Fatal("the watch did not end with its stream")
	}
	w.Stop()
	if n := requests.Load(); n != 1 {
		t.Fatalf("%d requests for one watch", n)
	}

	answerGone.Store(true)
	_, err = podWatch(ctx, client, metav1.ListOptions{ResourceVersion: "5"})
	if !apierrors.IsResourceExpired(err) {
		t.Fatalf("watch of an expired resourceVersion: %v", err)
	}
	if n := requests.Load(); n != 3 {
		t.Fatalf("%d requests, want 3 (the failed one asked again by client-go's Watch)", n)
	}
}

// BenchmarkPodWatchDecode decodes a stream of pod events with
// podWatchDecoder and, for comparison, with client-go's decoder (per
// event).
func BenchmarkPodWatchDecode(b *testing.B) {
	var events []watch.Event
	for i := 0; i < 100; i++ {
		events = append(events, watch.Event{Type: watch.Modified, Object: watchPod("pod-"+string(rune('a'+i%26)), "1")})
	}
	stream := protobufWatchStream(b, events)
	for _, tc := range []struct {
		name    string
		decoder func() interface {
			Decode() (watch.EventType, runtime.Object, error)
		}
	}{
		{"ours", func() interface {
			Decode() (watch.EventType, runtime.Object, error)
		} {
			return newPodWatchDecoder(io.NopCloser(bytes.NewReader(stream)))
		}},
		{"client-go", func() interface {
			Decode() (watch.EventType, runtime.Object, error)
		} {
			return clientGoDecoder(b, stream)
		}},
	} {
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d := tc.decoder()
				for range events {
					if _, _, err := d.Decode(); err != nil {
						b.Fatal(err)
					}
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(events)), "ns/event")
		})
	}
}

// TestPlainPodEnvelope: pods take the direct road, other objects (and
// pods with a content encoding) client-go's decoder.
func TestPlainPodEnvelope(t *testing.T) {
	info, _ := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), runtime.ContentTypeProtobuf)
	enc := scheme.Codecs.EncoderForVersion(info.Serializer, v1.SchemeGroupVersion)
	encode := func(obj runtime.Object) []byte {
		raw, err := runtime.Encode(enc, obj)
		if err != nil {
			t.Fatal(err)
		}
		return raw
	}
	pod := encode(watchPod("a", "1"))
	if body, ok := plainPodEnvelope(pod); !ok || len(body) == 0 {
		t.Fatal("an encoded pod is not read directly")
	}
	if _, ok := plainPodEnvelope(encode(&metav1.Status{Code: 410})); ok {
		t.Fatal("a Status taken for a pod")
	}
	if _, ok := plainPodEnvelope(encode(&v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}})); ok {
		t.Fatal("a Node taken for a pod")
	}
	gzipped := append(append([]byte{}, pod...), 3<<3|2, 4, 'g', 'z', 'i', 'p') // contentEncoding "gzip"
	if _, ok := plainPodEnvelope(gzipped); ok {
		t.Fatal("a pod with a content encoding taken as plain")
	}
}

func TestWithoutManagedFields(t *testing.T) {
	withMF := watchPod("a", "1")
	withMF.ManagedFields = append(withMF.ManagedFields, *withMF.ManagedFields[0].DeepCopy())
	withMF.ManagedFields[1].Manager = "kubelet"
	raw, err := withMF.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	var scratch []byte
	trimmed := withoutManagedFields(raw, &scratch)
	var got v1.Pod
	if err := got.Unmarshal(trimmed); err != nil {
		t.Fatal(err)
	}
	want := withMF.DeepCopy()
	want.ManagedFields = nil
	if !reflect.DeepEqual(&got, want) {
		t.Fatalf("got\n%#v\nwant\n%#v", &got, want)
	}
	none := watchPod("b", "1")
	none.ManagedFields = nil
	raw, _ = none.Marshal()
	if out := withoutManagedFields(raw, &scratch); &out[0] != &raw[0] || len(out) != len(raw) {
		t.Fatal("a pod without managedFields was rewritten")
	}
	if out := withoutManagedFields([]byte{0xff}, &scratch); len(out) != 1 {
		t.Fatal("garbage was rewritten")
	}
}
