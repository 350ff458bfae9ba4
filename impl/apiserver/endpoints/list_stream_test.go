package endpoints

import (
	"bytes"
	"fmt"
	"net/http"
	"net/http/httptest"
	"runtime"
	"runtime/debug"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

// listPod is a pod of the size a small workload's pods have in etcd.
func listPod(i int) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("web-7d9f8c6b5-%05d", i), Namespace: "default", UID: "0b6c2d3e-5f41-4a8b-9c7d-1e2f3a4b5c6d",
			ResourceVersion: fmt.Sprint(1000 + i), CreationTimestamp: metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)),
			Labels:          map[string]string{"app": "web", "pod-template-hash": "7d9f8c6b5"},
			Annotations:     map[string]string{"note": "<html> & \u2028 escapes"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-7d9f8c6b5", UID: "1b6c2d3e-5f41-4a8b-9c7d-1e2f3a4b5c6d"}},
		},
		Spec: corev1.PodSpec{
			NodeName: "node-1",
			Containers: []corev1.Container{{
				Name: "web", Image: "nginx:1.27",
				Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("128Mi")}},
				TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
				ImagePullPolicy: corev1.PullIfNotPresent,
			}},
			RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: "default-scheduler",
		},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.244.0.5",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
}

func podList(n int) *corev1.PodList {
	l := &corev1.PodList{ListMeta: metav1.ListMeta{ResourceVersion: "123456", Continue: "tok", RemainingItemCount: new(int64)}}
	for i := range n {
		l.Items = append(l.Items, listPod(i))
	}
	return l
}

func testTarget(t testing.TB, c *codec.Codecs, mediaType string) codec.Target {
	t.Helper()
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	r.Header.Set("Accept", mediaType)
	target, err := c.Negotiate(r, listConversions, false)
	if err != nil {
		t.Fatal(err)
	}
	return target
}

// TestStreamedListsAreTheSameBytes: a streamed list is byte for byte what
// the plain serializers write, for JSON and protobuf, with and without
// items, and for PartialObjectMetadataList; YAML still works.
func TestStreamedListsAreTheSameBytes(t *testing.T) {
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	partial := &metav1.PartialObjectMetadataList{ListMeta: metav1.ListMeta{ResourceVersion: "9"},
		Items: []metav1.PartialObjectMetadata{{ObjectMeta: metav1.ObjectMeta{Name: "a"}}, {ObjectMeta: metav1.ObjectMeta{Name: "b"}}}}
	partial.SetGroupVersionKind(schema.GroupVersionKind{Group: "meta.k8s.io", Version: "v1", Kind: "PartialObjectMetadataList"})
	for _, mediaType := range []string{codec.JSON, codec.Protobuf, codec.YAML} {
		for name, list := range map[string]k8sruntime.Object{
			"empty": &corev1.PodList{}, "empty items": &corev1.PodList{Items: []corev1.Pod{}},
			"pods": podList(25), "partial": partial,
		} {
			t.Run(mediaType+"/"+name, func(t *testing.T) {
				target := testTarget(t, c, mediaType)
				if _, ok := list.(*corev1.PodList); ok {
					if err := c.SetKind(list, corev1.SchemeGroupVersion); err != nil {
						t.Fatal(err)
					}
				}
				var want bytes.Buffer
				if err := target.Info.Serializer.Encode(list, &want); err != nil {
					t.Fatal(err)
				}
				rec := httptest.NewRecorder()
				writeList(rec, c.Scheme, target, list)
				if rec.Code != http.StatusOK || rec.Header().Get("Content-Type") != target.ContentType {
					t.Fatalf("status %d, content type %q", rec.Code, rec.Header().Get("Content-Type"))
				}
				if !bytes.Equal(rec.Body.Bytes(), want.Bytes()) {
					t.Fatalf("streamed body differs:\n got  %q\n want %q", trim(rec.Body.Bytes()), trim(want.Bytes()))
				}
				if mediaType != codec.YAML && streamingEncoder(c.Scheme, mediaType) == nil {
					t.Fatal("no streaming encoder")
				}
			})
		}
	}
}

func trim(b []byte) []byte {
	if len(b) > 300 {
		return b[:300]
	}
	return b
}

// discardWriter is a ResponseWriter that throws the body away.
type discardWriter struct {
	h http.Header
	n int64
}

func (d *discardWriter) Header() http.Header         { return d.h }
func (d *discardWriter) WriteHeader(int)             {}
func (d *discardWriter) Write(p []byte) (int, error) { d.n += int64(len(p)); return len(p), nil }

// BenchmarkListEncoding10kPods: peak heap above the decoded list while a
// list of 10,000 pods is written, whole (the encoded body built in memory
// first, as before) and streamed item by item. peak-heap-MiB is the
// highest HeapAlloc seen (sampled every 100µs) minus the heap before the
// write, with the collector run at GOGC=1 so that HeapAlloc follows the
// live heap (garbage is collected after ~1% of growth) rather than
// counting short-lived garbage.
func BenchmarkListEncoding10kPods(b *testing.B) {
	defer debug.SetGCPercent(debug.SetGCPercent(1))
	c, err := codec.New()
	if err != nil {
		b.Fatal(err)
	}
	list := podList(10000)
	if err := c.SetKind(list, corev1.SchemeGroupVersion); err != nil {
		b.Fatal(err)
	}
	for _, mediaType := range []string{codec.JSON, codec.Protobuf} {
		target := testTarget(b, c, mediaType)
		for _, mode := range []string{"whole", "streaming"} {
			b.Run(mediaType[len("application/"):]+"/"+mode, func(b *testing.B) {
				b.ReportAllocs()
				var peak, bodyBytes int64
				for b.Loop() {
					runtime.GC()
					var ms runtime.MemStats
					runtime.ReadMemStats(&ms)
					base := int64(ms.HeapAlloc)
					var highest atomic.Int64
					stop := make(chan struct{})
					done := make(chan struct{})
					go func() {
						defer close(done)
						var m runtime.MemStats
						for {
							runtime.ReadMemStats(&m)
							if v := int64(m.HeapAlloc) - base; v > highest.Load() {
								highest.Store(v)
							}
							select {
							case <-stop:
								return
							case <-time.After(100 * time.Microsecond):
							}
						}
					}()
					w := &discardWriter{h: http.Header{}}
					if mode == "whole" {
						// What the list path did before: the plain
						// serializer straight to the writer (it builds
						// the whole encoding, then writes it).
						if err := target.Info.Serializer.Encode(list, w); err != nil {
							b.Fatal(err)
						}
					} else {
						writeList(w, c.Scheme, target, list)
					}
					close(stop)
					<-done
					peak = max(peak, highest.Load())
					bodyBytes = w.n
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
				b.ReportMetric(float64(bodyBytes)/(1<<20), "body-MiB")
			})
		}
	}
}
