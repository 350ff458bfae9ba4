package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// NodeRestriction limits what a kubelet (user system:node:<name> in group
// system:nodes) may write to its own node's objects: its Node (no changes
// to taints after registration, no labels under node-restriction.kubernetes.io/
// or other kubernetes.io/k8s.io labels not reserved for kubelets), its
// Lease in kube-node-lease, the status of pods bound to it, deleting and
// evicting pods bound to it, and creating only mirror pods bound to it
// that reference no service account, secret, configmap or volume claim.
// The Node authorizer decides reads; this plugin checks the objects.
type NodeRestriction struct{}

func newNodeRestriction(StoreGetter) (any, error) { return NodeRestriction{}, nil }

const nodeUserPrefix = "system:node:"

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// nodeOfUser is the node a kubelet's identity names, or "".
func nodeOfUser(a *Attributes) string {
	if a.User == nil || !strings.HasPrefix(a.User.Name, nodeUserPrefix) {
		return ""
	}
	for _, g := range a.User.Groups {
		if g == "system:nodes" {
			return strings.TrimPrefix(a.User.Name, nodeUserPrefix)
		}
	}
	return ""
}

// Validate implements Validator.
func (NodeRestriction) Validate(_ context.Context, a *Attributes) error {
	node := nodeOfUser(a)
	if node == "" {
		return nil
	}
	var err error
	switch a.Resource.GroupResource() {
	case podResource:
		err = nodeMayWritePod(node, a)
	case nodeResource:
		err = nodeMayWriteNode(node, a)
	case leaseResource:
		err = nodeMayWriteLease(node, a)
	}
	if err != nil {
		return forbidden(a, err)
	}
	return nil
}

func boundTo(obj any) string {
	if p, ok := obj.(*corev1.Pod); ok && p != nil {
		return p.Spec.NodeName
	}
	return ""
}

func nodeMayWritePod(node string, a *Attributes) error {
	switch a.Subresource {
	case "":
		switch a.Operation {
		case Create:
			pod, _ := a.Object.(*corev1.Pod)
			if pod == nil {
				return nil
			}
			return nodeMayCreatePod(node, pod)
		case Delete:
			if boundTo(a.OldObject) != node {
				return fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", node)
			}
			return nil
		}
		return fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, node)
	case "status":
		if boundTo(a.OldObject) != node {
			return fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", node)
		}
		return nil
	case "eviction":
		if a.OldObject != nil && boundTo(a.OldObject) != node {
			return fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", node)
		}
		return nil
	}
	return fmt.Errorf("unexpected subresource %q, node %q can only update pod status", a.Subresource, node)
}

func nodeMayCreatePod(node string, pod *corev1.Pod) error {
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; !mirror {
		return fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", mirrorPodAnnotation, node)
	}
	if pod.Spec.NodeName != node {
		return fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", node)
	}
	if pod.Spec.ServiceAccountName != "" {
		return fmt.Errorf("node %q can not create pods that reference a service account", node)
	}
	refs := podReferences(pod)
	for _, kind := range []string{"secrets", "configmaps", "persistentvolumeclaims"} {
		if refs[kind] {
			return fmt.Errorf("node %q can not create pods that reference %s", node, kind)
		}
	}
	for _, o := range pod.OwnerReferences {
		if o.APIVersion != "v1" || o.Kind != "Node" || o.Name != node {
			return fmt.Errorf("node %s can only create pods with an owner reference set to itself", node)
		}
	}
	return nil
}

