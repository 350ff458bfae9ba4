package admission

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// NodeRestriction limits what a kubelet (user system:node:<name> in group
// system:nodes) may write to its own node's objects, as kube-apiserver's
// plugin: its Node (no configSource, no changes to taints after
// registration, no labels under node-restriction.kubernetes.io/ or other
// kubernetes.io / k8s.io labels kubelets do not own), its Lease in
// kube-node-lease, the status of pods bound to it (labels unchanged),
// deleting and evicting pods bound to it, creating only mirror pods bound
// to it and owned by its Node that reference no service account, secret,
// configmap or volume claim, and service account tokens bound to its pods
// for at most one audience, one such a pod's projected token volumes use
// or Authorizer grants (ServiceAccountNodeAudienceRestriction).
// The Node authorizer decides reads; this plugin checks the objects.
type NodeRestriction struct {
	GetNode func(ctx context.Context, name string) (*corev1.Node, error)
	// GetPod may return an object shared with other readers (the watch
	// cache's): the plugin only reads it.
	GetPod func(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	// Authorizer is the API server's: it decides whether a node may
	// request tokens for an audience its pod does not use (nil grants
	// none).
	Authorizer auth.Authorizer
}

func newNodeRestriction(d *deps) (any, error) {
	nodes, err := d.store(nodeResource)
	if err != nil {
		return nil, err
	}
	pods, err := d.store(podResource)
	if err != nil {
		return nil, err
	}
	return &NodeRestriction{
		Authorizer: d.opts.Authorizer,
		GetNode: func(ctx context.Context, name string) (*corev1.Node, error) {
			n := &corev1.Node{}
			return n, nodes.get(ctx, "", name, false, n)
		},
		// The pod is the watch cache's own (read, never changed), as
		// upstream's plugin reads its pod lister's: a TokenRequest per
		// pod would otherwise copy the whole pod (~5 KB) to look at its
		// uid, node and volumes.
		GetPod: func(ctx context.Context, namespace, name string) (*corev1.Pod, error) {
			var pod *corev1.Pod
			var other runtime.Object
			err := pods.view(ctx, namespace, name, func() runtime.Object { return &corev1.Pod{} }, func(o runtime.Object) {
				if pod, _ = o.(*corev1.Pod); pod == nil {
					other = o
				}
			})
			if err == nil && pod == nil {
				err = fmt.Errorf("reading pod %s/%s: the store returned %T", namespace, name, other)
			}
			return pod, err
		},
	}, nil
}

const nodeUserPrefix = "system:node:"

var leaseResource = schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}

// nodeOfUser is the node a kubelet's identity names; isNode is false for
// every other user.
func nodeOfUser(a *Attributes) (name string, isNode bool) {
	if a.User == nil || !strings.HasPrefix(a.User.Name, nodeUserPrefix) {
		return "", false
	}
	for _, g := range a.User.Groups {
		if g == "system:nodes" {
			return strings.TrimPrefix(a.User.Name, nodeUserPrefix), true
		}
	}
	return "", false
}

