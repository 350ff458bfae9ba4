package apiserver_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// auditEvents keeps every event, by audit ID.
type auditEvents struct {
	mu  sync.Mutex
	evs map[string][]*audit.Event
}

func (b *auditEvents) ProcessEvent(ev *audit.Event) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.evs[string(ev.AuditID)] = append(b.evs[string(ev.AuditID)], ev)
	return true
}

func (b *auditEvents) stage(id string, s audit.Stage) *audit.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, ev := range b.evs[id] {
		if ev.Stage == s {
			return ev
		}
	}
	return nil
}

// TestAuditObjectRefFromRequestObject: as kube-apiserver, a create's or an
// update's objectRef is completed from the decoded body (namespace, name,
// uid and resourceVersion the path left empty), in the ResponseComplete
// event (RequestReceived has only the path's); a generateName create has
// no name (it is generated after), a dry run is filled as any create, a
// body that does not decode fills nothing, and patches and deletes keep
// the path's. A rule's resourceNames match the path's name only.
func TestAuditObjectRefFromRequestObject(t *testing.T) {
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte(`apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: None
  resources: [{group: "", resources: [configmaps], resourceNames: [skipped]}]
- level: Metadata
`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend = policy, b })
	e.waitReady()

	seq := 0
	send := func(method, path, body string, wantCode int) (string, []byte) {
		t.Helper()
		seq++
		id := fmt.Sprintf("haud-%d", seq)
		var data []byte
		if body != "" {
			data = []byte(body)
		}
		ct := "application/json"
		if method == http.MethodPatch {
			ct = "application/merge-patch+json"
		}
		r := e.do(method, path, data, "Audit-ID", id, "Content-Type", ct)
		if r.code != wantCode {
			t.Fatalf("%s %s: code %d, want %d: %s", method, path, r.code, wantCode, r.body)
		}
		return id, r.body
	}
	check := func(what, id string, want audit.ObjectReference) {
		t.Helper()
		ev := b.stage(id, audit.StageResponseComplete)
		if ev == nil || ev.ObjectRef == nil {
			t.Errorf("%s: no ResponseComplete event with an objectRef", what)
			return
		}
		if *ev.ObjectRef != want {
			t.Errorf("%s: objectRef %+v, want %+v", what, *ev.ObjectRef, want)
		}
	}
	cm := func(ns, name string) audit.ObjectReference {
		return audit.ObjectReference{Resource: "configmaps", Namespace: ns, Name: name, APIVersion: "v1"}
	}

	id, body := send(http.MethodPost, "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one"}}`, 201)
	check("create", id, cm("default", "one"))
	if rr := b.stage(id, audit.StageRequestReceived); rr == nil || rr.ObjectRef.Name != "" {
		t.Errorf("create RequestReceived: %+v, want the path's objectRef (no name)", rr)
	}
	var created struct {
		Metadata struct{ UID, ResourceVersion string } `json:"metadata"`
	}
	if err := json.Unmarshal(body, &created); err != nil {
		t.Fatal(err)
	}

	id, _ = send(http.MethodPost, "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"generateName":"gen-"}}`, 201)
	check("generateName create", id, cm("default", ""))

	id, _ = send(http.MethodPost, "/api/v1/namespaces/default/configmaps?dryRun=All", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"dry"}}`, 201)
	check("dry-run create", id, cm("default", "dry"))

	id, _ = send(http.MethodPost, "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v2","kind":"ConfigMap","metadata":{"name":"bad"}}`, 400)
	check("create that does not decode", id, cm("default", ""))

	id, _ = send(http.MethodPost, "/api/v1/namespaces/default/configmaps", `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"skipped"}}`, 201)
	check("create of a name a None rule lists (matched on the path's name)", id, cm("default", "skipped"))

	id, _ = send(http.MethodPut, "/api/v1/namespaces/default/configmaps/one",
		fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"one","uid":%q,"resourceVersion":%q},"data":{"a":"b"}}`,
			created.Metadata.UID, created.Metadata.ResourceVersion), 200)
	want := cm("default", "one")
	want.UID, want.ResourceVersion = types.UID(created.Metadata.UID), created.Metadata.ResourceVersion
	check("update", id, want)

	id, _ = send(http.MethodPatch, "/api/v1/namespaces/default/configmaps/one", `{"metadata":{"resourceVersion":"","labels":{"x":"y"}}}`, 200)
	check("patch", id, cm("default", "one"))

	id, _ = send(http.MethodDelete, "/api/v1/namespaces/default/configmaps/one", `{"apiVersion":"v1","kind":"DeleteOptions"}`, 200)
	check("delete", id, cm("default", "one"))
	// The success Status a ConfigMap delete answers is the responseStatus,
	// as kube-apiserver's LogResponseObject records it.
	if st := b.stage(id, audit.StageResponseComplete).ResponseStatus; st == nil || st.Code != 200 || st.Status != "Success" ||
		st.Details == nil || st.Details.Name != "one" || st.Details.Kind != "configmaps" || string(st.Details.UID) != created.Metadata.UID {
		t.Errorf("delete responseStatus %+v, want code 200, Success and the deleted object's details", st)
	}

	// Subresource creates: a Binding's and an Eviction's metadata fill the uid.
	pod := func(name string) string {
		_, body := send(http.MethodPost, "/api/v1/namespaces/default/pods",
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"`+name+`"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, 201)
		var p struct {
			Metadata struct{ UID string } `json:"metadata"`
		}
		if err := json.Unmarshal(body, &p); err != nil {
			t.Fatal(err)
		}
		return p.Metadata.UID
	}
	uid := pod("bound")
	id, _ = send(http.MethodPost, "/api/v1/namespaces/default/pods/bound/binding",
		`{"apiVersion":"v1","kind":"Binding","metadata":{"name":"bound","uid":"`+uid+`"},"target":{"name":"node-1"}}`, 201)
	check("binding", id, audit.ObjectReference{Resource: "pods", Namespace: "default", Name: "bound", UID: types.UID(uid), APIVersion: "v1", Subresource: "binding"})
	pod("evicted")
	id, _ = send(http.MethodPost, "/api/v1/namespaces/default/pods/evicted/eviction",
		`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"evicted","uid":"ev-uid"}}`, 201)
	check("eviction", id, audit.ObjectReference{Resource: "pods", Namespace: "default", Name: "evicted", UID: "ev-uid", APIVersion: "v1", Subresource: "eviction"})

	id, _ = send(http.MethodPost, "/api/v1/namespaces", `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"team"}}`, 201)
	check("namespace create", id, audit.ObjectReference{Resource: "namespaces", Name: "team", APIVersion: "v1"})

	id, _ = send(http.MethodPost, "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		`{"apiVersion":"authorization.k8s.io/v1","kind":"SelfSubjectAccessReview","metadata":{"name":"probe"},"spec":{"resourceAttributes":{"verb":"get","resource":"pods"}}}`, 422)
	// Logged before the review refuses a name, as kube-apiserver does.
	check("review", id, audit.ObjectReference{Resource: "selfsubjectaccessreviews", Name: "probe", APIGroup: "authorization.k8s.io", APIVersion: "v1"})
}

// TestAuditRequestObjectOnceDecoded: at the Request level, as
// kube-apiserver, a create's body is in the ResponseComplete event once
// the handler decoded it (never in RequestReceived), a create refused
// before decoding has none, a patch's is the patch sent, a delete's or
// deletecollection's is recorded only once it decoded to DeleteOptions.
func TestAuditRequestObjectOnceDecoded(t *testing.T) {
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Request\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend = policy, b })
	e.waitReady()
	send := func(id, method, path, ct, body string, code int) {
		t.Helper()
		if r := e.do(method, path, []byte(body), "Audit-ID", id, "Content-Type", ct); r.code != code {
			t.Fatalf("%s %s: code %d, want %d: %s", method, path, r.code, code, r.body)
		}
	}
	const cm = `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"req"}}`
	send("create", http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", cm, 201)
	if ev := b.stage("create", audit.StageRequestReceived); ev == nil || ev.RequestObject != nil {
		t.Errorf("RequestReceived: %+v, want no requestObject", ev)
	}
	// The decoded object encoded again: kind first.
	const cmDecoded = `{"kind":"ConfigMap","apiVersion":"v1","metadata":{"name":"req"}}`
	if ev := b.stage("create", audit.StageResponseComplete); ev == nil || string(ev.RequestObject) != cmDecoded {
		t.Errorf("ResponseComplete: %+v, want requestObject %s", ev, cmDecoded)
	}
	send("bad", http.MethodPost, "/api/v1/namespaces/default/configmaps", "application/json", `{"apiVersion":"v9","kind":"ConfigMap"}`, 400)
	if ev := b.stage("bad", audit.StageResponseComplete); ev == nil || ev.RequestObject != nil {
		t.Errorf("create refused before decoding: %+v, want no requestObject", ev)
	}
	const patch = `{"data":{"k":"v"}}`
	send("patch", http.MethodPatch, "/api/v1/namespaces/default/configmaps/req", "application/merge-patch+json", patch, 200)
	if ev := b.stage("patch", audit.StageResponseComplete); ev == nil || string(ev.RequestObject) != patch {
		t.Errorf("patch: %+v, want requestObject %s", ev, patch)
	}
	const opts = `{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":0}`
	send("delete", http.MethodDelete, "/api/v1/namespaces/default/configmaps/req", "application/json", opts, 200)
	// The options decoded and encoded again, as kube-apiserver's
	// (TestAuditDeleteRequestObjectIsTheDecodedOptions).
	const optsDecoded = `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/__internal","gracePeriodSeconds":0}`
	if ev := b.stage("delete", audit.StageResponseComplete); ev == nil || string(ev.RequestObject) != optsDecoded {
		t.Errorf("delete: %+v, want requestObject %s", ev, optsDecoded)
	}
	for _, path := range []string{"/api/v1/namespaces/default/configmaps/req", "/api/v1/namespaces/default/configmaps"} {
		id := "undecoded" + strings.ReplaceAll(path, "/", "-")
		send(id, http.MethodDelete, path, "application/json", `{"apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":"soon"}`, 400)
		if ev := b.stage(id, audit.StageResponseComplete); ev == nil || ev.RequestObject != nil {
			t.Errorf("DELETE %s with a body that is no DeleteOptions: %+v, want no requestObject", path, ev)
		}
	}
	// A deletecollection's list options are read before its body, as
	// kube-apiserver's DeleteCollection: bad ones leave the body unread.
	send("badselector", http.MethodDelete, "/api/v1/namespaces/default/configmaps?labelSelector=a%3D%3D%3Db", "application/json", opts, 400)
	if ev := b.stage("badselector", audit.StageResponseComplete); ev == nil || ev.RequestObject != nil {
		t.Errorf("deletecollection with a bad labelSelector: %+v, want no requestObject", ev)
	}
}

// TestAuditIDHeaderOnEveryRequest: as kube-apiserver (WithAuditInit,
// outside authentication), every answer has an Audit-Id header, with no
// audit log configured and for a request authentication refuses too; a
// client's Audit-ID is echoed.
func TestAuditIDHeaderOnEveryRequest(t *testing.T) {
	e := newEnv(t, nil)
	e.waitReady()
	if r := e.do(http.MethodGet, "/api/v1/namespaces/default/configmaps", nil); r.header.Get("Audit-Id") == "" {
		t.Errorf("no Audit-Id header: %v", r.header)
	}
	if r := e.do(http.MethodGet, "/api", nil, "Audit-ID", "chosen"); r.header.Get("Audit-Id") != "chosen" {
		t.Errorf("Audit-Id %q, want the client's", r.header.Get("Audit-Id"))
	}
	if r := e.doWith(e.anon, http.MethodGet, "/api/v1/namespaces", nil, "Authorization", "Bearer wrong"); r.code != http.StatusUnauthorized || r.header.Get("Audit-Id") == "" {
		t.Errorf("refused request: code %d, Audit-Id %q", r.code, r.header.Get("Audit-Id"))
	}
}
