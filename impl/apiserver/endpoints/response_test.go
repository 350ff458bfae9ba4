package endpoints

import (
	"net/http/httptest"
	"strconv"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

// A response in a plain media type carries the one shared Content-Type
// value slice (no allocation), unchanged by what a writer adds after; a
// type with parameters gets its own. The headers are what Set gave.
func TestWriteRawContentTypeValues(t *testing.T) {
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Data: map[string]string{"k": "v"}}
	for _, accept := range []string{codec.JSON, codec.Protobuf, codec.YAML} {
		r := httptest.NewRequest("GET", "/", nil)
		r.Header.Set("Accept", accept)
		target, err := c.Negotiate(r, nil, false)
		if err != nil {
			t.Fatal(err)
		}
		w1, w2 := httptest.NewRecorder(), httptest.NewRecorder()
		writeRaw(w1, target, 201, cm)
		writeRaw(w2, target, 201, cm)
		v1, v2 := w1.Header()["Content-Type"], w2.Header()["Content-Type"]
		if len(v1) != 1 || v1[0] != accept || &v1[0] != &v2[0] {
			t.Fatalf("%s: Content-Type values %q and %q, want one shared %q", accept, v1, v2, accept)
		}
		if got, want := w1.Header().Get("Content-Length"), strconv.Itoa(w1.Body.Len()); got != want || w1.Code != 201 {
			t.Fatalf("%s: code %d, Content-Length %q, want 201 and %s", accept, w1.Code, got, want)
		}
		w1.Header().Add("Content-Type", "text/plain")
		if v := w2.Header()["Content-Type"]; len(v) != 1 || v[0] != accept {
			t.Fatalf("%s: another response's Add changed the shared values to %q", accept, v)
		}
		if n := testing.AllocsPerRun(10, func() { sinkStrings = contentTypeValues(target.ContentType) }); n != 0 {
			t.Errorf("%s: contentTypeValues allocates %v times, want 0", accept, n)
		}
	}
	if v := contentTypeValues("application/json;as=Table;g=meta.k8s.io;v=v1"); &v[0] == &jsonContentType[0] || v[0] != "application/json;as=Table;g=meta.k8s.io;v=v1" {
		t.Errorf("a type with parameters got %q", v)
	}
}

var sinkStrings []string