// Admit implements Mutator. It changes nothing; like kube-apiserver's
// plugin it runs in the mutating phase, right after ServiceAccount, so its
// refusals come before later plugins'.
func (p *NodeRestriction) Admit(ctx context.Context, a *Attributes) error {
	node, isNode := nodeOfUser(a)
	if !isNode {
		return nil
	}
	if node == "" {
		return forbidden(a, fmt.Errorf("could not determine node from user %q", a.User.Name))
	}
	var err error
	switch a.Resource.GroupResource() {
	case podResource:
		err = p.nodeMayWritePod(ctx, node, a)
	case nodeResource:
		err = nodeMayWriteNode(node, a)
	case leaseResource:
		err = nodeMayWriteLease(node, a)
	case saResource:
		err = p.nodeMayRequestToken(ctx, node, a)
	}
	if err != nil {
		var status apierrors.APIStatus
		if errors.As(err, &status) {
			return err
		}
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

func (p *NodeRestriction) nodeMayWritePod(ctx context.Context, node string, a *Attributes) error {
	switch a.Subresource {
	case "":
		switch a.Operation {
		case Create:
			pod, ok := a.Object.(*corev1.Pod)
			if !ok {
				return fmt.Errorf("unexpected type %T", a.Object)
			}
			return p.nodeMayCreatePod(ctx, node, pod)
		case Delete:
			if boundTo(a.OldObject) != node {
				return fmt.Errorf("node %q can only delete pods with spec.nodeName set to itself", node)
			}
			return nil
		}
		return fmt.Errorf("unexpected operation %q, node %q can only create and delete mirror pods", a.Operation, node)
	case "status":
		if a.Operation != Update {
			return fmt.Errorf("unexpected operation %q", a.Operation)
		}
		old, ok := a.OldObject.(*corev1.Pod)
		if !ok {
			return fmt.Errorf("unexpected type %T", a.OldObject)
		}
		if old.Spec.NodeName != node {
			return fmt.Errorf("node %q can only update pod status for pods with spec.nodeName set to itself", node)
		}
		if pod, ok := a.Object.(*corev1.Pod); ok && !labels.Equals(old.Labels, pod.Labels) {
			return fmt.Errorf("node %q cannot update labels through pod status", node)
		}
		return nil
	case "eviction":
		if a.Operation != Create {
			return fmt.Errorf("unexpected operation %s", a.Operation)
		}
		pod, err := p.GetPod(ctx, a.Namespace, a.Name)
		if err != nil {
			return err
		}
		if pod.Spec.NodeName != node {
			return fmt.Errorf("node %s can only evict pods with spec.nodeName set to itself", node)
		}
		return nil
	}
	return fmt.Errorf("unexpected pod subresource %q, only 'status' and 'eviction' are allowed", a.Subresource)
}

func (p *NodeRestriction) nodeMayCreatePod(ctx context.Context, node string, pod *corev1.Pod) error {
	if _, mirror := pod.Annotations[mirrorPodAnnotation]; !mirror {
		return fmt.Errorf("pod does not have %q annotation, node %q can only create mirror pods", mirrorPodAnnotation, node)
	}
	if pod.Spec.NodeName != node {
		return fmt.Errorf("node %q can only create pods with spec.nodeName set to itself", node)
	}
	switch len(pod.OwnerReferences) {
	case 0:
		return fmt.Errorf("node %q can only create pods with an owner reference set to itself", node)
	case 1:
	default:
		return fmt.Errorf("node %q can only create pods with a single owner reference set to itself", node)
	}
	owner := pod.OwnerReferences[0]
	if owner.APIVersion != "v1" || owner.Kind != "Node" || owner.Name != node {
		return fmt.Errorf("node %q can only create pods with an owner reference set to itself", node)
	}
	if owner.Controller == nil || !*owner.Controller {
		return fmt.Errorf("node %q can only create pods with a controller owner reference set to itself", node)
	}
	if owner.BlockOwnerDeletion != nil && *owner.BlockOwnerDeletion {
		return fmt.Errorf("node %q must not set blockOwnerDeletion on an owner reference", node)
	}
	n, err := p.GetNode(ctx, node)
	if apierrors.IsNotFound(err) {
		return err
	}
	if err != nil {
		return fmt.Errorf("error looking up node %s to verify uid: %v", node, err)
	}
	if owner.UID != n.UID {
		return fmt.Errorf("node %s UID mismatch: expected %s got %s", node, owner.UID, n.UID)
	}
	if pod.Spec.ServiceAccountName != "" {
		return fmt.Errorf("node %q can not create pods that reference a service account", node)
	}
	refs := podReferences(pod)
	for _, kind := range []string{"secrets", "configmaps", "clustertrustbundles", "persistentvolumeclaims"} {
		if refs[kind] {
			return fmt.Errorf("node %q can not create pods that reference %s", node, kind)
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
		case v.PersistentVolumeClaim != nil:
			refs["persistentvolumeclaims"] = true
		case v.Projected != nil:
			for _, s := range v.Projected.Sources {
				if s.Secret != nil {
					refs["secrets"] = true
				}
				if s.ConfigMap != nil {
					refs["configmaps"] = true
				}
				if s.ClusterTrustBundle != nil {
					refs["clustertrustbundles"] = true
				}
			}
		}
		switch {
		case v.CephFS != nil && v.CephFS.SecretRef != nil, v.Cinder != nil && v.Cinder.SecretRef != nil,
			v.FlexVolume != nil && v.FlexVolume.SecretRef != nil, v.ISCSI != nil && v.ISCSI.SecretRef != nil,
			v.RBD != nil && v.RBD.SecretRef != nil, v.ScaleIO != nil && v.ScaleIO.SecretRef != nil,
			v.StorageOS != nil && v.StorageOS.SecretRef != nil, v.CSI != nil && v.CSI.NodePublishSecretRef != nil,
			v.AzureFile != nil:
			refs["secrets"] = true
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
	if n == nil {
		return nil
	}
	switch a.Operation {
	case Create:
		if n.Spec.ConfigSource != nil {
			return fmt.Errorf("node %q is not allowed to create pods with a non-nil configSource", node)
		}
		if bad := forbiddenNodeLabels(n.Labels, nil); len(bad) > 0 {
			return fmt.Errorf("node %q is not allowed to set the following labels: %s", node, strings.Join(bad, ", "))
		}
	case Update:
		old, ok := a.OldObject.(*corev1.Node)
		if !ok {
			return fmt.Errorf("unexpected type %T", a.OldObject)
		}
		if n.Spec.ConfigSource != nil && !apiequality.Semantic.DeepEqual(n.Spec.ConfigSource, old.Spec.ConfigSource) {
			return fmt.Errorf("node %q is not allowed to update configSource to a new non-nil configSource", node)
		}
		if !apiequality.Semantic.DeepEqual(n.Spec.Taints, old.Spec.Taints) {
			return fmt.Errorf("node %q is not allowed to modify taints", node)
		}
		if bad := forbiddenNodeLabels(n.Labels, old.Labels); len(bad) > 0 {
			return fmt.Errorf("is not allowed to modify labels: %s", strings.Join(bad, ", "))
		}
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
		return fmt.Errorf("can only access leases in the %q system namespace", corev1.NamespaceNodeLease)
	}
	name := a.Name
	if a.Operation == Create {
		l, ok := a.Object.(*coordinationv1.Lease)
		if !ok {
			return fmt.Errorf("unexpected type %T", a.Object)
		}
		name = l.Name
	}
	if name != node {
		return fmt.Errorf("can only access node lease with the same name as the requesting node")
	}
	return nil
}

// nodeMayRequestToken: a kubelet's TokenRequests must be bound to a pod
// (by name and uid) that runs on it.
func (p *NodeRestriction) nodeMayRequestToken(ctx context.Context, node string, a *Attributes) error {
	if a.Operation != Create || a.Subresource != "token" {
		return nil
	}
	tr, ok := a.Object.(*authenticationv1.TokenRequest)
	if !ok {
		return fmt.Errorf("unexpected type %T", a.Object)
	}
	ref := tr.Spec.BoundObjectRef
	if ref == nil || ref.APIVersion != "v1" || ref.Kind != "Pod" || ref.Name == "" {
		return errors.New("node requested token not bound to a pod")
	}
	if ref.UID == "" {
		return errors.New("node requested token with a pod binding without a uid")
	}
	pod, err := p.GetPod(ctx, a.Namespace, ref.Name)
	if err != nil {
		return err
	}
	if ref.UID != pod.UID {
		return fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID)
	}
	if pod.Spec.NodeName != node {
		return errors.New("node requested token bound to a pod scheduled on a different node")
	}
	return p.nodeMayRequestAudience(ctx, node, a, tr, pod)
}

// tokenAudienceVerb is the virtual verb RBAC grants a node to request
// tokens for an audience (the resource) of a service account (the name).
const tokenAudienceVerb = "request-serviceaccounts-token-audience"

// nodeMayRequestAudience is ServiceAccountNodeAudienceRestriction (beta,
// on by default since 1.33, as in 1.37): a node asks for at most one
// audience (none: "", the API server's), one the bound pod uses, or one
// the authorizer lets it request for this service account. It runs, like
// the rest of the plugin, before the API server defaults a TokenRequest's
// audiences, so a kube-api-access volume's request is for "".
func (p *NodeRestriction) nodeMayRequestAudience(ctx context.Context, node string, a *Attributes, tr *authenticationv1.TokenRequest, pod *corev1.Pod) error {
	var audience string
	switch len(tr.Spec.Audiences) {
	case 0:
	case 1:
		audience = tr.Spec.Audiences[0]
	default:
		return errors.New("node may only request 0 or 1 audiences")
	}
	used, err := podUsesAudience(pod, audience)
	if err != nil {
		// A 403 whose message holds the NotFound's (upstream
		// admission.NewForbidden wraps any error but a 403).
		return forbidden(a, fmt.Errorf("error validating audience %q: %w", audience, err))
	}
	if used {
		return nil
	}
	if p.Authorizer != nil {
		info := &request.Info{IsResourceRequest: true, Verb: tokenAudienceVerb, APIVersion: "v1",
			Namespace: a.Namespace, Resource: audience, Name: a.Name}
		if d, _, _ := p.Authorizer.Authorize(ctx, auth.Attributes{User: a.User, Info: info}); d == auth.DecisionAllow {
			return nil
		}
	}
	return fmt.Errorf("audience %q not found in pod spec volume, %s is not authorized to request tokens for this audience", audience, a.User.Name)
}

// podUsesAudience reports whether a projected serviceAccountToken volume
// of pod is for audience. Upstream also counts the token requests of the
// CSI drivers of its inline CSI volumes and of the persistent volumes of
// its claims; kubeproof serves no CSIDrivers, PersistentVolumeClaims or
// PersistentVolumes, so such a volume is the lookup upstream makes failing
// with NotFound, an error only when no volume uses the audience.
func podUsesAudience(pod *corev1.Pod, audience string) (bool, error) {
	var errs []error
	for _, v := range pod.Spec.Volumes {
		if v.Projected != nil {
			for _, s := range v.Projected.Sources {
				if s.ServiceAccountToken != nil && s.ServiceAccountToken.Audience == audience {
					return true, nil
				}
			}
		}
		switch {
		case v.CSI != nil:
			errs = append(errs, apierrors.NewNotFound(schema.GroupResource{Group: "storage.k8s.io", Resource: "csidriver"}, v.CSI.Driver))
		case v.Ephemeral != nil:
			errs = append(errs, apierrors.NewNotFound(corev1.Resource("persistentvolumeclaim"), pod.Name+"-"+v.Name))
		case v.PersistentVolumeClaim != nil:
			errs = append(errs, apierrors.NewNotFound(corev1.Resource("persistentvolumeclaim"), v.PersistentVolumeClaim.ClaimName))
		}
	}
	switch len(errs) {
	case 0:
		return false, nil
	case 1:
		return false, errs[0]
	}
	msgs := make([]string, len(errs))
	for i, e := range errs {
		msgs[i] = e.Error()
	}
	// utilerrors.Aggregate's message.
	return false, errors.New("[" + strings.Join(msgs, ", ") + "]")
}
