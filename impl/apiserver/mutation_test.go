package apiserver_test

import (
	"bytes"
	"math/rand/v2"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestMutatedBodiesNever5xx sends byte-mutated versions of valid requests
// (JSON, YAML, protobuf; create, update, patch) and expects a 2xx or a 4xx
// Status for each: never a 5xx, never a dropped connection.
func TestMutatedBodiesNever5xx(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	if _, err := e.cs.CoreV1().Pods("default").Create(c, pod("target"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	p := pod("target")
	p.APIVersion, p.Kind = "v1", "Pod"
	codecs := e.srv.Codecs()
	encode := func(mediaType string) []byte {
		for _, info := range codecs.Factory.SupportedMediaTypes() {
			if info.MediaType == mediaType {
				var buf bytes.Buffer
				if err := info.Serializer.Encode(p, &buf); err != nil {
					t.Fatal(err)
				}
				return buf.Bytes()
			}
		}
		t.Fatalf("no serializer for %s", mediaType)
		return nil
	}
	seeds := []struct {
		method, path, contentType string
		body                      []byte
	}{
		{"POST", "/api/v1/namespaces/default/pods", "application/json", encode("application/json")},
		{"POST", "/api/v1/namespaces/default/pods", "application/yaml", encode("application/yaml")},
		{"POST", "/api/v1/namespaces/default/pods", "application/vnd.kubernetes.protobuf", encode("application/vnd.kubernetes.protobuf")},
		{"PUT", "/api/v1/namespaces/default/pods/target", "application/vnd.kubernetes.protobuf", encode("application/vnd.kubernetes.protobuf")},
		{"PUT", "/api/v1/namespaces/default/pods/target/status", "application/json", encode("application/json")},
		{"PATCH", "/api/v1/namespaces/default/pods/target", "application/strategic-merge-patch+json", []byte(`{"metadata":{"labels":{"a":"b"}},"spec":{"containers":[{"name":"c","image":"x"}]}}`)},
		{"PATCH", "/api/v1/namespaces/default/pods/target", "application/json-patch+json", []byte(`[{"op":"replace","path":"/metadata/labels","value":{"x":"y"}}]`)},
		{"POST", "/api/v1/namespaces/default/pods/target/binding", "application/json", []byte(`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"target"},"target":{"name":"n1"}}`)},
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range 400 {
		s := seeds[rng.IntN(len(seeds))]
		body := bytes.Clone(s.body)
		for range 1 + rng.IntN(4) {
			switch pos := rng.IntN(len(body)); rng.IntN(3) {
			case 0:
				body[pos] = byte(rng.IntN(256))
			case 1:
				body = append(body[:pos], body[pos+1:]...)
			default:
				body = append(body[:pos], append([]byte{byte(rng.IntN(256))}, body[pos:]...)...)
			}
			if len(body) == 0 {
				body = []byte{0}
			}
		}
		r := e.do(s.method, s.path, body, "Content-Type", s.contentType)
		if r.code >= 500 {
			t.Fatalf("request %d (%s %s %s): %d %s\nbody %q", i, s.method, s.path, s.contentType, r.code, r.body, body)
		}
		if r.code >= 400 {
			r.status(t)
		}
	}
	// the server is still healthy.
	if _, err := e.cs.CoreV1().Pods("default").Get(c, "target", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}

}