// podReferences reports which kinds of other objects a pod uses.
func podReferences(pod *corev1.Pod) map[string]bool {
	refs := map[string]bool{}
	for _, v := range pod.Spec.Volumes {
		switch {
		case v.Secret != nil:
			refs["secrets"] = true
		case v.ConfigMap != nil:
			refs["configmaps"] = true
		case v.PersistentVolumeClaim != nil, v.Ephemeral != nil:
			refs["persistentvolumeclaims"] = true
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					refs["secrets"] = true
				}
				if s.ConfigMap != nil {
					refs["configmaps"] = true
				}
			}
		}
	}
	eachContainer(&pod.Spec, func(c *corev1.Container, _ *field.Path) {
		for _, e := range c.Env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				refs["secrets"] = true
			}
			if e.ValueFrom != nil && e.ValueFrom.ConfigMapKeyRef != nil {
				refs["configmaps"] = true
			}
		}
		for _, e := range c.EnvFrom {
			if e.SecretRef != nil {
				refs["secrets"] = true
			}
			if e.ConfigMapRef != nil {
				refs["configmaps"] = true
			}
		}
	})
	if len(pod.Spec.ImagePullSecrets) > 0 {
		refs["secrets"] = true
	}
	return refs
}

func nodeMayWriteNode(node string, a *Attributes) error {
	if a.Name != node {
		return fmt.Errorf("node %q is not allowed to modify node %q", node, a.Name)
	}
	n, _ := a.Object.(*corev1.Node)
	old, _ := a.OldObject.(*corev1.Node)
	if n == nil {
		return nil
	}
	var oldLabels map[string]string
	if old != nil {
		oldLabels = old.Labels
	}
	if bad := forbiddenNodeLabels(n.Labels, oldLabels); len(bad) > 0 {
		if a.Operation == Create {
			return fmt.Errorf("node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", "))
		}
		return fmt.Errorf("node %q is not allowed to modify labels: %s", node, strings.Join(bad, ", "))
	}
	if a.Operation == Update && old != nil && a.Subresource == "" && !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
		return fmt.Errorf("node %q is not allowed to modify taints", node)
	}
	return nil
}

// forbiddenNodeLabels are the labels set or changed in labels (against
// old) that a kubelet may not set.
func forbiddenNodeLabels(labels, old map[string]string) []string {
	var bad []string
	for k, v := range labels {
		if ov, had := old[k]; had && ov == v {
			continue
		}
		if !kubeletMaySetLabel(k) {
			bad = append(bad, k)
		}
	}
	for k := range old {
		if _, still := labels[k]; !still && !kubeletMaySetLabel(k) {
			bad = append(bad, k)
		}
	}
	sort.Strings(bad)
	return bad
}

// kubeletLabels are the kubernetes.io labels kubelets set themselves.
var kubeletLabels = map[string]bool{
	"kubernetes.io/hostname": true, "kubernetes.io/arch": true, "kubernetes.io/os": true,
	"beta.kubernetes.io/arch": true, "beta.kubernetes.io/os": true,
	"beta.kubernetes.io/instance-type": true, "node.kubernetes.io/instance-type": true,
	"failure-domain.beta.kubernetes.io/region": true, "failure-domain.beta.kubernetes.io/zone": true,
	"topology.kubernetes.io/region": true, "topology.kubernetes.io/zone": true,
}

func kubeletMaySetLabel(key string) bool {
	domain, _, hasDomain := strings.Cut(key, "/")
	if !hasDomain {
		return true
	}
	under := func(d string) bool { return domain == d || strings.HasSuffix(domain, "."+d) }
	if under("node-restriction.kubernetes.io") {
		return false
	}
	if kubeletLabels[key] || under("kubelet.kubernetes.io") || under("node.kubernetes.io") {
		return true
	}
	return !under("kubernetes.io") && !under("k8s.io")
}

func nodeMayWriteLease(node string, a *Attributes) error {
	if a.Namespace != corev1.NamespaceNodeLease {
		return fmt.Errorf("can only access leases in the %q namespace", corev1.NamespaceNodeLease)
	}
	name := a.Name
	if l, ok := a.Object.(*coordinationv1.Lease); ok && name == "" {
		name = l.Name
	}
	if name != node {
		return fmt.Errorf("can only access node lease with the same name as the requesting node")
	}
	return nil
}
