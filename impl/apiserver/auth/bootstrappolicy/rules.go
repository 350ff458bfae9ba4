package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// ruleBuilder writes one PolicyRule fluently: verbs(...).groups(...)
// .resources(...).names(...).rule().
type ruleBuilder struct{ r rbacv1.PolicyRule }

func verbs(v ...string) *ruleBuilder { return &ruleBuilder{r: rbacv1.PolicyRule{Verbs: v}} }

func (b *ruleBuilder) groups(g ...string) *ruleBuilder    { b.r.APIGroups = g; return b }
func (b *ruleBuilder) resources(r ...string) *ruleBuilder { b.r.Resources = r; return b }
func (b *ruleBuilder) names(n ...string) *ruleBuilder     { b.r.ResourceNames = n; return b }
func (b *ruleBuilder) urls(u ...string) *ruleBuilder      { b.r.NonResourceURLs = u; return b }
func (b *ruleBuilder) rule() rbacv1.PolicyRule            { return b.r }

// Verb sets of the default roles.
var (
	read      = []string{"get", "list", "watch"}
	write     = []string{"create", "update", "patch", "delete", "deletecollection"}
	readWrite = []string{"get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"}
	readUpd   = []string{"get", "list", "watch", "update", "patch"}
)

// API groups.
const (
	legacyGroup         = ""
	appsGroup           = "apps"
	authenticationGroup = "authentication.k8s.io"
	authorizationGroup  = "authorization.k8s.io"
	autoscalingGroup    = "autoscaling"
	batchGroup          = "batch"
	certificatesGroup   = "certificates.k8s.io"
	coordinationGroup   = "coordination.k8s.io"
	discoveryGroup      = "discovery.k8s.io"
	eventsGroup         = "events.k8s.io"
	extensionsGroup     = "extensions"
	networkingGroup     = "networking.k8s.io"
	nodeGroup           = "node.k8s.io"
	policyGroup         = "policy"
	rbacGroup           = "rbac.authorization.k8s.io"
	schedulingGroup     = "scheduling.k8s.io"
	storageGroup        = "storage.k8s.io"
)

// eventsRule lets a component record events through either events API.
func eventsRule() rbacv1.PolicyRule {
	return verbs("create", "update", "patch").groups(legacyGroup, eventsGroup).resources("events").rule()
}

// NodeRules are the rules of the system:node ClusterRole: what a kubelet
// may do. The Node authorizer applies them to system:node:<name> users
// for the resources it does not restrict itself (RBAC binds the role to
// nobody by default).
func NodeRules() []rbacv1.PolicyRule {
	return []rbacv1.PolicyRule{
		// API access checks; these creates change nothing.
		verbs("create").groups(authenticationGroup).resources("tokenreviews").rule(),
		verbs("create").groups(authorizationGroup).resources("subjectaccessreviews", "localsubjectaccessreviews").rule(),
		// Service environment variables.
		verbs(read...).groups(legacyGroup).resources("services").rule(),
		// Registering the Node and reporting its status (the Node
		// authorizer and NodeRestriction restrict them to the node's own).
		verbs("create", "get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
		verbs("update", "patch").groups(legacyGroup).resources("nodes/status").rule(),
		verbs("update", "patch").groups(legacyGroup).resources("nodes").rule(),
		verbs("create", "update", "patch").groups(legacyGroup).resources("events").rule(),
		// Pods bound to the node; mirror pods; pod status; evictions.
		verbs(read...).groups(legacyGroup).resources("pods").rule(),
		verbs("create", "delete").groups(legacyGroup).resources("pods").rule(),
		verbs("update", "patch").groups(legacyGroup).resources("pods/status").rule(),
		verbs("create").groups(legacyGroup).resources("pods/eviction").rule(),
		// Secrets, config maps and volumes the node's pods use (the Node
		// authorizer narrows these to the referenced objects).
		verbs(read...).groups(legacyGroup).resources("secrets", "configmaps").rule(),
		verbs("get").groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").rule(),
		verbs("get").groups(legacyGroup).resources("endpoints").rule(),
		// Client certificate rotation.
		verbs("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").rule(),
		// The node Lease.
		verbs("get", "create", "update", "patch", "delete").groups(coordinationGroup).resources("leases").rule(),
		verbs("get").groups(storageGroup).resources("volumeattachments").rule(),
		verbs("get", "update", "patch").groups(legacyGroup).resources("persistentvolumeclaims/status").rule(),
		// Projected service account tokens for the node's pods.
		verbs("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),
		verbs("get", "watch", "list").groups(storageGroup).resources("csidrivers").rule(),
		verbs("get", "create", "update", "patch", "delete").groups(storageGroup).resources("csinodes").rule(),
		verbs("get", "list", "watch").groups(nodeGroup).resources("runtimeclasses").rule(),
	}
}
