package apiserver_test

import (
	"fmt"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// A request a deprecated kind's route serves is audited with
// kube-apiserver's annotation k8s.io/deprecated "true" (and
// k8s.io/removed-release when the kind names one; v1 Endpoints does not):
// a failed one too, not one the router answers, not another kind's.
func TestDeprecatedKindAuditAnnotation(t *testing.T) {
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend = policy, b })
	e.waitReady()
	for i, tc := range []struct {
		method, path string
		code         int
		deprecated   bool
	}{
		{"GET", "/api/v1/namespaces/default/endpoints", 200, true},
		{"GET", "/api/v1/namespaces/default/endpoints/missing", 404, true},
		{"POST", "/api/v1/namespaces/default/endpoints", 201, true},
		{"GET", "/api/v1/endpoints/x", 404, false},                           // no route
		{"PUT", "/api/v1/namespaces/default/endpoints", 405, false},          // no route
		{"GET", "/api/v1/namespaces/default/configmaps/missing", 404, false}, // not deprecated
	} {
		id := fmt.Sprintf("dep-%d", i)
		var body []byte
		if tc.method == "POST" {
			body = []byte(`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"a"}}`)
		}
		r := e.do(tc.method, tc.path, body, "Audit-ID", id, "Content-Type", "application/json")
		if r.code != tc.code {
			t.Fatalf("%s %s: %d, want %d: %s", tc.method, tc.path, r.code, tc.code, r.body)
		}
		var ev *audit.Event
		waitFor(t, func() bool {
			ev = b.stage(id, audit.StageResponseComplete)
			return ev != nil
		})
		got, has := ev.Annotations["k8s.io/deprecated"]
		if has != tc.deprecated || has && got != "true" {
			t.Errorf("%s %s: annotations %v, want k8s.io/deprecated=true: %v", tc.method, tc.path, ev.Annotations, tc.deprecated)
		}
		if v, ok := ev.Annotations["k8s.io/removed-release"]; ok {
			t.Errorf("%s %s: k8s.io/removed-release %q, want none", tc.method, tc.path, v)
		}
	}
}
