package apiserver_test

import (
	"net/http"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/internal/reqlatency"
)

// slowReceipt is an audit backend that takes 600 ms over a request's
// RequestReceived event (a slow blocking backend): the request then takes
// more than kube-apiserver's 500 ms latency-annotation threshold.
type slowReceipt struct{ auditEvents }

func (b *slowReceipt) ProcessEvent(ev *audit.Event) bool {
	if ev.Stage == audit.StageRequestReceived && ev.AuditID == "slow" {
		time.Sleep(600 * time.Millisecond)
	}
	return b.auditEvents.ProcessEvent(ev)
}

// TestAuditLatencyAnnotations: a create served in more than 500 ms has,
// in its ResponseComplete event, the apiserver.latency.k8s.io/etcd (its
// etcd round trips), /transform-response-object,
// /serialize-response-object, /response-write and /total annotations, as
// kube-apiserver's (the threshold itself is TestLatencyAnnotations').
func TestAuditLatencyAnnotations(t *testing.T) {
	b := &slowReceipt{auditEvents{evs: map[string][]*audit.Event{}}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"))
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) { c.AuditPolicy, c.AuditBackend = policy, b })
	e.waitReady()
	body := []byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"slow"}}`)
	if r := e.do(http.MethodPost, "/api/v1/namespaces/default/configmaps", body, "Audit-ID", "slow", "Content-Type", "application/json"); r.code != 201 {
		t.Fatalf("create: %d %s", r.code, r.body)
	}
	ev := b.stage("slow", audit.StageResponseComplete)
	if ev == nil {
		t.Fatal("no ResponseComplete event")
	}
	for _, k := range []string{reqlatency.EtcdKey, reqlatency.TransformKey, reqlatency.SerializeKey, reqlatency.ResponseWriteKey, reqlatency.TotalKey} {
		if d, err := time.ParseDuration(ev.Annotations[k]); err != nil || d <= 0 {
			t.Errorf("slow create: %s = %q, want a duration", k, ev.Annotations[k])
		}
	}
	if d, _ := time.ParseDuration(ev.Annotations[reqlatency.TotalKey]); d < 600*time.Millisecond {
		t.Errorf("slow create: total %v, want at least the 600ms the backend took", d)
	}
	// A read's answer is transformed (its kind stamped, or a Table made).
	if r := e.do(http.MethodGet, "/api/v1/namespaces/default/configmaps/slow", nil, "Audit-ID", "slow"); r.code != 200 {
		t.Fatalf("get: %d %s", r.code, r.body)
	}
	// So is a review's (served outside the resource handlers).
	review := []byte(`{"apiVersion":"authentication.k8s.io/v1","kind":"SelfSubjectReview"}`)
	if r := e.do(http.MethodPost, "/apis/authentication.k8s.io/v1/selfsubjectreviews", review, "Audit-ID", "slow", "Content-Type", "application/json"); r.code != 201 {
		t.Fatalf("review: %d %s", r.code, r.body)
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, want := range []struct{ verb, resource string }{{"get", "configmaps"}, {"create", "selfsubjectreviews"}} {
		var slow *audit.Event
		for _, ev := range b.evs["slow"] {
			if ev.Verb == want.verb && ev.ObjectRef != nil && ev.ObjectRef.Resource == want.resource && ev.Stage == audit.StageResponseComplete {
				slow = ev
			}
		}
		if slow == nil {
			t.Fatalf("%s %s: no ResponseComplete event", want.verb, want.resource)
		}
		for _, k := range []string{reqlatency.TransformKey, reqlatency.SerializeKey, reqlatency.TotalKey} {
			if d, err := time.ParseDuration(slow.Annotations[k]); err != nil || d <= 0 {
				t.Errorf("slow %s %s: %s = %q, want a duration", want.verb, want.resource, k, slow.Annotations[k])
			}
		}
	}
}
