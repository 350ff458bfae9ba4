package apiserver_test

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// The objects the server writes itself carry the managedFields
// kube-apiserver's loopback client leaves: one entry, manager
// kube-apiserver (its user agent's product), operation Update, owning
// the fields the write set.
func TestInternalWritesManagedFields(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	e := newEnv(t, func(c *apiserver.Config) { c.AdvertiseAddress = net.ParseIP("192.0.2.10") })
	c := ctx(t)
	check := func(what string, mf []metav1.ManagedFieldsEntry, apiVersion string, fields ...string) {
		t.Helper()
		if len(mf) != 1 || mf[0].Manager != "kube-apiserver" || mf[0].Operation != metav1.ManagedFieldsOperationUpdate ||
			mf[0].APIVersion != apiVersion || mf[0].FieldsType != "FieldsV1" || mf[0].Time == nil || mf[0].FieldsV1 == nil {
			t.Errorf("%s managedFields: %+v", what, mf)
			return
		}
		for _, f := range fields {
			if !strings.Contains(string(mf[0].FieldsV1.Raw), f) {
				t.Errorf("%s managedFields %s: no %s", what, mf[0].FieldsV1.Raw, f)
			}
		}
	}
	for _, name := range apiserver.SystemNamespaces {
		ns, err := e.cs.CoreV1().Namespaces().Get(c, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		check("namespace "+name, ns.ManagedFields, "v1", `{"f:metadata":{"f:labels":{".":{},"f:kubernetes.io/metadata.name":{}}}}`)
	}
	svc, err := e.cs.CoreV1().Services("default").Get(c, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("service kubernetes", svc.ManagedFields, "v1", `"f:component":{}`, `"f:provider":{}`, `"f:clusterIP":{}`,
		`"f:ipFamilyPolicy":{}`, `"f:sessionAffinity":{}`, `"f:type":{}`, `"f:targetPort":{}`)
	ep, err := e.cs.CoreV1().Endpoints("default").Get(c, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("endpoints kubernetes", ep.ManagedFields, "v1", `"f:endpointslice.kubernetes.io/skip-mirror":{}`, `"f:subsets":{}`)
	slice, err := e.cs.DiscoveryV1().EndpointSlices("default").Get(c, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("endpointslice kubernetes", slice.ManagedFields, "discovery.k8s.io/v1", `"f:kubernetes.io/service-name":{}`,
		`"f:addressType":{}`, `"f:endpoints":{}`, `"f:ports":{}`)
}

// Under a policy logging everything, the server's own creates at start
// are audited as kube-apiserver audits its loopback client's: user
// system:apiserver (groups system:authenticated, system:masters), verb
// create, the collection's URI, from a loopback address, with the
// loopback client's user agent, answered 201.
func TestInternalCreatesAudited(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	b := &auditEvents{evs: map[string][]*audit.Event{}}
	policy, err := audit.ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: RequestResponse\n"))
	if err != nil {
		t.Fatal(err)
	}
	newEnv(t, func(c *apiserver.Config) {
		c.AuditPolicy, c.AuditBackend = policy, b
		c.AdvertiseAddress = net.ParseIP("192.0.2.10")
	})
	type create struct{ uri, resource, namespace, name string }
	want := []create{
		{"/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", "endpointslices", "default", "kubernetes"},
		{"/api/v1/namespaces/default/endpoints", "endpoints", "default", "kubernetes"},
		{"/api/v1/namespaces/default/services", "services", "default", "kubernetes"},
		{"/apis/scheduling.k8s.io/v1/priorityclasses", "priorityclasses", "", "system-node-critical"},
		{"/apis/scheduling.k8s.io/v1/priorityclasses", "priorityclasses", "", "system-cluster-critical"},
		{"/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", "prioritylevelconfigurations", "", "exempt"},
		{"/apis/flowcontrol.apiserver.k8s.io/v1/prioritylevelconfigurations", "prioritylevelconfigurations", "", "workload-low"},
		{"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", "flowschemas", "", "catch-all"},
		{"/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas", "flowschemas", "", "service-accounts"},
	}
	for _, ns := range apiserver.SystemNamespaces {
		want = append(want, create{"/api/v1/namespaces", "namespaces", "", ns})
	}
	find := func(w create) *audit.Event { return b.find("create", w.uri, w.name) }
	// The Endpoints are written just before the server serves.
	deadline := time.Now().Add(10 * time.Second)
	for _, w := range want {
		var ev *audit.Event
		for ; ; time.Sleep(20 * time.Millisecond) {
			if ev = find(w); ev != nil || time.Now().After(deadline) {
				break
			}
		}
		if ev == nil {
			t.Errorf("no ResponseComplete audit event of the create of %s %q at %s", w.resource, w.name, w.uri)
			continue
		}
		if ev.User.Username != "system:apiserver" || strings.Join(ev.User.Groups, ",") != "system:authenticated,system:masters" {
			t.Errorf("%s %q: audited user %+v, want system:apiserver in system:authenticated, system:masters", w.resource, w.name, ev.User)
		}
		if ev.ObjectRef.Resource != w.resource || ev.ObjectRef.Namespace != w.namespace {
			t.Errorf("%s %q: objectRef %+v", w.resource, w.name, ev.ObjectRef)
		}
		if len(ev.SourceIPs) != 1 || !net.ParseIP(ev.SourceIPs[0]).IsLoopback() {
			t.Errorf("%s %q: sourceIPs %v, want a loopback address", w.resource, w.name, ev.SourceIPs)
		}
		if !strings.HasPrefix(ev.UserAgent, "kube-apiserver/v1.37.2 (") {
			t.Errorf("%s %q: user agent %q, want kube-apiserver's loopback client's", w.resource, w.name, ev.UserAgent)
		}
		if ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201 {
			t.Errorf("%s %q: response status %+v, want 201", w.resource, w.name, ev.ResponseStatus)
		}
		if len(ev.RequestObject) == 0 || len(ev.ResponseObject) == 0 {
			t.Errorf("%s %q: no request or response object at RequestResponse", w.resource, w.name)
		}
	}
	// The FlowSchemas' Dangling condition: a server-side apply of the
	// status by the same client.
	var ev *audit.Event
	for ; ; time.Sleep(20 * time.Millisecond) {
		if ev = b.find("patch", "/apis/flowcontrol.apiserver.k8s.io/v1/flowschemas/exempt/status", "exempt"); ev != nil || time.Now().After(deadline) {
			break
		}
	}
	if ev == nil {
		t.Errorf("no ResponseComplete audit event of the status patch of FlowSchema exempt")
	} else if ev.User.Username != "system:apiserver" || !strings.HasPrefix(ev.UserAgent, "kube-apiserver/v1.37.2 (") ||
		ev.ObjectRef.Subresource != "status" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != 200 {
		t.Errorf("status patch of FlowSchema exempt audited as %+v from %q, objectRef %+v, answered %+v", ev.User, ev.UserAgent, ev.ObjectRef, ev.ResponseStatus)
	}
}

// find is the ResponseComplete event of a request of verb at uri (query
// aside) on the object named name, or nil.
func (b *auditEvents) find(verb, uri, name string) *audit.Event {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, evs := range b.evs {
		for _, ev := range evs {
			path, _, _ := strings.Cut(ev.RequestURI, "?")
			if ev.Stage == audit.StageResponseComplete && ev.Verb == verb && path == uri &&
				ev.ObjectRef != nil && ev.ObjectRef.Name == name {
				return ev
			}
		}
	}
	return nil
}

// The server's own creates at start are requests of system:apiserver,
// counted in apiserver_selfrequest_total as kube-apiserver counts its
// loopback client's: the four system namespaces, the kubernetes
// Service, the two system PriorityClasses.
func TestInternalCreatesCountedAsSelfRequests(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *apiserver.Config) { c.Metrics = reg })
	body := string(e.do("GET", "/metrics", nil).body)
	for _, want := range []string{
		`apiserver_selfrequest_total{resource="namespaces",subresource="",verb="POST"} 4`,
		`apiserver_selfrequest_total{resource="services",subresource="",verb="POST"} 1`,
		`apiserver_selfrequest_total{resource="priorityclasses",subresource="",verb="POST"} 2`,
	} {
		if !strings.Contains(body, want+"\n") {
			t.Errorf("metrics lack %s:\n%s", want, grepLines(body, "apiserver_selfrequest_total"))
		}
	}
}
