// Package node is the Node authorizer (--authorization-mode=Node): it
// decides the requests of kubelets — users named system:node:<name> in
// the group system:nodes — from a graph of which objects each node's pods
// use, fed by a watch-fed cache of pods (package objcache).
//
// A node may:
//   - read its own Node (get, or list/watch with the field selector
//     metadata.name=<node>), create, update and patch Nodes and
//     nodes/status (NodeRestriction limits them to its own);
//   - get a pod bound to it, list/watch pods only with the field selector
//     spec.nodeName=<node>, create and delete pods, update/patch
//     pods/status and create evictions (NodeRestriction limits them to
//     mirror pods and pods bound to it);
//   - get/list/watch a secret or config map, get a persistent volume
//     claim, get a service account or create a token for it, only when a
//     pod bound to it references the object;
//   - get, create, update, patch, delete its own Lease in kube-node-lease;
//   - everything else the system:node rules allow (events, services,
//     tokenreviews, ...: bootstrappolicy.NodeRules).
//
// Anything else, and every request of a non-node user, is NoOpinion, so
// the next authorizer (RBAC) decides. Reasons follow Kubernetes' wording.
// As upstream, "only its own Node", "only its own pods' status" and
// "only pods bound to it" are left to the NodeRestriction admission
// plugin: a node writing another's is refused in its words (or answered
// 404 for an object that does not exist), not by this authorizer.
//
// Constructor (the API server's plugin hook calls it with its stores):
//
//	a, err := node.New(stores, node.Config{FieldSelector: ...})
//	go a.Run(ctx)             // keeps the pod graph current until ctx ends
//	err = a.WaitSynced(ctx)   // before serving requests
package node

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/bootstrappolicy"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/rbac/objcache"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Config configures the Node authorizer.
type Config struct {
	// FieldSelector returns the request's fieldSelector query parameter
	// (list and watch); without this function a node's list or watch of
	// pods by spec.nodeName is never allowed. A list or watch by
	// metadata.name is decided on the request's name instead (Info.Named).
	FieldSelector func(ctx context.Context, info *request.Info) string
	// Rules are the static node rules; nil means
	// bootstrappolicy.NodeRules().
	Rules []rbacv1.PolicyRule
}

// Authorizer is the Node authorizer. It implements auth.Authorizer.
type Authorizer struct {
	cfg   Config
	graph *Graph
	pods  *objcache.Cache
}

var _ auth.Authorizer = (*Authorizer)(nil)

// New builds the authorizer over the API server's pod store.
func New(stores objcache.Stores, cfg Config) (*Authorizer, error) {
	src, err := objcache.SourceFor(stores, corev1.Resource("pods"), func() runtime.Object { return &corev1.PodList{} })
	if err != nil {
		return nil, fmt.Errorf("node authorizer: %w", err)
	}
	// Every pod of the cluster: share the watch cache's objects rather
	// than hold a second decode of each (see objcache.Source.Streaming).
	src.Streaming = true
	return NewFromSource(src, cfg), nil
}

// NewFromSource builds the authorizer over a pod source.
func NewFromSource(pods objcache.Source, cfg Config) *Authorizer {
	if cfg.Rules == nil {
		cfg.Rules = bootstrappolicy.NodeRules()
	}
	g := NewGraph()
	return &Authorizer{cfg: cfg, graph: g, pods: objcache.New(pods, g.OnPod)}
}

// Run keeps the pod graph current until ctx ends.
func (a *Authorizer) Run(ctx context.Context) { a.pods.Run(ctx) }

// WaitSynced returns once the first pod list is in the graph.
func (a *Authorizer) WaitSynced(ctx context.Context) error {
	if err := a.pods.WaitSynced(ctx); err != nil {
		return fmt.Errorf("node authorizer: %w", err)
	}
	return nil
}

// Graph is the authorizer's pod graph.
func (a *Authorizer) Graph() *Graph { return a.graph }

// Node identity: user name prefix and group.
const (
	NodeUserPrefix = "system:node:"
	NodesGroup     = "system:nodes"
)

