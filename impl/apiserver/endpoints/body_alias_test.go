package endpoints

import (
	"bytes"
	"net/http/httptest"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

// A create's body buffer is reused once the body is decoded: in every body
// encoding the decoded object keeps none of the body's bytes.
func TestDecodedObjectOwnsItsBytes(t *testing.T) {
	h := configMapHandler(t, &collidingStore{})
	want := &corev1.ConfigMap{
		TypeMeta:   metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "c", Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "b"}},
		Data:       map[string]string{"payload": "some text"},
		BinaryData: map[string][]byte{"bin": []byte("some bytes")},
	}
	for _, mediaType := range []string{codec.JSON, codec.YAML, codec.Protobuf} {
		var enc runtime.Serializer
		for _, i := range h.opts.Codecs.Factory.SupportedMediaTypes() {
			if i.MediaType == mediaType {
				enc = i.Serializer
			}
		}
		if enc == nil {
			t.Fatalf("no serializer for %s", mediaType)
		}
		var body bytes.Buffer
		if err := enc.Encode(want, &body); err != nil {
			t.Fatal(err)
		}
		r := httptest.NewRequest("POST", "/api/v1/namespaces/ns/configmaps", nil)
		r.Header.Set("Content-Type", mediaType)
		obj, _, err := h.decode(r, body.Bytes(), corev1.SchemeGroupVersion.WithKind("ConfigMap"), &corev1.ConfigMap{}, metav1.FieldValidationStrict)
		if err != nil {
			t.Fatalf("%s: %v", mediaType, err)
		}
		b := body.Bytes()
		for i := range b {
			b[i] = 'X'
		}
		if !reflect.DeepEqual(obj, want) {
			t.Errorf("%s: the decoded object changed with its body:\n%#v", mediaType, obj)
		}
	}
}
