package codec

import (
	"bytes"
	"errors"
	"net/http/httptest"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/storage/protoenvelope"
)

func TestNegotiate(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	table := []Conversion{{As: "Table", Group: "meta.k8s.io", Version: "v1"}}
	cases := []struct {
		accept      string
		allowed     []Conversion
		stream      bool
		wantType    string
		wantAs      string
		notAccepted bool
	}{
		{"", nil, false, JSON, "", false},
		{"*/*", nil, false, JSON, "", false},
		{"application/yaml", nil, false, YAML, "", false},
		{"application/yaml", nil, true, "", "", true},
		{"application/vnd.kubernetes.protobuf, */*", nil, false, Protobuf, "", false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json", table, false, JSON, "Table", false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io,application/json", nil, false, JSON, "", false},
		{"application/json;as=Table;v=v1;g=meta.k8s.io", nil, false, "", "", true},
		{"text/html", nil, false, "", "", true},
		{"application/json;q=0.5,application/vnd.kubernetes.protobuf", nil, false, Protobuf, "", false},
	}
	for _, tc := range cases {
		r := httptest.NewRequest("GET", "/", nil)
		if tc.accept != "" {
			r.Header.Set("Accept", tc.accept)
		}
		got, err := c.Negotiate(r, tc.allowed, tc.stream)
		var na *NotAcceptableError
		if tc.notAccepted {
			if !errors.As(err, &na) {
				t.Errorf("%q: want NotAcceptableError, got %v (%s)", tc.accept, err, got.MediaType)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.accept, err)
			continue
		}
		if got.MediaType != tc.wantType || got.As != tc.wantAs {
			t.Errorf("%q: got %s as=%q, want %s as=%q", tc.accept, got.MediaType, got.As, tc.wantType, tc.wantAs)
		}
	}
}

func TestRequestSerializer(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	for _, ct := range []string{"", "application/json", "application/json; charset=utf-8", "application/yaml", "application/vnd.kubernetes.protobuf"} {
		if _, err := c.RequestSerializer(ct); err != nil {
			t.Errorf("%q: %v", ct, err)
		}
	}
	var um *UnsupportedMediaTypeError
	if _, err := c.RequestSerializer("text/plain"); !errors.As(err, &um) {
		t.Errorf("text/plain: want UnsupportedMediaTypeError, got %v", err)
	}
}

// Protobuf request bodies decode straight from the envelope, strict or not
// (protoenvelope; it gives what the factory's serializer gives).
func TestRequestSerializerProtobufDecodesFromEnvelope(t *testing.T) {
	c, err := New()
	if err != nil {
		t.Fatal(err)
	}
	info, err := c.RequestSerializer(Protobuf)
	if err != nil {
		t.Fatal(err)
	}
	for name, s := range map[string]runtime.Serializer{"serializer": info.Serializer, "strict serializer": info.StrictSerializer} {
		if _, ok := s.(protoenvelope.RecognizingDecoder); !ok {
			t.Errorf("%s is %T", name, s)
		}
	}
	var body bytes.Buffer
	want := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: map[string]string{"k": "v"}}
	if err := info.Serializer.Encode(want, &body); err != nil {
		t.Fatal(err)
	}
	got, _, err := info.StrictSerializer.Decode(body.Bytes(), nil, &corev1.ConfigMap{})
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Fatalf("decoded %#v, %v; want %#v", got, err, want)
	}
}
