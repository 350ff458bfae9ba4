package endpoints

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"
)

// A YAML body's duplicate keys under fieldValidation=Warn are one warning
// per key, as kube-apiserver's addStrictDecodingWarnings splits the YAML
// decoder's "yaml: unmarshal errors:" list into its lines (trimmed, the
// prefix dropped); the whole list, with its line breaks, would make no
// Warning header at all (a control character).
func TestYAMLDuplicateKeysWarnOnePerKey(t *testing.T) {
	h, _ := servedHandler(t, "configmaps")
	const cms = "/api/v1/namespaces/ns/configmaps"
	body := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: NAME\ndata:\n  a: p\n  a: q\n  b: p\n  b: q\n"
	want := []string{`299 - "line 7: key \"a\" already set in map"`, `299 - "line 9: key \"b\" already set in map"`}
	for _, c := range []struct{ name, method, path, ctype string }{
		{"create", "POST", cms, "application/yaml"},
		{"apply", "PATCH", cms + "/apply?fieldManager=m", applyType},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := httptest.NewRequest(c.method, c.path, strings.NewReader(strings.Replace(body, "NAME", c.name, 1)))
			r.Header.Set("Content-Type", c.ctype)
			w := httptest.NewRecorder()
			h.ServeHTTP(w, r)
			if got := w.Header().Values("Warning"); w.Code >= 300 || !slices.Equal(got, want) {
				t.Errorf("%d, Warning headers %q, want %q (%s)", w.Code, got, want, w.Body.Bytes())
			}
		})
	}
}
