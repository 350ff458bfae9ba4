package apiserver_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// TestAuditDeleteRequestObjectIsTheDecodedOptions: as kube-apiserver's
// delete and deletecollection handlers, a body is decoded to
// DeleteOptions with the meta internal version's codecs and recorded as
// that object encoded again as JSON, whatever the body's media type (JSON,
// YAML, protobuf) or apiVersion: DeleteOptions is an unversioned kind of
// that scheme, so it is always stamped with its first registered version,
// meta.k8s.io/__internal, its fields in the type's order, unknown ones
// gone. A delete without a body (its options in the query, or none) has no
// requestObject. The same at the Request and RequestResponse levels.
func TestAuditDeleteRequestObjectIsTheDecodedOptions(t *testing.T) {
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte(`apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: RequestResponse
  namespaces: ["rr"]
- level: Request
`))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend = policy, b })
	e.waitReady()
	if r := e.do(http.MethodPost, "/api/v1/namespaces", []byte(`{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"rr"}}`)); r.code != 201 {
		t.Fatalf("namespace: %d %s", r.code, r.body)
	}

	pbOpts := func(apiVersion string) []byte {
		t.Helper()
		grace := int64(0)
		raw, err := (&metav1.DeleteOptions{GracePeriodSeconds: &grace}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		env, err := (&runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: "DeleteOptions"}, Raw: raw}).Marshal()
		if err != nil {
			t.Fatal(err)
		}
		return append([]byte("k8s\x00"), env...)
	}
	const internal = `{"kind":"DeleteOptions","apiVersion":"meta.k8s.io/__internal"`
	cases := []struct {
		id, ct, query string
		body          []byte
		collection    bool
		// want is the requestObject; "" for none.
		want string
	}{
		{id: "json", ct: "application/json",
			body: []byte(`{"propagationPolicy":"Background","apiVersion":"v1","kind":"DeleteOptions","gracePeriodSeconds":0}`),
			want: internal + `,"gracePeriodSeconds":0,"propagationPolicy":"Background"}`},
		{id: "json-meta", ct: "application/json",
			body: []byte(`{"apiVersion":"meta.k8s.io/v1","kind":"DeleteOptions","dryRun":["All"]}`),
			want: internal + `,"dryRun":["All"]}`},
		{id: "json-nokind", ct: "application/json", body: []byte(`{"preconditions":{"uid":null},"unknown":1}`),
			want: internal + `,"preconditions":{}}`},
		{id: "json-empty", ct: "application/json", body: []byte(`{}`), want: internal + `}`},
		{id: "yaml", ct: "application/yaml", body: []byte("kind: DeleteOptions\napiVersion: v1\npropagationPolicy: Orphan\n"),
			want: internal + `,"propagationPolicy":"Orphan"}`},
		{id: "protobuf", ct: "application/vnd.kubernetes.protobuf", body: pbOpts("v1"), want: internal + `,"gracePeriodSeconds":0}`},
		{id: "nobody", query: "?gracePeriodSeconds=0"},
		{id: "nobody-plain"},
		{id: "collection-json", ct: "application/json", collection: true,
			body: []byte(`{"kind":"DeleteOptions","apiVersion":"v1","propagationPolicy":"Foreground"}`),
			want: internal + `,"propagationPolicy":"Foreground"}`},
		{id: "collection-protobuf", ct: "application/vnd.kubernetes.protobuf", collection: true, body: pbOpts("meta.k8s.io/v1"),
			want: internal + `,"gracePeriodSeconds":0}`},
		{id: "collection-nobody", collection: true, query: "?gracePeriodSeconds=0"},
	}
	for _, ns := range []string{"default", "rr"} {
		level := audit.LevelRequest
		if ns == "rr" {
			level = audit.LevelRequestResponse
		}
		for _, tc := range cases {
			id := ns + "-" + tc.id
			path := "/api/v1/namespaces/" + ns + "/configmaps"
			if r := e.do(http.MethodPost, path, []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"`+tc.id+`","labels":{"case":"`+tc.id+`"}}}`)); r.code != 201 {
				t.Fatalf("%s: create: %d %s", id, r.code, r.body)
			}
			if tc.collection {
				path += "?labelSelector=case%3D" + tc.id
				if tc.query != "" {
					path += "&" + tc.query[1:]
				}
			} else {
				path += "/" + tc.id + tc.query
			}
			hdr := []string{"Audit-ID", id}
			if tc.ct != "" {
				hdr = append(hdr, "Content-Type", tc.ct)
			}
			if r := e.do(http.MethodDelete, path, tc.body, hdr...); r.code != 200 {
				t.Fatalf("%s: DELETE %s: %d %s", id, path, r.code, r.body)
			}
			ev := b.stage(id, audit.StageResponseComplete)
			if ev == nil {
				t.Fatalf("%s: no ResponseComplete event", id)
			}
			if ev.Level != level {
				t.Errorf("%s: level %s, want %s", id, ev.Level, level)
			}
			if got := string(ev.RequestObject); got != tc.want {
				t.Errorf("%s: requestObject %s, want %s", id, got, tc.want)
			}
			if rr := b.stage(id, audit.StageRequestReceived); rr == nil || rr.RequestObject != nil {
				t.Errorf("%s: RequestReceived %+v, want one without requestObject", id, rr)
			}
		}
	}
}

// TestAuditEvictionAndReviewRequestObject: an eviction (a create of
// pods/eviction) and a review are recorded as kube-apiserver's create
// handler records them: the decoded object encoded again in the body's
// group version — a policy/v1beta1 Eviction as policy/v1beta1, its
// deleteOptions as sent — kind first, fields in the type's order.
func TestAuditEvictionAndReviewRequestObject(t *testing.T) {
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Request\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend = policy, b })
	e.waitReady()
	send := func(id, path, body string, code int) string {
		t.Helper()
		if r := e.do(http.MethodPost, path, []byte(body), "Audit-ID", id); r.code != code {
			t.Fatalf("%s: POST %s: %d, want %d: %s", id, path, r.code, code, r.body)
		}
		ev := b.stage(id, audit.StageResponseComplete)
		if ev == nil {
			t.Fatalf("%s: no ResponseComplete event", id)
		}
		return string(ev.RequestObject)
	}
	for _, gv := range []string{"policy/v1", "policy/v1beta1"} {
		name := "ev-" + gv[len("policy/"):]
		send("pod-"+name, "/api/v1/namespaces/default/pods",
			`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"`+name+`"},"spec":{"containers":[{"name":"c","image":"busybox"}]}}`, 201)
		got := send(name, "/api/v1/namespaces/default/pods/"+name+"/eviction",
			`{"deleteOptions":{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0},"metadata":{"name":"`+name+`"},"kind":"Eviction","apiVersion":"`+gv+`"}`, 201)
		want := `{"kind":"Eviction","apiVersion":"` + gv + `","metadata":{"name":"` + name + `"},"deleteOptions":{"kind":"DeleteOptions","apiVersion":"v1","gracePeriodSeconds":0}}`
		if got != want {
			t.Errorf("%s eviction: requestObject %s, want %s", gv, got, want)
		}
	}
	got := send("ssar", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
		`{"spec":{"resourceAttributes":{"resource":"pods","verb":"get"}},"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1"}`, 201)
	if want := `{"kind":"SelfSubjectAccessReview","apiVersion":"authorization.k8s.io/v1","metadata":{},"spec":{"resourceAttributes":{"verb":"get","resource":"pods"}},"status":{"allowed":false}}`; got != want {
		t.Errorf("selfsubjectaccessreview: requestObject %s, want %s", got, want)
	}
}
