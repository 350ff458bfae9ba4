package node

import (
	"context"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache/objcachetest"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

func kubelet(node string) *request.User {
	return &request.User{Name: "system:node:" + node, Groups: []string{"system:nodes", "system:authenticated"}}
}

// fieldSelectorKey carries the test request's field selector.
type fieldSelectorKey struct{}

func newTestAuthorizer() *Authorizer {
	return NewFromSource(objcache.Source{}, Config{FieldSelector: func(ctx context.Context, _ *request.Info) string {
		s, _ := ctx.Value(fieldSelectorKey{}).(string)
		return s
	}})
}

func podOn(node, ns, name string, spec func(*corev1.PodSpec)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{NodeName: node, ServiceAccountName: "default", Containers: []corev1.Container{{Name: "c", Image: "i"}}}}
	if spec != nil {
		spec(&p.Spec)
	}
	return p
}

func info(verb, group, resource, sub, ns, name string) *request.Info {
	return &request.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Subresource: sub, Namespace: ns, Name: name}
}

func TestPodRefs(t *testing.T) {
	p := podOn("a", "ns", "web", func(s *corev1.PodSpec) {
		s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "pull"}}
		s.Volumes = []corev1.Volume{
			{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "vol-secret"}}},
			{Name: "c", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "vol-cm"}}}},
			{Name: "p", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
				{Secret: &corev1.SecretProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "proj-secret"}}},
				{ConfigMap: &corev1.ConfigMapProjection{LocalObjectReference: corev1.LocalObjectReference{Name: "kube-root-ca.crt"}}},
			}}}},
			{Name: "data", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "claim"}}},
		}
		s.InitContainers = []corev1.Container{{Name: "init", EnvFrom: []corev1.EnvFromSource{{SecretRef: &corev1.SecretEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "init-env"}}}}}}
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "envfrom-cm"}}}}
		s.Containers[0].Env = []corev1.EnvVar{
			{Name: "A", ValueFrom: &corev1.EnvVarSource{SecretKeyRef: &corev1.SecretKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-secret"}, Key: "k"}}},
			{Name: "B", ValueFrom: &corev1.EnvVarSource{ConfigMapKeyRef: &corev1.ConfigMapKeySelector{LocalObjectReference: corev1.LocalObjectReference{Name: "env-cm"}, Key: "k"}}},
			{Name: "C", Value: "plain"},
		}
	})
	want := map[ref]bool{
		{kindPod, "ns", "web"}: true, {kindServiceAccount, "ns", "default"}: true, {kindSecret, "ns", "pull"}: true,
		{kindSecret, "ns", "vol-secret"}: true, {kindConfigMap, "ns", "vol-cm"}: true, {kindSecret, "ns", "proj-secret"}: true,
		{kindConfigMap, "ns", "kube-root-ca.crt"}: true, {kindPVC, "ns", "claim"}: true, {kindSecret, "ns", "init-env"}: true,
		{kindConfigMap, "ns", "envfrom-cm"}: true, {kindSecret, "ns", "env-secret"}: true, {kindConfigMap, "ns", "env-cm"}: true,
	}
	got := PodRefs(p)
	if len(got) != len(want) {
		t.Fatalf("PodRefs = %v, want %d refs", got, len(want))
	}
	for _, r := range got {
		if !want[r] {
			t.Errorf("unexpected ref %v", r)
		}
	}
}

func TestGraphFollowsPodChanges(t *testing.T) {
	g := NewGraph()
	withSecret := func(name string) func(*corev1.PodSpec) {
		return func(s *corev1.PodSpec) {
			s.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: name}}}}
		}
	}
	p1 := podOn("a", "ns", "p1", withSecret("shared"))
	p2 := podOn("a", "ns", "p2", withSecret("shared"))
	g.OnPod(nil, p1)
	g.OnPod(nil, p2)
	if !g.Related("a", kindSecret, "ns", "shared") {
		t.Fatal("secret used by two pods on a is not related to a")
	}
	g.OnPod(p1, nil)
	if !g.Related("a", kindSecret, "ns", "shared") {
		t.Fatal("secret still used by p2 lost its relation when p1 went away")
	}
	// p2 now uses another secret.
	p2b := podOn("a", "ns", "p2", withSecret("other"))
	g.OnPod(p2, p2b)
	if g.Related("a", kindSecret, "ns", "shared") || !g.Related("a", kindSecret, "ns", "other") {
		t.Fatal("graph did not follow p2's update")
	}
	// Unbound pods relate to no node.
	unbound := podOn("", "ns", "p3", withSecret("third"))
	g.OnPod(nil, unbound)
	if g.Related("", kindSecret, "ns", "third") {
		t.Fatal("unbound pod's secret related to the empty node")
	}
	g.OnPod(p2b, nil)
	if len(g.uses) != 0 {
		t.Fatalf("graph keeps %d entries after every bound pod went away", len(g.uses))
	}
}

