package etcd3_test

import (
	"bytes"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
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
