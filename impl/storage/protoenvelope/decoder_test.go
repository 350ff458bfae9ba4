package protoenvelope

import (
	"bytes"
	"fmt"
	"math/rand"
	"reflect"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
)

func newObjects() []func() runtime.Object {
	return []func() runtime.Object{
		func() runtime.Object { return &corev1.ConfigMap{} },
		func() runtime.Object { return &corev1.Pod{} },
		func() runtime.Object { return &corev1.Secret{} },
		func() runtime.Object { return &corev1.Node{} },
		func() runtime.Object { return &appsv1.Deployment{} },
		func() runtime.Object { return &coordinationv1.Lease{} },
		func() runtime.Object { return &rbacv1.ClusterRole{} },
	}
}

// encode is obj as the API server stores and clients send it.
func encode(t *testing.T, pb runtime.Serializer, obj runtime.Object) []byte {
	t.Helper()
	gvks, _, err := scheme.Scheme.ObjectKinds(obj)
	if err != nil {
		t.Fatal(err)
	}
	obj.GetObjectKind().SetGroupVersionKind(gvks[0])
	var buf bytes.Buffer
	if err := pb.Encode(obj, &buf); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// decodeBoth decodes data into fresh objects from newObj with the
// serializer and with the Decoder and fails unless they agree: the same
// object, kind and error.
func decodeBoth(t *testing.T, pb runtime.Serializer, d Decoder, data []byte, defaults *schema.GroupVersionKind, newObj func() runtime.Object) (runtime.Object, error) {
	t.Helper()
	wantObj, wantGVK, wantErr := pb.Decode(data, defaults, newObj())
	gotObj, gotGVK, gotErr := d.Decode(data, defaults, newObj())
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Fatalf("error %v, serializer's %v", gotErr, wantErr)
	}
	if !reflect.DeepEqual(gotGVK, wantGVK) {
		t.Fatalf("kind %v, serializer's %v", gotGVK, wantGVK)
	}
	if !reflect.DeepEqual(gotObj, wantObj) {
		t.Fatalf("object differs from the serializer's\n got: %#v\nwant: %#v", gotObj, wantObj)
	}
	return gotObj, gotErr
}

// On random objects of several kinds the Decoder gives exactly what the
// serializer gives, takes the short road to do it, and keeps nothing of
// the input.
func TestDecodeMatchesSerializer(t *testing.T) {
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	d := Decoder{Serializer: pb, typer: scheme.Scheme}
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(11), scheme.Codecs).NilChance(0.2).NumElements(0, 3)
	for _, newObj := range newObjects() {
		for i := 0; i < 60; i++ {
			obj := newObj()
			f.Fill(obj)
			data := encode(t, pb, obj)
			gvk := obj.GetObjectKind().GroupVersionKind()
			shortGVK, ok := d.decodeInto(data, &gvk, newObj())
			if !ok {
				t.Fatalf("%T: a plain object does not take the short road", obj)
			}
			// (String builds a new string: a copy, whatever the kind's
			// strings point into.)
			shortGVKBefore := shortGVK.String()
			got, err := decodeBoth(t, pb, d, data, &gvk, newObj)
			if err != nil {
				t.Fatalf("%T: %v", obj, err)
			}
			decodeBoth(t, pb, d, data, nil, newObj)
			// The decoded object owns its bytes.
			before := got.DeepCopyObject()
			kindBefore := got.GetObjectKind().GroupVersionKind().String()
			for j := range data {
				data[j] = 0xff
			}
			if !reflect.DeepEqual(got, before) {
				t.Fatalf("%T changed with the input bytes", got)
			}
			if kind := got.GetObjectKind().GroupVersionKind().String(); kind != kindBefore {
				t.Fatalf("%T: the object's kind changed with the input bytes: %q, was %q", got, kind, kindBefore)
			}
			if shortGVK.String() != shortGVKBefore {
				t.Fatalf("%T: the returned kind changed with the input bytes: %q, was %q", obj, shortGVK.String(), shortGVKBefore)
			}
		}
	}
}

// Broken and unusual input goes to the serializer: every truncation and
// many single-byte corruptions of an encoded pod decode (or fail) exactly
// as the serializer decodes them, into the right and the wrong kind.
func TestDecodeOfBadInputMatchesSerializer(t *testing.T) {
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	d := Decoder{Serializer: pb, typer: scheme.Scheme}
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(12), scheme.Codecs).NilChance(0.2).NumElements(1, 2)
	pod := &corev1.Pod{}
	f.Fill(pod)
	data := encode(t, pb, pod)
	newPod := func() runtime.Object { return &corev1.Pod{} }
	newCM := func() runtime.Object { return &corev1.ConfigMap{} }
	for n := 0; n <= len(data); n++ {
		decodeBoth(t, pb, d, bytes.Clone(data[:n]), nil, newPod)
	}
	r := rand.New(rand.NewSource(13))
	for i := 0; i < 2000; i++ {
		bad := bytes.Clone(data)
		bad[r.Intn(len(bad))] = byte(r.Intn(256))
		decodeBoth(t, pb, d, bad, nil, newPod)
		decodeBoth(t, pb, d, bad, nil, newCM)
	}
	// The wrong kind to decode into, an envelope field twice, an unknown
	// envelope field, no kind at all.
	decodeBoth(t, pb, d, data, nil, newCM)
	twice := append(bytes.Clone(data), data[4:]...)
	decodeBoth(t, pb, d, twice, nil, newPod)
	extra := append(bytes.Clone(data), 0x2a, 0x01, 'x') // field 5, length 1
	decodeBoth(t, pb, d, extra, nil, newPod)
	bare := encode(t, pb, &corev1.ConfigMap{})
	if _, ok := d.decodeInto(extra, nil, newPod()); ok {
		t.Error("an envelope with an unknown field took the short road")
	}
	decodeBoth(t, pb, d, bare, nil, newCM)
}

// The Decoder recognizes data when the serializer does, so a recognizer
// (as the etcd3 codec's) keeps choosing it for protobuf.
func TestNewRecognizes(t *testing.T) {
	pb := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme)
	rd, ok := New(pb, scheme.Scheme).(RecognizingDecoder)
	if !ok {
		t.Fatal("New of the protobuf serializer does not recognize data")
	}
	data := encode(t, pb, &corev1.ConfigMap{})
	if ok, _, _ := rd.RecognizesData(data); !ok {
		t.Error("protobuf data not recognized")
	}
	if ok, _, _ := rd.RecognizesData([]byte(`{"kind":"ConfigMap"}`)); ok {
		t.Error("JSON recognized as protobuf")
	}
}
