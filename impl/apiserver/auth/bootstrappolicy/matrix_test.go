package bootstrappolicy_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/node"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache/objcachetest"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/controller/clusterroleaggregation"
)

// union is --authorization-mode=Node,RBAC: the first Allow decides.
type union []auth.Authorizer

func (u union) Authorize(ctx context.Context, a auth.Attributes) (auth.Decision, string, error) {
	for _, z := range u {
		if d, reason, err := z.Authorize(ctx, a); d != auth.DecisionNoOpinion || err != nil {
			return d, reason, err
		}
	}
	return auth.DecisionNoOpinion, "", nil
}

type selectorKey struct{}

func create(t *testing.T, s *objcachetest.Stores, gr schema.GroupResource, ns, name string, obj runtime.Object) {
	t.Helper()
	st, _ := s.Store(gr)
	if err := st.Create(context.Background(), s.ObjectKey(gr, ns, name), obj, nil); err != nil {
		t.Fatalf("creating %s %s/%s: %v", gr, ns, name, err)
	}
}

func roleBinding(ns, name, clusterRole string, subjects ...rbacv1.Subject) *rbacv1.RoleBinding {
	return &rbacv1.RoleBinding{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		RoleRef:  rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: clusterRole},
		Subjects: subjects}
}

func pod(nodeName, ns, name, secret, configMap string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.PodSpec{
		NodeName: nodeName, ServiceAccountName: "sa-" + name,
		Volumes: []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: secret}}}},
		Containers: []corev1.Container{{Name: "c", Image: "i", EnvFrom: []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{
			LocalObjectReference: corev1.LocalObjectReference{Name: configMap}}}}}},
	}}
}

// startAuthorizers ensures the bootstrap policy and runs Node and RBAC
// over s until the test ends.
func startAuthorizers(t *testing.T, s *objcachetest.Stores) (auth.Authorizer, *rbac.Authorizer) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	if err := bootstrappolicy.Ensure(ctx, objcachetest.PolicyClient{Stores: s}); err != nil {
		t.Fatal(err)
	}
	r, err := rbac.New(s)
	if err != nil {
		t.Fatal(err)
	}
	n, err := node.New(s, node.Config{FieldSelector: func(ctx context.Context, _ *request.Info) string {
		v, _ := ctx.Value(selectorKey{}).(string)
		return v
	}})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{}, 2)
	go func() { r.Run(ctx); done <- struct{}{} }()
	go func() { n.Run(ctx); done <- struct{}{} }()
	t.Cleanup(func() {
		cancel()
		<-done
		<-done
		checkNoLeak(t)
	})
	wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
	defer wcancel()
	if err := r.WaitSynced(wctx); err != nil {
		t.Fatal(err)
	}
	if err := n.WaitSynced(wctx); err != nil {
		t.Fatal(err)
	}
	return union{n, r}, r
}

// ensureAggregated ensures the bootstrap policy and then writes every
// aggregated ClusterRole's rules as the clusterrole-aggregation controller
// does (clusterroleaggregation.AggregatedRules over the stored roles, one
// role at a time, until a round changes nothing): the RBAC authorizer
// grants only stored rules, so without this step admin, edit and view
// grant nothing.
func ensureAggregated(t *testing.T, s *objcachetest.Stores) {
	t.Helper()
	if err := bootstrappolicy.Ensure(context.Background(), objcachetest.PolicyClient{Stores: s}); err != nil {
		t.Fatal(err)
	}
	for changed := true; changed; {
		changed = false
		for _, r := range bootstrappolicy.ClusterRoles() {
			if r.AggregationRule == nil {
				continue
			}
			var stored []*rbacv1.ClusterRole
			for _, o := range bootstrappolicy.ClusterRoles() {
				stored = append(stored, getClusterRole(t, s, o.Name))
			}
			rules, err := clusterroleaggregation.AggregatedRules(getClusterRole(t, s, r.Name), stored)
			if err != nil {
				t.Fatal(err)
			}
			if !equality.Semantic.DeepEqual(rules, getClusterRole(t, s, r.Name).Rules) {
				updateClusterRole(t, s, r.Name, func(cr *rbacv1.ClusterRole) { cr.Rules = rules })
				changed = true
			}
		}
	}
}