func TestNodeAuthorizer(t *testing.T) {
	a := newTestAuthorizer()
	a.Graph().OnPod(nil, podOn("a", "ns", "pod-a", func(s *corev1.PodSpec) {
		s.ServiceAccountName = "sa-a"
		s.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "secret-a"}}}}
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-a"}}}}
	}))
	a.Graph().OnPod(nil, podOn("b", "ns", "pod-b", func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "secret-b"}}}}
	}))
	A := kubelet("a")
	// A list or watch by metadata.name comes named, as the request
	// parser names it (TestNodeAuthorizerReadsTheParsedName).
	cases := []struct {
		name     string
		user     *request.User
		info     *request.Info
		selector string
		want     auth.Decision
		reason   string
	}{
		{"not a node", &request.User{Name: "alice"}, info("get", "", "secrets", "", "ns", "secret-a"), "", auth.DecisionNoOpinion, ""},
		{"node name without group", &request.User{Name: "system:node:a"}, info("get", "", "secrets", "", "ns", "secret-a"), "", auth.DecisionNoOpinion, ""},
		{"empty node name", &request.User{Name: "system:node:", Groups: []string{"system:nodes"}}, info("get", "", "nodes", "", "", "a"), "", auth.DecisionNoOpinion, `unknown node for user "system:node:"`},

		{"own secret", A, info("get", "", "secrets", "", "ns", "secret-a"), "", auth.DecisionAllow, ""},
		{"other node's secret", A, info("get", "", "secrets", "", "ns", "secret-b"), "", auth.DecisionNoOpinion, "no relationship found between node 'a' and this object"},
		{"unused secret", A, info("get", "", "secrets", "", "ns", "nobody"), "", auth.DecisionNoOpinion, "no relationship found between node 'a' and this object"},
		{"list secrets", A, info("list", "", "secrets", "", "ns", ""), "", auth.DecisionNoOpinion, "No Object name found"},
		{"write secret", A, info("update", "", "secrets", "", "ns", "secret-a"), "", auth.DecisionNoOpinion, "can only read resources of this type"},
		{"own configmap", A, info("get", "", "configmaps", "", "ns", "cm-a"), "", auth.DecisionAllow, ""},
		{"watch own configmap by name", A, info("watch", "", "configmaps", "", "ns", "cm-a"), "metadata.name=cm-a", auth.DecisionAllow, ""},
		{"list own secret by name", A, info("list", "", "secrets", "", "ns", "secret-a"), "metadata.name==secret-a", auth.DecisionAllow, ""},
		{"watch other node's secret by name", A, info("watch", "", "secrets", "", "ns", "secret-b"), "metadata.name=secret-b", auth.DecisionNoOpinion, "no relationship found between node 'a' and this object"},
		{"watch own configmap in other namespace", A, info("watch", "", "configmaps", "", "other", "cm-a"), "metadata.name=cm-a", auth.DecisionNoOpinion, "no relationship found between node 'a' and this object"},
		{"watch configmaps by other field", A, info("watch", "", "configmaps", "", "ns", ""), "metadata.namespace=ns", auth.DecisionNoOpinion, "No Object name found"},
		{"same name other namespace", A, info("get", "", "configmaps", "", "other", "cm-a"), "", auth.DecisionNoOpinion, "no relationship found between node 'a' and this object"},

		{"own pod", A, info("get", "", "pods", "", "ns", "pod-a"), "", auth.DecisionAllow, ""},
		{"other node's pod", A, info("get", "", "pods", "", "ns", "pod-b"), "", auth.DecisionNoOpinion, "no relationship found between node 'a' and this object"},
		{"list pods on own node", A, info("list", "", "pods", "", "", ""), "spec.nodeName=a", auth.DecisionAllow, ""},
		{"watch pods on own node", A, info("watch", "", "pods", "", "", ""), "spec.nodeName==a,metadata.namespace=ns", auth.DecisionAllow, ""},
		{"list pods on other node", A, info("list", "", "pods", "", "", ""), "spec.nodeName=b", auth.DecisionNoOpinion, "can only list/watch pods with spec.nodeName field selector"},
		{"list all pods", A, info("list", "", "pods", "", "", ""), "", auth.DecisionNoOpinion, "can only list/watch pods with spec.nodeName field selector"},
		{"list pods not-equal", A, info("list", "", "pods", "", "", ""), "spec.nodeName!=a", auth.DecisionNoOpinion, "can only list/watch pods with spec.nodeName field selector"},
		{"own pod status", A, info("update", "", "pods", "status", "ns", "pod-a"), "", auth.DecisionAllow, ""},
		// Writes to pods (status, delete, eviction) and Nodes of other
		// nodes are allowed here: NodeRestriction refuses them, in its
		// words, as kube-apiserver's Node authorizer leaves it to.
		{"other pod status", A, info("patch", "", "pods", "status", "ns", "pod-b"), "", auth.DecisionAllow, ""},
		{"update own pod spec", A, info("update", "", "pods", "", "ns", "pod-a"), "", auth.DecisionNoOpinion, ""},
		{"delete own pod", A, info("delete", "", "pods", "", "ns", "pod-a"), "", auth.DecisionAllow, ""},
		{"delete other pod", A, info("delete", "", "pods", "", "ns", "pod-b"), "", auth.DecisionAllow, ""},
		{"delete unknown pod", A, info("delete", "", "pods", "", "ns", "nobody"), "", auth.DecisionAllow, ""},
		{"evict other pod", A, info("create", "", "pods", "eviction", "ns", "pod-b"), "", auth.DecisionAllow, ""},
		{"create mirror pod", A, info("create", "", "pods", "", "ns", ""), "", auth.DecisionAllow, ""},
		{"evict own pod", A, info("create", "", "pods", "eviction", "ns", "pod-a"), "", auth.DecisionAllow, ""},
		{"pod logs", A, info("get", "", "pods", "log", "ns", "pod-a"), "", auth.DecisionNoOpinion, ""},

		{"get own node", A, info("get", "", "nodes", "", "", "a"), "", auth.DecisionAllow, ""},
		{"get other node", A, info("get", "", "nodes", "", "", "b"), "", auth.DecisionNoOpinion, "node 'a' cannot read 'b', only its own Node object"},
		{"list all nodes", A, info("list", "", "nodes", "", "", ""), "", auth.DecisionNoOpinion, "node 'a' cannot read all nodes, only its own Node object"},
		{"watch own node by selector", A, info("watch", "", "nodes", "", "", "a"), "metadata.name=a", auth.DecisionAllow, ""},
		{"create node", A, info("create", "", "nodes", "", "", ""), "", auth.DecisionAllow, ""},
		{"update own node", A, info("update", "", "nodes", "", "", "a"), "", auth.DecisionAllow, ""},
		{"update other node", A, info("update", "", "nodes", "", "", "b"), "", auth.DecisionAllow, ""},
		{"patch other node", A, info("patch", "", "nodes", "", "", "b"), "", auth.DecisionAllow, ""},
		{"own node status", A, info("patch", "", "nodes", "status", "", "a"), "", auth.DecisionAllow, ""},
		{"other node status", A, info("update", "", "nodes", "status", "", "b"), "", auth.DecisionAllow, ""},
		{"get own node status", A, info("get", "", "nodes", "status", "", "a"), "", auth.DecisionNoOpinion, ""},
		{"delete own node", A, info("delete", "", "nodes", "", "", "a"), "", auth.DecisionNoOpinion, ""},

		{"own lease", A, info("update", "coordination.k8s.io", "leases", "", "kube-node-lease", "a"), "", auth.DecisionAllow, ""},
		{"create lease", A, info("create", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), "", auth.DecisionAllow, ""},
		{"other lease", A, info("update", "coordination.k8s.io", "leases", "", "kube-node-lease", "b"), "", auth.DecisionNoOpinion, "can only access node lease with the same name as the requesting node"},
		{"lease elsewhere", A, info("get", "coordination.k8s.io", "leases", "", "kube-system", "a"), "", auth.DecisionNoOpinion, `can only access leases in the "kube-node-lease" system namespace`},
		{"list leases", A, info("list", "coordination.k8s.io", "leases", "", "kube-node-lease", ""), "", auth.DecisionNoOpinion, "can only get, create, update, patch, or delete a node lease"},

		{"token for own pod's SA", A, info("create", "", "serviceaccounts", "token", "ns", "sa-a"), "", auth.DecisionAllow, ""},
		{"token for default SA of pod-b", A, info("create", "", "serviceaccounts", "token", "ns", "default"), "", auth.DecisionNoOpinion, "no relationship found between node 'a' and this object"},
		{"get own pod's SA", A, info("get", "", "serviceaccounts", "", "ns", "sa-a"), "", auth.DecisionAllow, ""},
		{"get other node's pod's SA", A, info("get", "", "serviceaccounts", "", "ns", "default"), "", auth.DecisionNoOpinion, "no relationship found between node 'a' and this object"},
		{"get SA of no pod", A, info("get", "", "serviceaccounts", "", "ns", "nobody"), "", auth.DecisionNoOpinion, "no relationship found between node 'a' and this object"},
		{"get SA without name", A, info("get", "", "serviceaccounts", "", "ns", ""), "", auth.DecisionNoOpinion, "No Object name found"},
		{"list SAs", A, info("list", "", "serviceaccounts", "", "ns", ""), "", auth.DecisionNoOpinion, "can only create tokens for individual service accounts"},
		{"watch own pod's SA by name", A, info("watch", "", "serviceaccounts", "", "ns", "sa-a"), "metadata.name=sa-a", auth.DecisionNoOpinion, "can only create tokens for individual service accounts"},
		{"update own pod's SA", A, info("update", "", "serviceaccounts", "", "ns", "sa-a"), "", auth.DecisionNoOpinion, "can only create tokens for individual service accounts"},
		{"get SA token subresource", A, info("get", "", "serviceaccounts", "token", "ns", "sa-a"), "", auth.DecisionNoOpinion, "can only create tokens for individual service accounts"},
		{"other SA subresource", A, info("create", "", "serviceaccounts", "other", "ns", "sa-a"), "", auth.DecisionNoOpinion, "can only create token subresource of serviceaccount"},

		{"events from static rules", A, info("create", "", "events", "", "ns", ""), "", auth.DecisionAllow, ""},
		{"events.k8s.io not in node rules", A, info("create", "events.k8s.io", "events", "", "ns", ""), "", auth.DecisionNoOpinion, ""},
		{"services read", A, info("list", "", "services", "", "", ""), "", auth.DecisionAllow, ""},
		{"services write", A, info("create", "", "services", "", "ns", ""), "", auth.DecisionNoOpinion, ""},
		{"deployments", A, info("list", "apps", "deployments", "", "", ""), "", auth.DecisionNoOpinion, ""},
	}
	for _, c := range cases {
		ctx := context.WithValue(context.Background(), fieldSelectorKey{}, c.selector)
		d, reason, err := a.Authorize(ctx, auth.Attributes{User: c.user, Info: c.info})
		if err != nil || d != c.want || reason != c.reason {
			t.Errorf("%s: got %v %q %v, want %v %q", c.name, d, reason, err, c.want, c.reason)
		}
	}
}

