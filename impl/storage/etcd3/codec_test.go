package etcd3_test

import (
	"bytes"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"

	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
)

// Objects are stored as kube-apiserver stores them: "k8s\x00" + a
// runtime.Unknown naming the storage version, readable by apimachinery's own
// protobuf serializer.
func TestCodecIsKubernetesProtobuf(t *testing.T) {
	codec := etcd3.NewCodec(nil, corev1.SchemeGroupVersion)
	pod := benchPod()
	var buf bytes.Buffer
	if err := codec.Encode(pod, &buf); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(buf.Bytes(), []byte("k8s\x00")) {
		t.Fatalf("stored bytes start %q", buf.Bytes()[:4])
	}
	obj, gvk, err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Decode(buf.Bytes(), nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if gvk.GroupVersion() != corev1.SchemeGroupVersion || gvk.Kind != "Pod" {
		t.Fatalf("envelope names %v", gvk)
	}
	back := obj.(*corev1.Pod)
	back.TypeMeta = pod.TypeMeta
	if !equality.Semantic.DeepEqual(back, pod) {
		t.Fatalf("round trip changed the pod:\n%v\n%v", back, pod)
	}
	// And the codec reads JSON written by other tools.
	var js bytes.Buffer
	if err := scheme.Codecs.LegacyCodec(corev1.SchemeGroupVersion).Encode(pod, &js); err != nil {
		t.Fatal(err)
	}
	into := &corev1.Pod{}
	if _, _, err := codec.Decode(js.Bytes(), nil, into); err != nil {
		t.Fatal(err)
	}
	if into.Spec.NodeName != "node-17" {
		t.Fatalf("decoded JSON pod %v", into)
	}
	var _ runtime.Codec = codec
}

// Encoding with a reused allocator writes the same bytes as Encode, for a
// protobuf kind and for one stored as JSON, and a reused allocator does
// not leak one object's bytes into the next.
func TestEncodeWithAllocatorMatchesEncode(t *testing.T) {
	codec := etcd3.NewCodec(scheme.Scheme, corev1.SchemeGroupVersion)
	enc, ok := codec.(runtime.EncoderWithAllocator)
	if !ok {
		t.Fatal("the storage codec does not take an allocator")
	}
	alloc := &runtime.Allocator{}
	big := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "big", Namespace: "ns"}, Data: map[string]string{"k": strings.Repeat("x", 4096)}}
	small := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "s", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	js := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap", "metadata": map[string]any{"name": "u"}}}
	for _, obj := range []runtime.Object{big, small, js} {
		var plain, pooled bytes.Buffer
		if err := codec.Encode(obj, &plain); err != nil {
			t.Fatal(err)
		}
		if err := enc.EncodeWithAllocator(obj, &pooled, alloc); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(plain.Bytes(), pooled.Bytes()) {
			t.Fatalf("%T: allocator encoding differs:\n%q\n%q", obj, plain.Bytes(), pooled.Bytes())
		}
	}
}