func user(name string, groups ...string) *request.User {
	return &request.User{Name: name, Groups: append(groups, "system:authenticated")}
}

func sa(ns, name string) *request.User {
	return user("system:serviceaccount:"+ns+":"+name, "system:serviceaccounts", "system:serviceaccounts:"+ns)
}

// row is one (identity × verb × resource [× namespace/name]) cell.
type row struct {
	who      string
	verb     string
	group    string
	resource string // "pods/log" style for subresources; "" for a URL
	ns, name string
	path     string // non-resource requests
	selector string // fieldSelector of a list/watch
	allow    bool
}

func (r row) info() *request.Info {
	if r.resource == "" {
		return &request.Info{Verb: r.verb, Path: r.path}
	}
	res, sub := r.resource, ""
	for i := range res {
		if res[i] == '/' {
			res, sub = r.resource[:i], r.resource[i+1:]
			break
		}
	}
	return &request.Info{IsResourceRequest: true, Verb: r.verb, APIGroup: r.group, Resource: res, Subresource: sub,
		Namespace: r.ns, Name: r.name}
}

func (r row) String() string {
	target := r.path
	if r.resource != "" {
		target = fmt.Sprintf("%s.%s %s/%s", r.resource, r.group, r.ns, r.name)
	}
	if r.selector != "" {
		target += " ?fieldSelector=" + r.selector
	}
	return fmt.Sprintf("%s %s %s", r.who, r.verb, target)
}