// NodeIdentity returns the node a user is, as Kubernetes' default node
// identifier: isNode when the user is in system:nodes and named
// system:node:<name>; name may then still be empty.
func NodeIdentity(u *request.User) (name string, isNode bool) {
	if u == nil || !strings.HasPrefix(u.Name, NodeUserPrefix) || !slices.Contains(u.Groups, NodesGroup) {
		return "", false
	}
	return strings.TrimPrefix(u.Name, NodeUserPrefix), true
}

var _ auth.RuleResolver = (*Authorizer)(nil)

// RulesFor implements auth.RuleResolver: a node's permissions depend on
// the objects its pods use and cannot be listed, so for node users the
// answer is incomplete with an error, as Kubernetes'; other users get
// nothing from this authorizer.
func (a *Authorizer) RulesFor(_ context.Context, u *request.User, _ string) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule, bool, error) {
	if _, isNode := NodeIdentity(u); isNode {
		return nil, nil, true, errors.New("node authorizer does not support user rule resolution")
	}
	return nil, nil, false, nil
}

type decision struct {
	allow  bool
	reason string
}

var allow = decision{allow: true}

func noOpinion(format string, args ...any) decision {
	return decision{reason: fmt.Sprintf(format, args...)}
}

// Authorize implements auth.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, attrs auth.Attributes) (auth.Decision, string, error) {
	nodeName, isNode := NodeIdentity(attrs.User)
	if !isNode || attrs.Info == nil {
		return auth.DecisionNoOpinion, "", nil
	}
	if nodeName == "" {
		return auth.DecisionNoOpinion, fmt.Sprintf("unknown node for user %q", attrs.User.Name), nil
	}
	d := a.decide(ctx, nodeName, attrs.Info)
	if d.allow {
		return auth.DecisionAllow, "", nil
	}
	return auth.DecisionNoOpinion, d.reason, nil
}

func (a *Authorizer) decide(ctx context.Context, node string, info *request.Info) decision {
	if info.IsResourceRequest {
		switch info.APIGroup + "/" + info.Resource {
		case "/secrets", "/configmaps":
			return a.readNamespacedObject(node, info)
		case "/persistentvolumeclaims":
			if info.Subresource == "status" {
				if info.Verb != "update" && info.Verb != "patch" {
					return noOpinion("can only get/update/patch this type")
				}
				return a.related(node, kindPVC, info)
			}
			return a.get(node, kindPVC, info)
		case "/persistentvolumes":
			// The graph does not follow claims to volumes.
			return noOpinion("no relationship found between node '%s' and this object", node)
		case "/serviceaccounts":
			return a.serviceAccount(node, info)
		case "coordination.k8s.io/leases":
			return a.lease(node, info)
		case "/nodes":
			return a.node(node, info)
		case "/pods":
			return a.pod(ctx, node, info)
		}
	}
	if rbac.RulesAllow(info, a.cfg.Rules...) {
		return allow
	}
	return decision{}
}

func (a *Authorizer) related(node, kind string, info *request.Info) decision {
	if info.Name == "" {
		return noOpinion("No Object name found")
	}
	if !a.graph.Related(node, kind, info.Namespace, info.Name) {
		return noOpinion("no relationship found between node '%s' and this object", node)
	}
	return allow
}

func (a *Authorizer) get(node, kind string, info *request.Info) decision {
	if info.Verb != "get" {
		return noOpinion("can only get individual resources of this type")
	}
	if info.Subresource != "" {
		return noOpinion("cannot get subresource")
	}
	return a.related(node, kind, info)
}

func (a *Authorizer) readNamespacedObject(node string, info *request.Info) decision {
	switch info.Verb {
	case "get", "list", "watch":
	default:
		return noOpinion("can only read resources of this type")
	}
	if info.Subresource != "" {
		return noOpinion("cannot read subresource")
	}
	if info.Namespace == "" {
		return noOpinion("can only read namespaced object of this type")
	}
	kind := kindSecret
	switch info.Resource {
	case "configmaps":
		kind = kindConfigMap
	case "serviceaccounts":
		kind = kindServiceAccount
	}
	// A list or watch of one object by its name (the kubelet's watch of
	// each ConfigMap and Secret its pods use) arrives named: the request
	// parser names it by its field selector's metadata.name when its list
	// options decode (request.Info.Named), as kube-apiserver's does, and
	// is checked as a get of that object; one whose options do not decode
	// names nothing.
	return a.related(node, kind, info)
}