// TestNodeAuthorizerReadsTheParsedName: a node's list or watch by a
// metadata.name field selector is decided on the name the request parser
// gives it (request.Info.Named), as kube-apiserver's Node authorizer reads
// its request-info's name: when the list options do not decode (a limit or
// timeoutSeconds that is no integer, a label selector that does not parse)
// the request names nothing and is refused as a read of every object, not
// allowed by its raw field selector (and then answered 400 by the handler).
func TestNodeAuthorizerReadsTheParsedName(t *testing.T) {
	a := newTestAuthorizer()
	a.Graph().OnPod(nil, podOn("a", "ns", "pod-a", func(s *corev1.PodSpec) {
		s.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "secret-a"}}}}
		s.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cm-a"}}}}
	}))
	const allNodes = "node 'a' cannot read all nodes, only its own Node object"
	for _, c := range []struct {
		url    string
		want   auth.Decision
		reason string
	}{
		{"/api/v1/nodes?fieldSelector=metadata.name%3Da", auth.DecisionAllow, ""},
		{"/api/v1/nodes?watch=1&fieldSelector=metadata.name%3Da", auth.DecisionAllow, ""},
		{"/api/v1/nodes?fieldSelector=metadata.name%3Db", auth.DecisionNoOpinion, "node 'a' cannot read 'b', only its own Node object"},
		{"/api/v1/nodes?fieldSelector=metadata.name%3Da&limit=x", auth.DecisionNoOpinion, allNodes},
		{"/api/v1/nodes?watch=1&fieldSelector=metadata.name%3Da&timeoutSeconds=x", auth.DecisionNoOpinion, allNodes},
		{"/api/v1/nodes?fieldSelector=metadata.name%3Da&labelSelector=%21%21", auth.DecisionNoOpinion, allNodes},
		{"/api/v1/namespaces/ns/configmaps?watch=1&fieldSelector=metadata.name%3Dcm-a", auth.DecisionAllow, ""},
		{"/api/v1/namespaces/ns/configmaps?watch=1&fieldSelector=metadata.name%3Dcm-a&limit=x", auth.DecisionNoOpinion, "No Object name found"},
		{"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Dsecret-a", auth.DecisionAllow, ""},
		{"/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Dsecret-a&labelSelector=%21%21", auth.DecisionNoOpinion, "No Object name found"},
	} {
		info := request.Parse(httptest.NewRequest(http.MethodGet, c.url, nil)).Named()
		ctx := context.WithValue(context.Background(), fieldSelectorKey{}, info.FieldSelector)
		d, reason, err := a.Authorize(ctx, auth.Attributes{User: kubelet("a"), Info: info})
		if err != nil || d != c.want || reason != c.reason {
			t.Errorf("GET %s: got %v %q %v, want %v %q", c.url, d, reason, err, c.want, c.reason)
		}
	}
}