// TestAuthorizationMatrix runs the default policy, with Node and RBAC in
// kube-apiserver's default order, against the allow/deny Kubernetes'
// defaults give each identity, once the clusterrole-aggregation controller
// has written admin, edit and view.
func TestAuthorizationMatrix(t *testing.T) {
	s := newStores(t)
	ensureAggregated(t, s)
	rb := rbacv1.Resource("rolebindings")
	create(t, s, rb, "team", "ed-edit", roleBinding("team", "ed-edit", "edit", rbacv1.Subject{Kind: "User", Name: "ed"}))
	create(t, s, rb, "team", "vi-view", roleBinding("team", "vi-view", "view", rbacv1.Subject{Kind: "User", Name: "vi"}))
	create(t, s, rb, "team", "app-view", roleBinding("team", "app-view", "view", rbacv1.Subject{Kind: "ServiceAccount", Name: "app"}))
	pods := corev1.Resource("pods")
	create(t, s, pods, "team", "pod-a", pod("a", "team", "pod-a", "secret-a", "cm-a"))
	create(t, s, pods, "team", "pod-b", pod("b", "team", "pod-b", "secret-b", "cm-b"))
	create(t, s, pods, "team", "pending", pod("", "team", "pending", "secret-p", "cm-p"))
	authz, rbacAuthz := startAuthorizers(t, s)

	users := map[string]*request.User{
		"admin":       user("admin", "system:masters"),
		"alice":       user("alice"),
		"ed":          user("ed"),
		"vi":          user("vi"),
		"scheduler":   user("system:kube-scheduler"),
		"kcm":         user("system:kube-controller-manager"),
		"rs-ctrl":     sa("kube-system", "replicaset-controller"),
		"deploy-ctrl": sa("kube-system", "deployment-controller"),
		"gc":          sa("kube-system", "generic-garbage-collector"),
		"ns-ctrl":     sa("kube-system", "namespace-controller"),
		"node-ctrl":   sa("kube-system", "node-controller"),
		"pdb-ctrl":    sa("kube-system", "disruption-controller"),
		"kubelet-a":   user("system:node:a", "system:nodes"),
		"kubelet-b":   user("system:node:b", "system:nodes"),
		"app":         sa("team", "app"),
		"anonymous":   {Name: "system:anonymous", Groups: []string{"system:unauthenticated"}},
		"monitor":     user("prometheus", "system:monitoring"),
	}
	const coord, apps = "coordination.k8s.io", "apps"
	rows := []row{
		// system:masters may do anything.
		{who: "admin", verb: "delete", resource: "nodes", name: "a", allow: true},
		{who: "admin", verb: "patch", resource: "pods/ephemeralcontainers", ns: "team", name: "pod-a", allow: true},
		{who: "admin", verb: "create", group: "rbac.authorization.k8s.io", resource: "clusterrolebindings", allow: true},
		{who: "admin", verb: "get", resource: "secrets", ns: "team", name: "secret-b", allow: true},
		{who: "admin", verb: "post", path: "/anything", allow: true},

		// A plain authenticated user: discovery, health, self reviews only.
		{who: "alice", verb: "get", path: "/api", allow: true},
		{who: "alice", verb: "get", path: "/apis/apps/v1", allow: true},
		{who: "alice", verb: "get", path: "/healthz", allow: true},
		{who: "alice", verb: "get", path: "/version", allow: true},
		{who: "alice", verb: "get", path: "/metrics", allow: false},
		{who: "alice", verb: "create", group: "authorization.k8s.io", resource: "selfsubjectaccessreviews", allow: true},
		{who: "alice", verb: "create", group: "authorization.k8s.io", resource: "selfsubjectrulesreviews", allow: true},
		{who: "alice", verb: "create", group: "authentication.k8s.io", resource: "selfsubjectreviews", allow: true},
		{who: "alice", verb: "create", group: "authorization.k8s.io", resource: "subjectaccessreviews", allow: false},
		{who: "alice", verb: "list", resource: "pods", ns: "team", allow: false},
		{who: "alice", verb: "get", resource: "namespaces", ns: "team", name: "team", allow: false},
		{who: "alice", verb: "create", resource: "pods", ns: "default", allow: false},

		// edit in one namespace (its aggregated rules: edit ⊇ view).
		{who: "ed", verb: "create", resource: "pods", ns: "team", allow: true},
		{who: "ed", verb: "delete", resource: "pods", ns: "team", name: "pod-a", allow: true},
		{who: "ed", verb: "get", resource: "pods/log", ns: "team", name: "pod-a", allow: true},
		{who: "ed", verb: "create", resource: "pods/exec", ns: "team", name: "pod-a", allow: true},
		{who: "ed", verb: "create", group: apps, resource: "deployments", ns: "team", allow: true},
		{who: "ed", verb: "patch", group: apps, resource: "deployments/scale", ns: "team", name: "web", allow: true},
		{who: "ed", verb: "get", resource: "secrets", ns: "team", name: "secret-a", allow: true},
		{who: "ed", verb: "get", resource: "namespaces", ns: "team", name: "team", allow: true},
		{who: "ed", verb: "update", resource: "pods/status", ns: "team", name: "pod-a", allow: false},
		// Not pods/ephemeralcontainers (kubectl debug): kube-apiserver leaves
		// it out of admin and edit on purpose, admission policies written
		// before ephemeral containers would not see them.
		{who: "ed", verb: "patch", resource: "pods/ephemeralcontainers", ns: "team", name: "pod-a", allow: false},
		{who: "ed", verb: "get", resource: "pods/ephemeralcontainers", ns: "team", name: "pod-a", allow: false},
		// Nor pods/resize (in-place resize): upstream's edit role (1.37)
		// does not list it either.
		{who: "ed", verb: "patch", resource: "pods/resize", ns: "team", name: "pod-a", allow: false},
		{who: "admin", verb: "patch", resource: "pods/resize", ns: "team", name: "pod-a", allow: true},
		{who: "ed", verb: "create", resource: "resourcequotas", ns: "team", allow: false},
		{who: "ed", verb: "create", group: "rbac.authorization.k8s.io", resource: "rolebindings", ns: "team", allow: false},
		{who: "ed", verb: "create", resource: "pods", ns: "default", allow: false},
		{who: "ed", verb: "list", resource: "pods", allow: false},
		{who: "ed", verb: "list", resource: "nodes", allow: false},

		// view in one namespace.
		{who: "vi", verb: "list", resource: "pods", ns: "team", allow: true},
		{who: "vi", verb: "watch", group: apps, resource: "replicasets", ns: "team", allow: true},
		{who: "vi", verb: "get", resource: "pods/log", ns: "team", name: "pod-a", allow: true},
		{who: "vi", verb: "get", resource: "pods/status", ns: "team", name: "pod-a", allow: true},
		{who: "vi", verb: "get", resource: "secrets", ns: "team", name: "secret-a", allow: false},
		{who: "vi", verb: "create", resource: "pods/exec", ns: "team", name: "pod-a", allow: false},
		{who: "vi", verb: "delete", resource: "pods", ns: "team", name: "pod-a", allow: false},
		{who: "vi", verb: "list", resource: "pods", ns: "default", allow: false},

		// A service account with view in its namespace.
		{who: "app", verb: "list", resource: "configmaps", ns: "team", allow: true},
		{who: "app", verb: "create", resource: "configmaps", ns: "team", allow: false},
		{who: "app", verb: "list", resource: "configmaps", ns: "kube-system", allow: false},
		{who: "app", verb: "get", path: "/api", allow: true},

		// system:kube-scheduler.
		{who: "scheduler", verb: "watch", resource: "pods", allow: true},
		{who: "scheduler", verb: "list", resource: "nodes", allow: true},
		{who: "scheduler", verb: "create", resource: "pods/binding", ns: "team", name: "pending", allow: true},
		{who: "scheduler", verb: "update", resource: "pods/status", ns: "team", name: "pending", allow: true},
		{who: "scheduler", verb: "delete", resource: "pods", ns: "team", name: "pod-a", allow: true},
		{who: "scheduler", verb: "create", group: "events.k8s.io", resource: "events", ns: "team", allow: true},
		{who: "scheduler", verb: "list", resource: "namespaces", allow: true},
		{who: "scheduler", verb: "get", group: coord, resource: "leases", ns: "kube-system", name: "kube-scheduler", allow: true},
		{who: "scheduler", verb: "update", group: coord, resource: "leases", ns: "kube-system", name: "kube-scheduler", allow: true},
		{who: "scheduler", verb: "create", group: coord, resource: "leases", ns: "kube-system", allow: true},
		{who: "scheduler", verb: "update", group: coord, resource: "leases", ns: "kube-system", name: "kube-controller-manager", allow: false},
		{who: "scheduler", verb: "update", resource: "pods", ns: "team", name: "pod-a", allow: false},
		{who: "scheduler", verb: "create", resource: "pods", ns: "team", allow: false},
		{who: "scheduler", verb: "get", resource: "secrets", ns: "team", name: "secret-a", allow: false},
		{who: "scheduler", verb: "update", resource: "nodes", name: "a", allow: false},

		// system:kube-controller-manager: informers, leader election, events.
		{who: "kcm", verb: "list", group: apps, resource: "deployments", allow: true},
		{who: "kcm", verb: "watch", resource: "pods", allow: true},
		{who: "kcm", verb: "watch", group: coord, resource: "leases", allow: true},
		{who: "kcm", verb: "update", group: coord, resource: "leases", ns: "kube-system", name: "kube-controller-manager", allow: true},
		{who: "kcm", verb: "create", resource: "events", ns: "team", allow: true},
		{who: "kcm", verb: "create", resource: "pods", ns: "team", allow: false},
		{who: "kcm", verb: "delete", resource: "pods", ns: "team", name: "pod-a", allow: false},

		// Controller identities (per-controller service accounts).
		{who: "rs-ctrl", verb: "create", resource: "pods", ns: "team", allow: true},
		{who: "rs-ctrl", verb: "delete", resource: "pods", ns: "team", name: "pod-a", allow: true},
		{who: "rs-ctrl", verb: "patch", resource: "pods", ns: "team", name: "pod-a", allow: true},
		{who: "rs-ctrl", verb: "update", group: apps, resource: "replicasets/status", ns: "team", name: "web-1", allow: true},
		{who: "rs-ctrl", verb: "create", group: apps, resource: "deployments", ns: "team", allow: false},
		{who: "deploy-ctrl", verb: "create", group: apps, resource: "replicasets", ns: "team", allow: true},
		{who: "deploy-ctrl", verb: "patch", group: apps, resource: "deployments", ns: "team", name: "web", allow: true},
		{who: "deploy-ctrl", verb: "update", group: apps, resource: "deployments/status", ns: "team", name: "web", allow: true},
		{who: "deploy-ctrl", verb: "create", resource: "pods", ns: "team", allow: false},
		{who: "gc", verb: "delete", group: apps, resource: "replicasets", ns: "team", name: "web-1", allow: true},
		{who: "gc", verb: "patch", resource: "pods", ns: "team", name: "pod-a", allow: true},
		{who: "gc", verb: "create", resource: "pods", ns: "team", allow: false},
		{who: "ns-ctrl", verb: "update", resource: "namespaces/finalize", ns: "team", name: "team", allow: true},
		{who: "ns-ctrl", verb: "deletecollection", resource: "configmaps", ns: "team", allow: true},
		{who: "node-ctrl", verb: "update", resource: "nodes", name: "a", allow: true},
		{who: "node-ctrl", verb: "update", resource: "nodes/status", name: "a", allow: true},
		{who: "node-ctrl", verb: "update", resource: "pods/status", ns: "team", name: "pod-a", allow: true},
		{who: "node-ctrl", verb: "delete", resource: "pods", ns: "team", name: "pod-a", allow: true},
		{who: "node-ctrl", verb: "create", resource: "pods", ns: "team", allow: false},
		{who: "pdb-ctrl", verb: "patch", resource: "pods/status", ns: "team", name: "pod-a", allow: true},
		{who: "pdb-ctrl", verb: "delete", resource: "pods", ns: "team", name: "pod-a", allow: false},

		// Kubelets: each only its own node, pods and what they use. As
		// kube-apiserver's Node authorizer, writes to Nodes and pods beyond
		// reads are decided by the static node rules; NodeRestriction
		// admission then refuses another node's objects.
		{who: "kubelet-a", verb: "get", resource: "nodes", name: "a", allow: true},
		{who: "kubelet-a", verb: "create", resource: "nodes", allow: true},
		{who: "kubelet-a", verb: "update", resource: "nodes/status", name: "a", allow: true},
		{who: "kubelet-a", verb: "update", resource: "nodes/status", name: "b", allow: true}, // NodeRestriction refuses it
		{who: "kubelet-a", verb: "patch", resource: "nodes", name: "b", allow: true},         // NodeRestriction refuses it
		{who: "kubelet-a", verb: "delete", resource: "nodes", name: "a", allow: false},
		{who: "kubelet-a", verb: "get", resource: "pods", ns: "team", name: "pod-a", allow: true},
		{who: "kubelet-a", verb: "get", resource: "pods", ns: "team", name: "pod-b", allow: false},
		{who: "kubelet-a", verb: "get", resource: "pods", ns: "team", name: "pending", allow: false},
		{who: "kubelet-a", verb: "list", resource: "pods", selector: "spec.nodeName=a", allow: true},
		{who: "kubelet-a", verb: "watch", resource: "pods", selector: "spec.nodeName=a", allow: true},
		{who: "kubelet-a", verb: "list", resource: "pods", selector: "spec.nodeName=b", allow: false},
		{who: "kubelet-a", verb: "list", resource: "pods", allow: false},
		{who: "kubelet-a", verb: "update", resource: "pods/status", ns: "team", name: "pod-a", allow: true},
		{who: "kubelet-a", verb: "update", resource: "pods/status", ns: "team", name: "pod-b", allow: true}, // NodeRestriction refuses it
		{who: "kubelet-a", verb: "patch", resource: "pods/ephemeralcontainers", ns: "team", name: "pod-a", allow: false},
		{who: "kubelet-a", verb: "delete", resource: "pods", ns: "team", name: "pod-a", allow: true},
		{who: "kubelet-a", verb: "delete", resource: "pods", ns: "team", name: "pod-b", allow: true}, // NodeRestriction refuses it
		{who: "kubelet-a", verb: "get", resource: "secrets", ns: "team", name: "secret-a", allow: true},
		{who: "kubelet-a", verb: "get", resource: "secrets", ns: "team", name: "secret-b", allow: false},
		{who: "kubelet-a", verb: "get", resource: "secrets", ns: "team", name: "secret-p", allow: false},
		{who: "kubelet-a", verb: "get", resource: "secrets", ns: "team", name: "unused", allow: false},
		{who: "kubelet-a", verb: "list", resource: "secrets", ns: "team", allow: false},
		{who: "kubelet-a", verb: "get", resource: "configmaps", ns: "team", name: "cm-a", allow: true},
		{who: "kubelet-a", verb: "get", resource: "configmaps", ns: "team", name: "cm-b", allow: false},
		{who: "kubelet-a", verb: "create", resource: "serviceaccounts/token", ns: "team", name: "sa-pod-a", allow: true},
		{who: "kubelet-a", verb: "create", resource: "serviceaccounts/token", ns: "team", name: "sa-pod-b", allow: false},
		{who: "kubelet-a", verb: "update", group: coord, resource: "leases", ns: "kube-node-lease", name: "a", allow: true},
		{who: "kubelet-a", verb: "create", group: coord, resource: "leases", ns: "kube-node-lease", allow: true},
		{who: "kubelet-a", verb: "update", group: coord, resource: "leases", ns: "kube-node-lease", name: "b", allow: false},
		{who: "kubelet-a", verb: "update", group: coord, resource: "leases", ns: "kube-system", name: "kube-scheduler", allow: false},
		{who: "kubelet-a", verb: "create", resource: "events", ns: "team", allow: true},
		{who: "kubelet-a", verb: "get", path: "/api", allow: true},
		{who: "kubelet-a", verb: "create", group: apps, resource: "deployments", ns: "team", allow: false},
		// RuntimeClasses: system:node's rules (the Node authorizer does not
		// narrow them), read-only; no default role but the node's grants them.
		{who: "kubelet-a", verb: "get", group: "node.k8s.io", resource: "runtimeclasses", name: "gvisor", allow: true},
		{who: "kubelet-a", verb: "list", group: "node.k8s.io", resource: "runtimeclasses", allow: true},
		{who: "kubelet-a", verb: "watch", group: "node.k8s.io", resource: "runtimeclasses", allow: true},
		{who: "kubelet-a", verb: "create", group: "node.k8s.io", resource: "runtimeclasses", allow: false},
		{who: "kubelet-a", verb: "delete", group: "node.k8s.io", resource: "runtimeclasses", name: "gvisor", allow: false},
		{who: "ed", verb: "get", group: "node.k8s.io", resource: "runtimeclasses", name: "gvisor", allow: false},
		{who: "vi", verb: "list", group: "node.k8s.io", resource: "runtimeclasses", allow: false},
		{who: "scheduler", verb: "list", group: "node.k8s.io", resource: "runtimeclasses", allow: false},
		{who: "admin", verb: "create", group: "node.k8s.io", resource: "runtimeclasses", allow: true},
		{who: "kubelet-b", verb: "get", resource: "pods", ns: "team", name: "pod-b", allow: true},
		{who: "kubelet-b", verb: "get", resource: "secrets", ns: "team", name: "secret-b", allow: true},
		{who: "kubelet-b", verb: "get", resource: "secrets", ns: "team", name: "secret-a", allow: false},
		{who: "kubelet-b", verb: "update", resource: "nodes/status", name: "a", allow: true}, // NodeRestriction refuses it

		// Anonymous: only the public info.
		{who: "anonymous", verb: "get", path: "/healthz", allow: true},
		{who: "anonymous", verb: "get", path: "/version", allow: true},
		{who: "anonymous", verb: "get", path: "/api", allow: false},
		{who: "anonymous", verb: "list", resource: "namespaces", allow: false},
		{who: "anonymous", verb: "create", group: "authorization.k8s.io", resource: "selfsubjectaccessreviews", allow: false},

		// system:monitoring.
		{who: "monitor", verb: "get", path: "/metrics", allow: true},
		{who: "monitor", verb: "get", path: "/readyz/etcd", allow: true},
		{who: "monitor", verb: "list", resource: "pods", allow: false},
	}
	for _, r := range rows {
		u, ok := users[r.who]
		if !ok {
			t.Fatalf("no identity %q", r.who)
		}
		ctx := context.WithValue(context.Background(), selectorKey{}, r.selector)
		d, reason, err := authz.Authorize(ctx, auth.Attributes{User: u, Info: r.info()})
		if err != nil {
			t.Errorf("%v: error %v", r, err)
			continue
		}
		if got := d == auth.DecisionAllow; got != r.allow {
			t.Errorf("%v: allowed=%v, want %v (reason %q)", r, got, r.allow, reason)
		}
		// For users RBAC alone decides, the rules review agrees.
		if _, isNode := node.NodeIdentity(u); !isNode {
			res, nonRes, incomplete, err := rbacAuthz.RulesFor(ctx, u, r.ns)
			if err != nil || incomplete {
				t.Errorf("%v: RulesFor: incomplete=%v err=%v", r, incomplete, err)
			}
			if got := rulesAllow(res, nonRes, r.info()); got != r.allow {
				t.Errorf("%v: RulesFor lists rules that allow=%v, want %v", r, got, r.allow)
			}
		}
	}
}

