package endpoints

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
)

// The unknown-field warning of a strategic merge or JSON patch's result,
// and of a binding's body, is recorded when it is decoded, so it goes out
// with the error answer that follows (admission's refusal; the missing
// pod of a binding), as kube-apiserver's patch and create handlers do.
func TestDecodeWarningsOfPatchesAndBindingsGoOutWithErrors(t *testing.T) {
	const cms = "/api/v1/namespaces/ns/configmaps"
	want := []string{`299 - "unknown field \"bogus\""`}
	for _, c := range []struct {
		name, ctype, body string
	}{
		{"strategic merge patch", "application/strategic-merge-patch+json", `{"bogus":1}`},
		{"json patch", "application/json-patch+json", `[{"op":"add","path":"/bogus","value":1}]`},
	} {
		h, _ := servedHandler(t, "configmaps")
		if rep := do(h, "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"c"}}`); rep.code != 201 {
			t.Fatalf("seed: %d %s", rep.code, rep.body)
		}
		h.opts.Admission = &admission.Chain{Validators: []admission.Validator{warnAdmission{refuse: true}}}
		r := httptest.NewRequest("PATCH", cms+"/c", strings.NewReader(c.body))
		r.Header.Set("Content-Type", c.ctype)
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		if got := w.Header().Values("Warning"); w.Code != 403 || !slices.Equal(got, want) {
			t.Errorf("%s: %d, Warning %q, want 403 and %q: %s", c.name, w.Code, got, want, w.Body.Bytes())
		}
	}

	h, _ := servedHandler(t, "pods")
	rep := do(h, "POST", "/api/v1/namespaces/ns/pods/p/binding", "application/json",
		`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"p"},"target":{"kind":"Node","name":"n"},"bogus":1}`)
	if rep.code < 400 || rep.code >= 500 || rep.warning != want[0] {
		t.Errorf("binding: %d, Warning %q, want a 4xx and %q: %s", rep.code, rep.warning, want[0], rep.body)
	}
}
