package endpoints

import (
	"testing"
)

// Server-side apply checks the body for duplicate keys only once the apply
// itself has worked, as kube-apiserver's applyPatcher does (yaml.Unmarshal,
// then fieldManager.Apply, then UnmarshalStrict): a body that is not YAML
// is a 400 without a duplicate-key warning, and an apply that conflicts is
// a 409 without one, under the default fieldValidation (Warn) and Strict.
func TestApplyChecksDuplicateKeysAfterTheApply(t *testing.T) {
	const cms = "/api/v1/namespaces/ns/configmaps"
	h, _ := servedHandler(t, "configmaps")
	if rep := do(h, "PATCH", cms+"/c?fieldManager=one", applyType, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: p\n"); rep.code != 201 {
		t.Fatalf("seed: %d %s", rep.code, rep.body)
	}
	for _, c := range []struct {
		name, query, body string
		code              int
	}{
		{"not YAML, Warn", "", "apiVersion: v1\nkind: [\n", 400},
		{"conflict, Warn", "", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: q\n  a: r\n", 409},
		{"conflict, Strict", "&fieldValidation=Strict", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  a: q\n  a: r\n", 409},
	} {
		rep := do(h, "PATCH", cms+"/c?fieldManager=two"+c.query, applyType, c.body)
		if rep.code != c.code || rep.warning != "" {
			t.Errorf("%s: %d, Warning %q, want %d and none: %s", c.name, rep.code, rep.warning, c.code, rep.body)
		}
	}
}