// serviceAccount is upstream's authorizeServiceAccount: a get of a
// service account (no subresource) is read as a namespaced object related
// to the node, for the credential provider plugins' service account token
// mode (KubeletServiceAccountTokenForCredentialProviders, on by default;
// PodCertificateRequest, off, allows it too); anything else must be a
// token request.
func (a *Authorizer) serviceAccount(node string, info *request.Info) decision {
	if info.Verb == "get" && info.Subresource == "" {
		return a.readNamespacedObject(node, info)
	}
	return a.createToken(node, info)
}

func (a *Authorizer) createToken(node string, info *request.Info) decision {
	if info.Verb != "create" || info.Name == "" {
		return noOpinion("can only create tokens for individual service accounts")
	}
	if info.Subresource != "token" {
		return noOpinion("can only create token subresource of serviceaccount")
	}
	return a.related(node, kindServiceAccount, info)
}

func (a *Authorizer) lease(node string, info *request.Info) decision {
	switch info.Verb {
	case "get", "create", "update", "patch", "delete":
	default:
		return noOpinion("can only get, create, update, patch, or delete a node lease")
	}
	if info.Namespace != corev1.NamespaceNodeLease {
		return noOpinion("can only access leases in the %q system namespace", corev1.NamespaceNodeLease)
	}
	// The name of a create is in the body, which NodeRestriction checks.
	if info.Verb != "create" && info.Name != node {
		return noOpinion("can only access node lease with the same name as the requesting node")
	}
	return allow
}

// selects reports whether the request's field selector requires
// field=value.
func (a *Authorizer) selects(ctx context.Context, info *request.Info, field, value string) bool {
	got, ok := a.selectedValue(ctx, info, field)
	return ok && got == value
}

// selectedValue is the value the request's field selector requires of
// field (field=value or field==value), if it requires one.
func (a *Authorizer) selectedValue(ctx context.Context, info *request.Info, field string) (string, bool) {
	if a.cfg.FieldSelector == nil {
		return "", false
	}
	raw := a.cfg.FieldSelector(ctx, info)
	if raw == "" {
		return "", false
	}
	sel, err := fields.ParseSelector(raw)
	if err != nil {
		return "", false
	}
	for _, r := range sel.Requirements() {
		if r.Field == field && (r.Operator == selection.Equals || r.Operator == selection.DoubleEquals) {
			return r.Value, true
		}
	}
	return "", false
}

func (a *Authorizer) node(node string, info *request.Info) decision {
	switch info.Subresource {
	case "":
		switch info.Verb {
		case "create", "update", "patch":
			// Any Node: NodeRestriction limits a node to its own (the
			// name of a create is in the body), as kube-apiserver's Node
			// authorizer leaves it to.
			return allow
		case "get", "list", "watch":
			switch {
			// A list or watch by metadata.name arrives named (as in
			// readNamespacedObject).
			case info.Name == node:
				return allow
			case info.Name == "":
				return noOpinion("node '%s' cannot read all nodes, only its own Node object", node)
			default:
				return noOpinion("node '%s' cannot read '%s', only its own Node object", node, info.Name)
			}
		}
	case "status":
		if info.Verb == "update" || info.Verb == "patch" {
			// NodeRestriction limits it to the node's own status.
			return allow
		}
	}
	return decision{}
}

func (a *Authorizer) pod(ctx context.Context, node string, info *request.Info) decision {
	switch info.Subresource {
	case "":
		switch info.Verb {
		case "get":
			return a.related(node, kindPod, info)
		case "list", "watch":
			if a.selects(ctx, info, "spec.nodeName", node) {
				return allow
			}
			if info.Name != "" {
				return a.related(node, kindPod, info)
			}
			return noOpinion("can only list/watch pods with spec.nodeName field selector")
		case "create", "delete":
			// Mirror pods; NodeRestriction checks they are bound to the
			// node (a delete of another node's pod is its refusal, of a
			// missing pod a 404), as kube-apiserver's Node authorizer
			// leaves it to.
			return allow
		}
	case "status":
		if info.Verb == "update" || info.Verb == "patch" {
			// NodeRestriction limits it to pods bound to the node.
			return allow
		}
	case "eviction":
		if info.Verb == "create" {
			// NodeRestriction limits it to pods bound to the node.
			return allow
		}
	}
	return decision{}
}
