package flowcontrol

import (
	"net/http/httptest"
	"testing"

	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// sa is the user a service account authenticates as.
func sa(namespace, name string) *request.User {
	return &request.User{Name: "system:serviceaccount:" + namespace + ":" + name,
		Groups: []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"}}
}

func node(name string) *request.User {
	return &request.User{Name: "system:node:" + name, Groups: []string{"system:nodes", "system:authenticated"}}
}

func named(name string, groups ...string) *request.User {
	return &request.User{Name: name, Groups: append(groups, "system:authenticated")}
}

// TestClassifyAsKubeAPIServer: the users of `kubeproof up`'s in-process
// components (impl/cluster/components.go: the scheduler and controller
// manager by name, the controllers as kube-system service accounts with
// --use-service-account-credentials, the kubelets as system:node:<name>)
// and others land in the flow schema and priority level kube-apiserver's
// default configuration gives them.
func TestClassifyAsKubeAPIServer(t *testing.T) {
	c, err := New(Config{TotalSeats: 600})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name         string
		user         *request.User
		method, path string
		schema       string
		level        string
	}{
		{"admin anything", named("kubernetes-admin", "system:masters"), "POST", "/api/v1/namespaces/default/pods", "exempt", "exempt"},
		{"admin non-resource", named("kubernetes-admin", "system:masters"), "GET", "/metrics", "exempt", "exempt"},
		{"probe by anyone", named("alice"), "GET", "/readyz", "probes", "exempt"},
		{"anonymous livez", &request.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, "GET", "/livez", "probes", "exempt"},
		{"healthz sub-check is a probe", named("alice"), "GET", "/healthz/etcd", "probes", "exempt"},
		{"probe paths only for get", named("alice"), "POST", "/healthz", "global-default", "global-default"},

		{"controller manager lease", named("system:kube-controller-manager"), "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager", "system-leader-election", "leader-election"},
		{"scheduler lease get", named("system:kube-scheduler"), "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-scheduler", "system-leader-election", "leader-election"},
		{"scheduler lease watch is not leader election", named("system:kube-scheduler"), "GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?watch=true", "kube-scheduler", "workload-high"},
		{"scheduler binds", named("system:kube-scheduler"), "POST", "/api/v1/namespaces/default/pods/p/binding", "kube-scheduler", "workload-high"},
		{"scheduler lists nodes", named("system:kube-scheduler"), "GET", "/api/v1/nodes", "kube-scheduler", "workload-high"},
		{"scheduler events", named("system:kube-scheduler"), "POST", "/apis/events.k8s.io/v1/namespaces/default/events", "kube-scheduler", "workload-high"},
		{"controller manager's own client", named("system:kube-controller-manager"), "GET", "/api/v1/namespaces/kube-system/secrets", "kube-controller-manager", "workload-high"},
		{"controller manager endpoints", named("system:kube-controller-manager"), "PUT", "/api/v1/namespaces/default/endpoints/svc", "endpoint-controller", "workload-high"},

		{"replicaset controller creates pods", sa("kube-system", "replicaset-controller"), "POST", "/api/v1/namespaces/default/pods", "kube-system-service-accounts", "workload-high"},
		{"deployment controller updates status", sa("kube-system", "deployment-controller"), "PUT", "/apis/apps/v1/namespaces/default/deployments/d/status", "kube-system-service-accounts", "workload-high"},
		{"endpoint controller", sa("kube-system", "endpoint-controller"), "PUT", "/api/v1/namespaces/default/endpoints/svc", "endpoint-controller", "workload-high"},
		{"endpointslice controller", sa("kube-system", "endpointslice-controller"), "POST", "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices", "kube-system-service-accounts", "workload-high"},
		{"root CA publisher's configmaps count as leader election", sa("kube-system", "root-ca-cert-publisher"), "POST", "/api/v1/namespaces/team/configmaps", "workload-leader-election", "leader-election"},
		{"kube-system service account lease", sa("kube-system", "some-operator"), "PUT", "/apis/coordination.k8s.io/v1/namespaces/ops/leases/x", "system-leader-election", "leader-election"},
		{"node lifecycle controller", sa("kube-system", "node-controller"), "PATCH", "/api/v1/nodes/n1/status", "kube-system-service-accounts", "workload-high"},
		{"service account elsewhere", sa("default", "app"), "GET", "/api/v1/namespaces/default/pods", "service-accounts", "workload-low"},
		{"kube-systemx is not kube-system", sa("kube-systemx", "app"), "GET", "/api/v1/namespaces/default/pods", "service-accounts", "workload-low"},

		{"kubelet node status", node("n1"), "PATCH", "/api/v1/nodes/n1/status", "system-node-high", "node-high"},
		{"kubelet node get", node("n1"), "GET", "/api/v1/nodes/n1", "system-node-high", "node-high"},
		{"kubelet lease", node("n1"), "PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n1", "system-node-high", "node-high"},
		{"kubelet pod status", node("n1"), "PATCH", "/api/v1/namespaces/default/pods/p/status", "system-nodes", "system"},
		{"kubelet pod watch", node("n1"), "GET", "/api/v1/pods?watch=true&fieldSelector=spec.nodeName%3Dn1", "system-nodes", "system"},
		{"kubelet events", node("n1"), "POST", "/api/v1/namespaces/default/events", "system-nodes", "system"},

		{"a user", named("alice"), "GET", "/api/v1/namespaces/default/pods", "global-default", "global-default"},
		{"anonymous version", &request.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}, "GET", "/version", "global-default", "global-default"},
		{"no groups at all", &request.User{Name: "nobody"}, "GET", "/api/v1/pods", "catch-all", "catch-all"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			info := request.Parse(httptest.NewRequest(tc.method, tc.path, nil))
			cl := c.Classify(tc.user, info)
			if cl.FlowSchema().Name != tc.schema || cl.PriorityLevel().Name != tc.level {
				t.Errorf("%s %s by %s: flow schema %s, level %s; want %s, %s", tc.method, tc.path, tc.user.Name,
					cl.FlowSchema().Name, cl.PriorityLevel().Name, tc.schema, tc.level)
			}
			if got, want := cl.Exempt(), tc.level == "exempt"; got != want {
				t.Errorf("exempt %v, want %v", got, want)
			}
		})
	}
}

