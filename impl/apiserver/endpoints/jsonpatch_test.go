package endpoints

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestJSONPatchTestOfArraysHoldingNull: a JSON patch "test" that compares
// an array holding null with an array of the same length makes the JSON
// patch library dereference a nil node (found by FuzzPatch,
// fuzz/testdata/fuzz/FuzzPatch/2e572a847aa8b3d7). The answer is a 422
// Status and nothing is written — not a panic; other tests still pass or
// fail as the library decides.
func TestJSONPatchTestOfArraysHoldingNull(t *testing.T) {
	const (
		cms       = "/api/v1/namespaces/ns/configmaps"
		jsonPatch = "application/json-patch+json"
	)
	cases := []struct {
		name  string
		patch string
		code  int
	}{
		{"null in the test's value", `[{"op":"test","path":"/metadata/managedFields","value":[null]}]`,
			http.StatusUnprocessableEntity},
		{"null put in the document by an earlier operation",
			`[{"op":"add","path":"/metadata/finalizers","value":[null]},{"op":"test","path":"/metadata/finalizers","value":["a"]}]`,
			http.StatusUnprocessableEntity},
		{"the fuzzer's input", `[{"op":"test","path":"/metadata/managedFields","value":[null]},{"op":"add","path":"","value":null},{"op":"add","path":"","value":null}]`,
			http.StatusUnprocessableEntity},
		{"a failing test without null", `[{"op":"test","path":"/data/k","value":"w"}]`,
			http.StatusUnprocessableEntity},
		{"a passing test", `[{"op":"test","path":"/data/k","value":"v"},{"op":"add","path":"/data/j","value":"x"}]`,
			http.StatusOK},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, store := servedHandler(t, "configmaps")
			if r := do(h, "POST", cms, "application/json", `{"metadata":{"name":"x"},"data":{"k":"v"}}`); r.code != http.StatusCreated {
				t.Fatalf("create: %d %s", r.code, r.body)
			}
			before := store.rev
			r := do(h, "PATCH", cms+"/x", jsonPatch, c.patch)
			if r.code != c.code {
				t.Fatalf("PATCH %s: got %d %s, want %d", c.patch, r.code, r.body, c.code)
			}
			if c.code == http.StatusOK {
				return
			}
			// kube-apiserver's 422 for a patch that does not apply
			// (NewGenericServerResponse: its message is generic, the
			// library's error is not shown).
			if st := r.status(t); st.Reason != metav1.StatusReasonInvalid {
				t.Fatalf("PATCH %s: got %s, want reason Invalid", c.patch, r.body)
			}
			if store.rev != before {
				t.Fatalf("PATCH %s: refused but wrote (revision %d -> %d)", c.patch, before, store.rev)
			}
		})
	}
}
