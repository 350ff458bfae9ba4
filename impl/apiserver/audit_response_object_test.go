package apiserver_test

import (
	"encoding/json"
	"net/http"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// TestAuditResponseObjectOnlyOfAPIObjects: at the RequestResponse level
// the responseObject is what kube-apiserver passes to its
// LogResponseObject (k8s.io/apiserver pkg/audit/request.go), which only
// responsewriters.WriteObjectNegotiated calls once it has negotiated a
// media type: the objects resource handlers answer, the discovery
// documents (legacy and aggregated), and the Status of every error
// written by ErrorNegotiated, a watch's refused before it streams
// included. A JSON body written otherwise has none: /version
// (WriteRawJSON), the OpenAPI documents (kube-openapi's handler), a
// watch's stream of events, and a 406, which WriteObjectNegotiated
// answers with WriteRawJSON when it cannot negotiate; such an answer's
// responseStatus is its code alone, as the audit filter records it from
// WriteHeader. A refused watch's ResponseStarted event has its Status and
// responseObject too, logged before its header went out.
func TestAuditResponseObjectOnlyOfAPIObjects(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n"))
	if err != nil {
		t.Fatal(err)
	}
	openAPI := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"swagger":"2.0"}`))
	})
	e := newEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend, c.OpenAPI = policy, b, openAPI })
	e.waitReady()

	for i, tc := range []struct {
		name, path, accept string
		code               int
		// kind is the responseObject's kind; "" for none.
		kind string
		// reason is the responseStatus's (only a logged Status has one).
		reason metav1.StatusReason
		// watch: a long-running request, whose ResponseStarted event has
		// the same responseStatus and responseObject.
		watch bool
	}{
		{name: "version", path: "/version", code: 200},
		{name: "openapi", path: "/openapi/v2", code: 200},
		{name: "watch stream", path: "/api/v1/namespaces/default/configmaps?watch=1&timeoutSeconds=1", code: 200, watch: true},
		{name: "discovery", path: "/apis", code: 200, kind: "APIGroupList"},
		{name: "aggregated discovery", path: "/apis", accept: "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList",
			code: 200, kind: "APIGroupDiscoveryList"},
		{name: "resource discovery", path: "/api/v1", code: 200, kind: "APIResourceList"},
		{name: "list", path: "/api/v1/namespaces/default/configmaps", code: 200, kind: "ConfigMapList"},
		{name: "not found", path: "/api/v1/namespaces/default/configmaps/missing", code: 404, kind: "Status", reason: metav1.StatusReasonNotFound},
		{name: "no such path", path: "/nowhere", code: 404, kind: "Status", reason: metav1.StatusReasonNotFound},
		{name: "watch refused", path: "/api/v1/namespaces/default/configmaps?watch=1&labelSelector=a+b+c", code: 400, kind: "Status",
			reason: metav1.StatusReasonBadRequest, watch: true},
		{name: "not acceptable", path: "/api/v1/namespaces/default/configmaps/missing", accept: "application/xml", code: 406},
		{name: "discovery not acceptable", path: "/apis", accept: "application/xml", code: 406},
	} {
		id := "resp-object-" + string(rune('a'+i))
		hdr := []string{"Audit-ID", id}
		if tc.accept != "" {
			hdr = append(hdr, "Accept", tc.accept)
		}
		if r := e.do(http.MethodGet, tc.path, nil, hdr...); r.code != tc.code {
			t.Errorf("%s: code %d, want %d: %s", tc.name, r.code, tc.code, r.body)
			continue
		}
		var ev *audit.Event
		for deadline := time.Now().Add(5 * time.Second); ev == nil && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			ev = b.stage(id, audit.StageResponseComplete)
		}
		if ev == nil {
			t.Errorf("%s: no ResponseComplete event", tc.name)
			continue
		}
		var obj struct {
			Kind string `json:"kind"`
		}
		switch {
		case tc.kind == "" && ev.ResponseObject != nil:
			t.Errorf("%s: responseObject %.200s, want none", tc.name, ev.ResponseObject)
		case tc.kind != "" && json.Unmarshal(ev.ResponseObject, &obj) != nil:
			t.Errorf("%s: responseObject %.200q, want a %s", tc.name, ev.ResponseObject, tc.kind)
		case tc.kind != "" && obj.Kind != tc.kind:
			t.Errorf("%s: responseObject of kind %q, want %s: %.200s", tc.name, obj.Kind, tc.kind, ev.ResponseObject)
		}
		if st := ev.ResponseStatus; st == nil || st.Code != int32(tc.code) || st.Reason != tc.reason || (tc.kind != "Status" && *st != metav1.Status{Code: int32(tc.code)}) {
			t.Errorf("%s: responseStatus %+v, want code %d, reason %q", tc.name, st, tc.code, tc.reason)
		}
		if started := b.stage(id, audit.StageResponseStarted); tc.watch && (started == nil || started.ResponseStatus == nil || ev.ResponseStatus == nil ||
			started.ResponseStatus.Reason != ev.ResponseStatus.Reason || string(started.ResponseObject) != string(ev.ResponseObject)) {
			t.Errorf("%s: ResponseStarted %+v, want the responseStatus and responseObject of ResponseComplete", tc.name, started)
		}
	}
}
