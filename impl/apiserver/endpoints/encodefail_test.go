package endpoints

import (
	"net/http/httptest"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
)

// An answer that does not encode in the negotiated media type (YAML
// refuses the control character DEL, which JSON carries as is) is
// answered as kube-apiserver's SerializeObject answers it: a Status of
// code 500, no reason and the encoder's error as its message, in the same
// media type; the HTTP status stays the answer's when that is an error
// (here a 404 naming an object whose name holds DEL) and becomes 500 when
// it was a success.
func TestAnswerThatDoesNotEncodeIsAStatus(t *testing.T) {
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	r := httptest.NewRequest("GET", "/", nil)
	r.Header.Set("Accept", codec.YAML)
	notFound := apierrors.NewNotFound(schema.GroupResource{Resource: "nodes"}, "x\x7fy")
	cm := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"},
		ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}, Data: map[string]string{"k": "\x7f"}}
	for _, tc := range []struct {
		name  string
		write func(w *httptest.ResponseRecorder)
		code  int
	}{
		{"a 404 Status", func(w *httptest.ResponseRecorder) { WriteStatusError(w, r, c, notFound) }, 404},
		{"a 200 object", func(w *httptest.ResponseRecorder) {
			target, err := c.Negotiate(r, nil, false)
			if err != nil {
				t.Fatal(err)
			}
			writeRaw(w, target, 200, cm)
		}, 500},
	} {
		w := httptest.NewRecorder()
		tc.write(w)
		if w.Code != tc.code || w.Header().Get("Content-Type") != codec.YAML {
			t.Errorf("%s: answer %d %q, want %d %s", tc.name, w.Code, w.Header().Get("Content-Type"), tc.code, codec.YAML)
			continue
		}
		var st metav1.Status
		if err := yaml.Unmarshal(w.Body.Bytes(), &st); err != nil || st.Kind != "Status" {
			t.Errorf("%s: body %q is not a Status: %v", tc.name, w.Body.Bytes(), err)
			continue
		}
		if st.Code != 500 || st.Reason != "" || st.Status != metav1.StatusFailure || !strings.Contains(st.Message, "control characters are not allowed") {
			t.Errorf("%s: Status %+v, want code 500, no reason, the encoder's error", tc.name, st)
		}
	}
}