func TestNoUserIsCatchAll(t *testing.T) {
	c, err := New(Config{TotalSeats: 600})
	if err != nil {
		t.Fatal(err)
	}
	if got := c.Classify(nil, request.Parse(httptest.NewRequest("GET", "/api/v1/pods", nil))).FlowSchema().Name; got != "catch-all" {
		t.Errorf("no user: %s, want catch-all", got)
	}
}

func TestDistinguisher(t *testing.T) {
	c, err := New(Config{TotalSeats: 600})
	if err != nil {
		t.Fatal(err)
	}
	classify := func(u *request.User, path string) Classification {
		return c.Classify(u, request.Parse(httptest.NewRequest("GET", path, nil)))
	}
	// ByUser: two users of global-default are two flows, one user's
	// requests in two namespaces one.
	if classify(named("alice"), "/api/v1/namespaces/a/pods").hash != classify(named("alice"), "/api/v1/namespaces/b/pods").hash {
		t.Error("ByUser: one user in two namespaces got two flows")
	}
	if classify(named("alice"), "/api/v1/namespaces/a/pods").hash == classify(named("bob"), "/api/v1/namespaces/a/pods").hash {
		t.Error("ByUser: two users got one flow")
	}
	// ByNamespace: the scheduler's requests in two namespaces are two flows.
	if classify(named("system:kube-scheduler"), "/api/v1/namespaces/a/pods").hash == classify(named("system:kube-scheduler"), "/api/v1/namespaces/b/pods").hash {
		t.Error("ByNamespace: two namespaces got one flow")
	}
}

func TestDefaultsAreKubeAPIServers(t *testing.T) {
	fs := DefaultFlowSchemas()
	sortSchemas(fs)
	var got []string
	for _, f := range fs {
		got = append(got, f.Name)
	}
	want := []string{"exempt", "probes", "system-leader-election", "endpoint-controller", "workload-leader-election",
		"system-node-high", "system-nodes", "kube-controller-manager", "kube-scheduler", "kube-system-service-accounts",
		"service-accounts", "global-default", "catch-all"}
	if len(got) != len(want) {
		t.Fatalf("flow schemas %v, want %v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("flow schemas in matching order %v, want %v", got, want)
		}
	}
	// Each level's seats out of kube-apiserver's default 600: shares 30,
	// 40, 10, 40, 100, 20, 5 (sum 245).
	d, err := NewDispatcher(DefaultPriorityLevels(), 600)
	if err != nil {
		t.Fatal(err)
	}
	wantLimits := map[string][2]int{
		"exempt": {0, 0}, "catch-all": {13, 0}, "system": {74, 24}, "node-high": {98, 25},
		"leader-election": {25, 0}, "workload-high": {98, 49}, "workload-low": {245, 221}, "global-default": {49, 25},
	}
	for _, l := range d.Limits() {
		if w := wantLimits[l.Name]; l.Nominal != w[0] || l.Lendable != w[1] {
			t.Errorf("level %s: nominal %d lendable %d, want %d %d", l.Name, l.Nominal, l.Lendable, w[0], w[1])
		}
		delete(wantLimits, l.Name)
	}
	if len(wantLimits) != 0 {
		t.Errorf("levels missing: %v", wantLimits)
	}
	if UID("flowschemas", "exempt") == UID("flowschemas", "probes") || UID("flowschemas", "exempt") != fs[0].UID {
		t.Error("flow schema UIDs are not fixed per name")
	}
	for _, p := range DefaultPriorityLevels() {
		if p.Spec.Type == flowcontrolv1.PriorityLevelEnablementLimited && p.Spec.Limited.BorrowingLimitPercent != nil {
			t.Errorf("level %s has a borrowing limit; kube-apiserver's defaults have none", p.Name)
		}
	}
}

func TestNonResourcePaths(t *testing.T) {
	for _, tc := range []struct {
		rule, path string
		want       bool
	}{
		{"*", "/anything", true},
		{"/healthz", "/healthz", true},
		{"/healthz", "/healthz/etcd", true},
		{"/healthz", "/healthzx", false},
		{"/apis/*", "/apis/apps", true},
		{"/apis/*", "/apis", false},
		{"/metrics", "/version", false},
	} {
		r := flowcontrolv1.NonResourcePolicyRule{Verbs: []string{"*"}, NonResourceURLs: []string{tc.rule}}
		if got := nonResourceRuleMatches(r, &request.Info{Path: tc.path, Verb: "get"}); got != tc.want {
			t.Errorf("rule %q, path %q: %v, want %v", tc.rule, tc.path, got, tc.want)
		}
	}
}
