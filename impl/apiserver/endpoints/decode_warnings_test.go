package endpoints

import (
	"context"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// warnAdmission adds its warnings through the request's context, then
// refuses the write when refuse is set.
type warnAdmission struct {
	warnings []string
	refuse   bool
}

func (p warnAdmission) Validate(ctx context.Context, a *admission.Attributes) error {
	for _, w := range p.warnings {
		request.AddWarning(ctx, w)
	}
	if p.refuse {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "configmaps"}, "x", fmt.Errorf("refused"))
	}
	return nil
}

// Decoding's field-validation warnings (fieldValidation=Warn: unknown and
// duplicate fields) go into the request's warnings when the body is
// decoded, as kube-apiserver's handlers record them (warning.AddWarning in
// create.go, update.go, patch.go): they come before admission's, go out
// with an error answer too, are kept once when admission says the same,
// and share the one cap.
func TestDecodeWarningsShareTheRequestsWarnings(t *testing.T) {
	const cms = "/api/v1/namespaces/ns/configmaps"
	unknown := `unknown field "bogus"`
	body := func(name string) string {
		return `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"` + name + `"},"bogus":1}`
	}
	for _, c := range []struct {
		name, method, path, ctype, body string
		seed                            bool // the object exists first
	}{
		{"create", "POST", cms, "application/json", body("create"), false},
		{"update", "PUT", cms + "/update", "application/json", body("update"), true},
		{"merge patch", "PATCH", cms + "/mpatch", "application/merge-patch+json", `{"bogus":1}`, true},
		{"apply", "PATCH", cms + "/apply?fieldManager=m", applyType, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: apply\ndata:\n  a: p\n  a: q\n", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			decodeWarning := unknown
			if c.name == "apply" {
				decodeWarning = `line 7: key "a" already set in map`
			}
			long := strings.Repeat("x", warningsTotalRunes)
			for _, k := range []struct {
				name  string
				admit warnAdmission
				want  []string
				ok    bool
			}{
				{"refused", warnAdmission{warnings: []string{"admission says"}, refuse: true},
					[]string{`299 - "` + strings.ReplaceAll(decodeWarning, `"`, `\"`) + `"`, `299 - "admission says"`}, false},
				{"same text once", warnAdmission{warnings: []string{decodeWarning}},
					[]string{`299 - "` + strings.ReplaceAll(decodeWarning, `"`, `\"`) + `"`}, true},
				// The decode warning and a long admission warning are
				// over the cap together: both are cut.
				{"one cap", warnAdmission{warnings: []string{long}},
					[]string{`299 - "` + strings.ReplaceAll(decodeWarning, `"`, `\"`) + `"`, `299 - "` + long[:warningRunes] + `"`}, true},
			} {
				h, _ := servedHandler(t, "configmaps")
				if c.seed {
					name := strings.TrimPrefix(c.path, cms+"/")
					if rep := do(h, "POST", cms, "application/json", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+name+`"}}`); rep.code != 201 {
						t.Fatalf("seed: %d %s", rep.code, rep.body)
					}
				}
				h.opts.Admission = &admission.Chain{Validators: []admission.Validator{k.admit}}
				r := httptest.NewRequest(c.method, c.path, strings.NewReader(c.body))
				r.Header.Set("Content-Type", c.ctype)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, r)
				if (w.Code < 300) != k.ok {
					t.Fatalf("%s: %d %s", k.name, w.Code, w.Body.Bytes())
				}
				if got := w.Header().Values("Warning"); !slices.Equal(got, k.want) {
					t.Errorf("%s: %d, Warning headers %q, want %q", k.name, w.Code, got, k.want)
				}
			}
		})
	}
}