// rulesAllow is what kubectl auth can-i --list shows: whether the
// listed rules cover the request.
func rulesAllow(res []authorizationv1.ResourceRule, nonRes []authorizationv1.NonResourceRule, info *request.Info) bool {
	var rules []rbacv1.PolicyRule
	for _, r := range res {
		rules = append(rules, rbacv1.PolicyRule{Verbs: r.Verbs, APIGroups: r.APIGroups, Resources: r.Resources, ResourceNames: r.ResourceNames})
	}
	for _, r := range nonRes {
		rules = append(rules, rbacv1.PolicyRule{Verbs: r.Verbs, NonResourceURLs: r.NonResourceURLs})
	}
	return rbac.RulesAllow(info, rules...)
}

// TestAuthorizersFollowChanges: a new RoleBinding and a newly bound pod
// take effect through the watches, and a deleted binding stops granting.
func TestAuthorizersFollowChanges(t *testing.T) {
	s := newStores(t)
	ensureAggregated(t, s)
	authz, _ := startAuthorizers(t, s)
	carl := user("carl")
	listPods := auth.Attributes{User: carl, Info: &request.Info{IsResourceRequest: true, Verb: "list", Resource: "pods", Namespace: "dev"}}
	kubeletC := user("system:node:c", "system:nodes")
	getSecret := auth.Attributes{User: kubeletC, Info: &request.Info{IsResourceRequest: true, Verb: "get", Resource: "secrets", Namespace: "dev", Name: "token"}}
	ctx := context.Background()
	eventually := func(what string, a auth.Attributes, want auth.Decision) {
		t.Helper()
		deadline := time.Now().Add(20 * time.Second)
		for {
			d, _, _ := authz.Authorize(ctx, a)
			if d == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: decision stayed %v, want %v", what, d, want)
			}
			time.Sleep(10 * time.Millisecond)
		}
	}
	eventually("before any binding", listPods, auth.DecisionNoOpinion)
	create(t, s, rbacv1.Resource("rolebindings"), "dev", "carl", roleBinding("dev", "carl", "view", rbacv1.Subject{Kind: "User", Name: "carl"}))
	eventually("after the binding was created", listPods, auth.DecisionAllow)
	st, _ := s.Store(rbacv1.Resource("rolebindings"))
	if err := st.Delete(ctx, s.ObjectKey(rbacv1.Resource("rolebindings"), "dev", "carl"), &rbacv1.RoleBinding{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	eventually("after the binding was deleted", listPods, auth.DecisionNoOpinion)

	eventually("before the pod", getSecret, auth.DecisionNoOpinion)
	create(t, s, corev1.Resource("pods"), "dev", "p", pod("c", "dev", "p", "token", "cfg"))
	eventually("after a pod on c uses the secret", getSecret, auth.DecisionAllow)
	pst, _ := s.Store(corev1.Resource("pods"))
	if err := pst.Delete(ctx, s.ObjectKey(corev1.Resource("pods"), "dev", "p"), &corev1.Pod{}, nil, nil); err != nil {
		t.Fatal(err)
	}
	eventually("after the pod was deleted", getSecret, auth.DecisionNoOpinion)
}

// TestAggregatedRolesGrantOnlyWrittenRules: the bootstrap admin, edit and
// view roles are stored as kube-apiserver stores them — an aggregationRule
// and no rules — and the RBAC authorizer grants what their stored rules
// say: nothing through a binding to edit until the aggregated rules are
// written (by the clusterrole-aggregation controller; here by the test,
// as that controller decides them), then edit's rules.
func TestAggregatedRolesGrantOnlyWrittenRules(t *testing.T) {
	s := newStores(t)
	create(t, s, rbacv1.Resource("rolebindings"), "team", "ed-edit", roleBinding("team", "ed-edit", "edit", rbacv1.Subject{Kind: "User", Name: "ed"}))
	// The caches have synced the binding and the ensured roles when this
	// returns.
	authz, rbacAuthz := startAuthorizers(t, s)
	for _, name := range []string{"admin", "edit", "view"} {
		r := getClusterRole(t, s, name)
		if r.AggregationRule == nil || len(r.AggregationRule.ClusterRoleSelectors) != 1 || len(r.Rules) != 0 {
			t.Errorf("clusterrole %s as created: aggregationRule %+v, rules %+v; want one selector and no rules", name, r.AggregationRule, r.Rules)
		}
	}
	ed := user("ed")
	createPod := auth.Attributes{User: ed, Info: &request.Info{IsResourceRequest: true, Verb: "create", Resource: "pods", Namespace: "team"}}
	ctx := context.Background()
	decide := func() (bool, bool) {
		d, _, err := authz.Authorize(ctx, createPod)
		if err != nil {
			t.Fatal(err)
		}
		res, nonRes, _, err := rbacAuthz.RulesFor(ctx, ed, "team")
		if err != nil {
			t.Fatal(err)
		}
		return d == auth.DecisionAllow, rulesAllow(res, nonRes, createPod.Info)
	}
	if allowed, listed := decide(); allowed || listed {
		t.Fatalf("before edit's rules were written: ed create pods allowed=%v, listed by the rules review=%v; want neither", allowed, listed)
	}
	ensureAggregated(t, s)
	deadline := time.Now().Add(20 * time.Second)
	for {
		allowed, listed := decide()
		if allowed && listed {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after edit's rules were written: ed create pods allowed=%v, listed=%v; want both", allowed, listed)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