func TestRulesForNodesIsIncomplete(t *testing.T) {
	a := newTestAuthorizer()
	if _, _, incomplete, err := a.RulesFor(context.Background(), kubelet("a"), "ns"); !incomplete || err == nil {
		t.Errorf("node user: incomplete=%v err=%v, want incomplete with an error", incomplete, err)
	}
	res, nonRes, incomplete, err := a.RulesFor(context.Background(), &request.User{Name: "alice"}, "ns")
	if res != nil || nonRes != nil || incomplete || err != nil {
		t.Errorf("other user: %v %v %v %v, want nothing", res, nonRes, incomplete, err)
	}
}

// TestPodCacheSharesTheWatchCachesObjects: behind a watch cache the
// authorizer's pods are the cached objects themselves, not a second decode
// of every pod (objcache.Source.Streaming).
func TestPodCacheSharesTheWatchCachesObjects(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := objcachetest.StartEtcd(ctx)
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	defer e.Close()
	stores, err := e.NewCachedStores(objcachetest.RBACAndPods())
	if err != nil {
		t.Fatalf("building stores: %v", err)
	}
	defer stores.Close()
	podStore, _ := stores.Store(corev1.Resource("pods"))
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}, Spec: corev1.PodSpec{NodeName: "n1"}}
	if err := podStore.Create(ctx, stores.ObjectKey(corev1.Resource("pods"), "ns", "p"), pod, &corev1.Pod{}); err != nil {
		t.Fatalf("creating the pod: %v", err)
	}

	a, err := New(stores, Config{})
	if err != nil {
		t.Fatalf("building the authorizer: %v", err)
	}
	runCtx, stop := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); a.Run(runCtx) }()
	defer func() { stop(); wg.Wait() }()
	if err := a.WaitSynced(ctx); err != nil {
		t.Fatalf("waiting for the first load: %v", err)
	}
	cached, ok := a.pods.Get("ns", "p")
	if !ok {
		t.Fatal("the authorizer's cache has no pod ns/p")
	}

	yes := true
	pred := storage.Everything()
	pred.AllowWatchBookmarks = true
	w, err := podStore.Watch(ctx, stores.ListKey(corev1.Resource("pods"), ""), storage.ListOptions{
		Recursive: true, SendInitialEvents: &yes, Predicate: pred,
		ResourceVersionMatch: metav1.ResourceVersionMatchNotOlderThan,
	})
	if err != nil {
		t.Fatalf("watching the pods: %v", err)
	}
	defer w.Stop()
	ev := <-w.ResultChan()
	if ev.Type != watch.Added {
		t.Fatalf("first event %s, want ADDED", ev.Type)
	}
	if ev.Object != cached {
		t.Error("the authorizer holds its own decode of the pod, not the watch cache's object")
	}
}
