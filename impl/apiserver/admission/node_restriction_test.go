package admission

import (
	"context"
	"strings"
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

func TestNodeRestriction(t *testing.T) {
	kubeletA := &request.User{Name: "system:node:a", Groups: []string{"system:nodes", "system:authenticated"}}
	admin := &request.User{Name: "admin", Groups: []string{"system:masters"}}
	podsGVR := corev1.SchemeGroupVersion.WithResource("pods")
	nodesGVR := corev1.SchemeGroupVersion.WithResource("nodes")
	boundTo := func(node string) *corev1.Pod {
		p := newPod("p")
		p.Spec.NodeName = node
		return p
	}
	mirror := func(mutate func(*corev1.Pod)) *corev1.Pod {
		p := boundTo("a")
		p.Annotations = map[string]string{mirrorPodAnnotation: "x"}
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: "a", UID: "uid-a", Controller: ptr(true)}}
		if mutate != nil {
			mutate(p)
		}
		return p
	}
	node := func(name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Spec: corev1.NodeSpec{Taints: taints}}
	}
	lease := func(ns, name string) *Attributes {
		return &Attributes{Operation: Update, Resource: coordinationv1.SchemeGroupVersion.WithResource("leases"), Namespace: ns, Name: name,
			Object: &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}}}
	}
	taint := corev1.Taint{Key: "k", Effect: corev1.TaintEffectNoSchedule}
	token := func(pod, uid string) *Attributes {
		return &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), Subresource: "token",
			Namespace: "ns", Name: "default", Object: &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{
				BoundObjectRef: &authenticationv1.BoundObjectReference{APIVersion: "v1", Kind: "Pod", Name: pod, UID: types.UID(uid)}}}}
	}
	plugin := &NodeRestriction{
		GetNode: func(_ context.Context, name string) (*corev1.Node, error) {
			return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("uid-" + name)}}, nil
		},
		GetPod: func(_ context.Context, ns, name string) (*corev1.Pod, error) {
			p := newPod(name)
			p.UID = "uid-p"
			p.Spec.NodeName = strings.TrimPrefix(name, "running-on-")
			// A kube-api-access volume: the API server's audience.
			p.Spec.Volumes = []corev1.Volume{{Name: "kube-api-access", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{
				Sources: []corev1.VolumeProjection{{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "token"}}}}}}}
			return p, nil
		},
	}
	tests := []struct {
		name string
		a    *Attributes
		want string
	}{
		{"admin is not restricted", &Attributes{User: admin, Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p", Object: newPod("p")}, ""},
		{"plain pod create", &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p", Object: boundTo("a")},
			`pods "p" is forbidden: pod does not have "kubernetes.io/config.mirror" annotation, node "a" can only create mirror pods`},
		{"mirror pod on itself", &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p", Object: mirror(nil)}, ""},
		{"mirror pod on other node", &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p",
			Object: mirror(func(p *corev1.Pod) { p.Spec.NodeName = "b" })}, `node "a" can only create pods with spec.nodeName set to itself`},
		{"mirror pod without owner", &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p",
			Object: mirror(func(p *corev1.Pod) { p.OwnerReferences = nil })}, `node "a" can only create pods with an owner reference set to itself`},
		{"mirror pod owned by stale node", &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p",
			Object: mirror(func(p *corev1.Pod) { p.OwnerReferences[0].UID = "old" })}, `node a UID mismatch: expected old got uid-a`},
		{"mirror pod not controlled", &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p",
			Object: mirror(func(p *corev1.Pod) { p.OwnerReferences[0].Controller = nil })}, `node "a" can only create pods with a controller owner reference set to itself`},
		{"mirror pod with configmap env", &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p",
			Object: mirror(func(p *corev1.Pod) {
				p.Spec.Containers[0].EnvFrom = []corev1.EnvFromSource{{ConfigMapRef: &corev1.ConfigMapEnvSource{}}}
			})}, `node "a" can not create pods that reference configmaps`},
		{"mirror pod with secret", &Attributes{Operation: Create, Resource: podsGVR, Namespace: "ns", Name: "p",
			Object: mirror(func(p *corev1.Pod) {
				p.Spec.Volumes = []corev1.Volume{{Name: "s", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}}}
			})}, `node "a" can not create pods that reference secrets`},
		{"status of own pod", &Attributes{Operation: Update, Resource: podsGVR, Subresource: "status", Namespace: "ns", Name: "p", Object: boundTo("a"), OldObject: boundTo("a")}, ""},
		{"status of other node's pod", &Attributes{Operation: Update, Resource: podsGVR, Subresource: "status", Namespace: "ns", Name: "p", Object: boundTo("b"), OldObject: boundTo("b")},
			`node "a" can only update pod status for pods with spec.nodeName set to itself`},
		{"status relabels own pod", &Attributes{Operation: Update, Resource: podsGVR, Subresource: "status", Namespace: "ns", Name: "p",
			Object: func() *corev1.Pod { p := boundTo("a"); p.Labels = map[string]string{"x": "y"}; return p }(), OldObject: boundTo("a")},
			`node "a" cannot update labels through pod status`},
		{"update pod spec", &Attributes{Operation: Update, Resource: podsGVR, Namespace: "ns", Name: "p", Object: boundTo("a"), OldObject: boundTo("a")},
			`unexpected operation "UPDATE", node "a" can only create and delete mirror pods`},
		{"binding subresource", &Attributes{Operation: Create, Resource: podsGVR, Subresource: "binding", Namespace: "ns", Name: "p"},
			`unexpected pod subresource "binding", only 'status' and 'eviction' are allowed`},
		{"ephemeral containers of own pod", &Attributes{Operation: Update, Resource: podsGVR, Subresource: "ephemeralcontainers", Namespace: "ns", Name: "p", Object: boundTo("a"), OldObject: boundTo("a")},
			`unexpected pod subresource "ephemeralcontainers", only 'status' and 'eviction' are allowed`},
		{"delete other node's pod", &Attributes{Operation: Delete, Resource: podsGVR, Namespace: "ns", Name: "p", OldObject: boundTo("b")},
			`node "a" can only delete pods with spec.nodeName set to itself`},
		{"delete own pod", &Attributes{Operation: Delete, Resource: podsGVR, Namespace: "ns", Name: "p", OldObject: boundTo("a")}, ""},
		{"register itself", &Attributes{Operation: Create, Resource: nodesGVR, Name: "a", Object: node("a", map[string]string{"kubernetes.io/hostname": "a", "topology.kubernetes.io/zone": "z", "example.com/x": "y"}, taint)}, ""},
		{"modify other node", &Attributes{Operation: Update, Resource: nodesGVR, Subresource: "status", Name: "b", Object: node("b", nil), OldObject: node("b", nil)},
			`nodes "b" is forbidden: node "a" is not allowed to modify node "b"`},
		{"restricted label on create", &Attributes{Operation: Create, Resource: nodesGVR, Name: "a", Object: node("a", map[string]string{"node-restriction.kubernetes.io/pool": "x"})},
			`node "a" is not allowed to set the following labels: node-restriction.kubernetes.io/pool`},
		{"kubernetes.io label on update", &Attributes{Operation: Update, Resource: nodesGVR, Name: "a", Object: node("a", map[string]string{"node-role.kubernetes.io/master": ""}), OldObject: node("a", nil)},
			`nodes "a" is forbidden: is not allowed to modify labels: node-role.kubernetes.io/master`},
		{"kubelet label allowed", &Attributes{Operation: Update, Resource: nodesGVR, Name: "a", Object: node("a", map[string]string{"node.kubernetes.io/exclude-from-external-load-balancers": ""}), OldObject: node("a", nil)}, ""},
		{"taints on update", &Attributes{Operation: Update, Resource: nodesGVR, Name: "a", Object: node("a", nil, taint), OldObject: node("a", nil)},
			`node "a" is not allowed to modify taints`},
		{"own lease", lease("kube-node-lease", "a"), ""},
		{"token for own pod", token("running-on-a", "uid-p"), ""},
		{"token for other node's pod", token("running-on-b", "uid-p"), "node requested token bound to a pod scheduled on a different node"},
		{"token for recreated pod", token("running-on-a", "old"), "the UID in the bound object reference (old) does not match the UID in record"},
		{"unbound token", &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("serviceaccounts"), Subresource: "token",
			Namespace: "ns", Name: "default", Object: &authenticationv1.TokenRequest{}}, "node requested token not bound to a pod"},
		{"other lease", lease("kube-node-lease", "b"), "can only access node lease with the same name as the requesting node"},
		{"lease elsewhere", lease("default", "a"), `can only access leases in the "kube-node-lease" system namespace`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.a.User == nil {
				tt.a.User = kubeletA
			}
			wantForbidden(t, plugin.Admit(context.Background(), tt.a), tt.want)
		})
	}
}
