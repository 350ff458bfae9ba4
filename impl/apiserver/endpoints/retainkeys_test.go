package endpoints

import (
	"encoding/json"
	"net/http"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestStrategicMergeRetainKeysWithListsAndObjects: a $retainKeys list
// holding a list or an object made apimachinery's strategic merge panic
// ("hash of unhashable type", found by FuzzPatch,
// fuzz/testdata/fuzz/FuzzPatch/beef3762675e2fb0). Such an element names
// no field: the merge is the directive's without it.
func TestStrategicMergeRetainKeysWithListsAndObjects(t *testing.T) {
	const (
		cms = "/api/v1/namespaces/ns/configmaps"
		smp = "application/strategic-merge-patch+json"
	)
	cases := []struct {
		name  string
		patch string
		code  int
		data  map[string]string
	}{
		{"the fuzzer's input: every field cleared", `{"$retainKeys":[[null]]}`, http.StatusBadRequest, nil},
		{"a list and an object beside field names",
			`{"$retainKeys":["apiVersion","kind","metadata",["data"],{"data":1},"data"],"data":{"k":"w"}}`, http.StatusOK, map[string]string{"k": "w"}},
		{"a patch field the directive does not name", `{"$retainKeys":["metadata",["data"]],"data":{"k":"w"}}`, http.StatusBadRequest, nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			h, store := servedHandler(t, "configmaps")
			if r := do(h, "POST", cms, "application/json", `{"metadata":{"name":"x"},"data":{"k":"v"},"binaryData":{"b":"AA=="}}`); r.code != http.StatusCreated {
				t.Fatalf("create: %d %s", r.code, r.body)
			}
			before := store.rev
			r := do(h, "PATCH", cms+"/x", smp, c.patch)
			if r.code != c.code {
				t.Fatalf("PATCH %s: got %d %s, want %d", c.patch, r.code, r.body, c.code)
			}
			if c.code != http.StatusOK {
				r.status(t)
				if store.rev != before {
					t.Fatalf("PATCH %s: refused but wrote", c.patch)
				}
				return
			}
			var cm corev1.ConfigMap
			if err := json.Unmarshal(r.body, &cm); err != nil {
				t.Fatal(err)
			}
			if len(cm.Data) != 1 || cm.Data["k"] != c.data["k"] || cm.BinaryData != nil {
				t.Fatalf("PATCH %s: data %v binaryData %v, want %v and none", c.patch, cm.Data, cm.BinaryData, c.data)
			}
		})
	}
}
