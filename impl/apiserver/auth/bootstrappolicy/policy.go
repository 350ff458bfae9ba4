// Package bootstrappolicy is Kubernetes' default RBAC policy — the
// ClusterRoles, ClusterRoleBindings, Roles and RoleBindings kube-apiserver
// creates at start (cluster-admin, admin/edit/view with their
// aggregate-to-* parts, system:discovery, system:basic-user,
// system:public-info-viewer, system:monitoring, system:node,
// system:kube-scheduler, system:kube-controller-manager,
// system:volume-scheduler, the per-controller system:controller:* roles,
// and the kube-system leader-locking roles) — and Ensure, which writes
// them through a Client: in the API server its loopback client.
//
// Every object carries the label kubernetes.io/bootstrapping=rbac-defaults
// and the annotation rbac.authorization.kubernetes.io/autoupdate=true.
// Ensure creates what is missing and, for objects whose autoupdate
// annotation is not "false", adds missing rules, subjects, aggregation
// selectors, labels and annotations (additive reconciliation, as
// kube-apiserver's "rbac/bootstrap-roles" post-start hook does; it never
// removes).
//
// The API server's rbac/bootstrap-roles post-start hook calls, before
// serving:
//
//	err := bootstrappolicy.EnsureThrough(ctx, hc.LoopbackClientConfig)
//
// The rule sets follow upstream's bootstrappolicy, checked against what
// kubeproof's own controllers, scheduler and kubelet call: our
// deployment-controller also patches Deployments (it writes annotations
// with a merge patch), which upstream's role lacks.
package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Label and annotation every bootstrap object carries.
const (
	BootstrapLabelKey   = "kubernetes.io/bootstrapping"
	BootstrapLabelValue = "rbac-defaults"
	AutoUpdateKey       = rbacv1.AutoUpdateAnnotationKey
)

// Well-known users and groups.
const (
	SystemMastersGroup    = "system:masters"
	MonitoringGroup       = "system:monitoring"
	NodesGroup            = "system:nodes"
	AuthenticatedGroup    = "system:authenticated"
	UnauthenticatedGroup  = "system:unauthenticated"
	KubeControllerManager = "system:kube-controller-manager"
	KubeScheduler         = "system:kube-scheduler"
	KubeProxy             = "system:kube-proxy"
)

func objectMeta(name, namespace string, lbls map[string]string) metav1.ObjectMeta {
	l := map[string]string{BootstrapLabelKey: BootstrapLabelValue}
	for k, v := range lbls {
		l[k] = v
	}
	return metav1.ObjectMeta{Name: name, Namespace: namespace, Labels: l,
		Annotations: map[string]string{AutoUpdateKey: "true"}}
}

func clusterRole(name string, lbls map[string]string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
	return rbacv1.ClusterRole{ObjectMeta: objectMeta(name, "", lbls), Rules: rules}
}

func aggregated(name string, lbls map[string]string, selectorLabel string) rbacv1.ClusterRole {
	r := clusterRole(name, lbls)
	r.AggregationRule = &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{
		{MatchLabels: map[string]string{selectorLabel: "true"}},
	}}
	return r
}

// Aggregation labels of the user-facing roles.
const (
	aggregateToAdmin = "rbac.authorization.k8s.io/aggregate-to-admin"
	aggregateToEdit  = "rbac.authorization.k8s.io/aggregate-to-edit"
	aggregateToView  = "rbac.authorization.k8s.io/aggregate-to-view"
)

// ClusterRoles returns the default ClusterRoles, controller roles included.
func ClusterRoles() []rbacv1.ClusterRole {
	roles := []rbacv1.ClusterRole{
		clusterRole("cluster-admin", nil,
			verbs("*").groups("*").resources("*").rule(),
			verbs("*").urls("*").rule()),
		clusterRole("system:discovery", nil,
			verbs("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/",
				"/openapi", "/openapi/*", "/api", "/api/*", "/apis", "/apis/*").rule()),
		clusterRole("system:monitoring", nil,
			verbs("get").urls("/metrics", "/metrics/slis", "/livez", "/readyz", "/healthz",
				"/livez/*", "/readyz/*", "/healthz/*").rule()),
		clusterRole("system:basic-user", nil,
			verbs("create").groups(authorizationGroup).resources("selfsubjectaccessreviews", "selfsubjectrulesreviews").rule(),
			verbs("create").groups(authenticationGroup).resources("selfsubjectreviews").rule()),
		clusterRole("system:public-info-viewer", nil,
			verbs("get").urls("/livez", "/readyz", "/healthz", "/version", "/version/").rule()),

		aggregated("admin", nil, aggregateToAdmin),
		aggregated("edit", map[string]string{aggregateToAdmin: "true"}, aggregateToEdit),
		aggregated("view", map[string]string{aggregateToEdit: "true"}, aggregateToView),
		clusterRole("system:aggregate-to-admin", map[string]string{aggregateToAdmin: "true"},
			verbs("create").groups(authorizationGroup).resources("localsubjectaccessreviews").rule(),
			verbs(readWrite...).groups(rbacGroup).resources("roles", "rolebindings").rule()),
		clusterRole("system:aggregate-to-edit", map[string]string{aggregateToEdit: "true"},
			verbs(read...).groups(legacyGroup).resources("pods/attach", "pods/proxy", "pods/exec", "pods/portforward", "secrets", "services/proxy").rule(),
			verbs("impersonate").groups(legacyGroup).resources("serviceaccounts").rule(),
			verbs(write...).groups(legacyGroup).resources("pods", "pods/attach", "pods/proxy", "pods/exec", "pods/portforward").rule(),
			verbs("create").groups(legacyGroup).resources("pods/eviction").rule(),
			verbs(write...).groups(legacyGroup).resources("replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/proxy", "persistentvolumeclaims", "configmaps", "secrets", "events").rule(),
			verbs("create").groups(legacyGroup).resources("serviceaccounts/token").rule(),
			verbs(write...).groups(appsGroup).resources("statefulsets", "statefulsets/scale", "daemonsets",
				"deployments", "deployments/scale", "deployments/rollback", "replicasets", "replicasets/scale").rule(),
			verbs(write...).groups(autoscalingGroup).resources("horizontalpodautoscalers").rule(),
			verbs(write...).groups(batchGroup).resources("jobs", "cronjobs").rule(),
			verbs(write...).groups(extensionsGroup).resources("daemonsets", "deployments", "deployments/scale", "deployments/rollback",
				"ingresses", "replicasets", "replicasets/scale", "replicationcontrollers/scale", "networkpolicies").rule(),
			verbs(write...).groups(policyGroup).resources("poddisruptionbudgets").rule(),
			verbs(write...).groups(networkingGroup).resources("networkpolicies", "ingresses").rule(),
			verbs(write...).groups(coordinationGroup).resources("leases").rule()),
		clusterRole("system:aggregate-to-view", map[string]string{aggregateToView: "true"},
			verbs(read...).groups(legacyGroup).resources("pods", "replicationcontrollers", "replicationcontrollers/scale", "serviceaccounts",
				"services", "services/status", "endpoints", "persistentvolumeclaims", "persistentvolumeclaims/status", "configmaps").rule(),
			verbs(read...).groups(legacyGroup).resources("limitranges", "resourcequotas", "bindings", "events",
				"pods/status", "resourcequotas/status", "namespaces/status", "replicationcontrollers/status", "pods/log").rule(),
			verbs(read...).groups(legacyGroup).resources("namespaces").rule(),
			verbs(read...).groups(discoveryGroup).resources("endpointslices").rule(),
			verbs(read...).groups(appsGroup).resources("controllerrevisions", "statefulsets", "statefulsets/status", "statefulsets/scale",
				"daemonsets", "daemonsets/status", "deployments", "deployments/status", "deployments/scale",
				"replicasets", "replicasets/status", "replicasets/scale").rule(),
			verbs(read...).groups(autoscalingGroup).resources("horizontalpodautoscalers", "horizontalpodautoscalers/status").rule(),
			verbs(read...).groups(batchGroup).resources("jobs", "cronjobs", "cronjobs/status", "jobs/status").rule(),
			verbs(read...).groups(extensionsGroup).resources("daemonsets", "daemonsets/status", "deployments", "deployments/scale", "deployments/status",
				"ingresses", "ingresses/status", "replicasets", "replicasets/scale", "replicasets/status", "replicationcontrollers/scale",
				"networkpolicies").rule(),
			verbs(read...).groups(policyGroup).resources("poddisruptionbudgets", "poddisruptionbudgets/status").rule(),
			verbs(read...).groups(networkingGroup).resources("networkpolicies", "ingresses", "ingresses/status").rule(),
			verbs(read...).groups(eventsGroup).resources("events").rule(),
			verbs(read...).groups(coordinationGroup).resources("leases").rule()),

		clusterRole("system:node", nil, NodeRules()...),
		clusterRole("system:node-bootstrapper", nil,
			verbs("create", "get", "list", "watch").groups(certificatesGroup).resources("certificatesigningrequests").rule()),
		// TLS bootstrapping: the csrapproving controller auto-approves a
		// kubelet client CSR when its requester may create these
		// subresources (nodeclient: a new node; selfnodeclient: a node
		// renewing its own certificate).
		clusterRole(NodeClientApproverRole, nil,
			verbs("create").groups(certificatesGroup).resources("certificatesigningrequests/nodeclient").rule()),
		clusterRole(SelfNodeClientApproverRole, nil,
			verbs("create").groups(certificatesGroup).resources("certificatesigningrequests/selfnodeclient").rule()),
		// Approve for one of kube-controller-manager's signers (what the
		// CertificateApproval admission plugin asks), to bind to people.
		signerApproverRole("legacy-unknown"),
		signerApproverRole("kubelet-serving"),
		signerApproverRole("kube-apiserver-client"),
		signerApproverRole("kube-apiserver-client-kubelet"),
		clusterRole("system:kubelet-api-admin", nil,
			verbs("get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
			verbs("proxy").groups(legacyGroup).resources("nodes").rule(),
			verbs("*").groups(legacyGroup).resources("nodes/proxy", "nodes/metrics", "nodes/spec", "nodes/stats", "nodes/log").rule()),
		clusterRole("system:auth-delegator", nil,
			verbs("create").groups(authenticationGroup).resources("tokenreviews").rule(),
			verbs("create").groups(authorizationGroup).resources("subjectaccessreviews").rule()),
		clusterRole("system:kube-controller-manager", nil,
			eventsRule(),
			// Leader election.
			verbs("create").groups(coordinationGroup).resources("leases").rule(),
			verbs("get", "update").groups(coordinationGroup).resources("leases").names("kube-controller-manager").rule(),
			// Identities of the other controllers.
			verbs("create").groups(legacyGroup).resources("secrets", "serviceaccounts").rule(),
			verbs("delete").groups(legacyGroup).resources("secrets").rule(),
			verbs("get").groups(legacyGroup).resources("namespaces", "secrets", "serviceaccounts", "configmaps").rule(),
			verbs("update").groups(legacyGroup).resources("secrets", "serviceaccounts").rule(),
			verbs("create").groups(authenticationGroup).resources("tokenreviews").rule(),
			verbs("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
			// Every shared informer.
			verbs("list", "watch").groups("*").resources("*").rule(),
			verbs("create").groups(legacyGroup).resources("serviceaccounts/token").rule()),
		clusterRole("system:kube-scheduler", nil,
			eventsRule(),
			// Leader election.
			verbs("create").groups(coordinationGroup).resources("leases").rule(),
			verbs("get", "update").groups(coordinationGroup).resources("leases").names("kube-scheduler").rule(),
			verbs(read...).groups(legacyGroup).resources("nodes").rule(),
			verbs("get", "list", "watch", "delete").groups(legacyGroup).resources("pods").rule(),
			verbs("create").groups(legacyGroup).resources("pods/binding", "bindings").rule(),
			verbs("patch", "update").groups(legacyGroup).resources("pods/status").rule(),
			verbs(read...).groups(legacyGroup).resources("services", "replicationcontrollers").rule(),
			verbs(read...).groups(appsGroup, extensionsGroup).resources("replicasets").rule(),
			verbs(read...).groups(appsGroup).resources("statefulsets").rule(),
			verbs(read...).groups(policyGroup).resources("poddisruptionbudgets").rule(),
			verbs(read...).groups(legacyGroup).resources("persistentvolumeclaims", "persistentvolumes").rule(),
			verbs("create").groups(authenticationGroup).resources("tokenreviews").rule(),
			verbs("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
			verbs(read...).groups(storageGroup).resources("csinodes").rule(),
			verbs(read...).groups(legacyGroup).resources("namespaces").rule(),
			verbs(read...).groups(storageGroup).resources("csidrivers", "csistoragecapacities").rule()),
		clusterRole("system:volume-scheduler", nil,
			verbs(readUpd...).groups(legacyGroup).resources("persistentvolumes").rule(),
			verbs(read...).groups(storageGroup).resources("storageclasses").rule(),
			verbs(readUpd...).groups(legacyGroup).resources("persistentvolumeclaims").rule()),
		clusterRole("system:node-proxier", nil,
			verbs("list", "watch").groups(legacyGroup).resources("services", "endpoints").rule(),
			verbs("get", "list", "watch").groups(legacyGroup).resources("nodes").rule(),
			eventsRule(),
			verbs("list", "watch").groups(discoveryGroup).resources("endpointslices").rule()),
	}
	return append(roles, ControllerRoles()...)
}

// signerApproverRole is system:certificates.k8s.io:<signer>-approver:
// approve on the signer kubernetes.io/<signer>.
func signerApproverRole(signer string) rbacv1.ClusterRole {
	return clusterRole("system:certificates.k8s.io:"+signer+"-approver", nil,
		verbs("approve").groups(certificatesGroup).resources("signers").names("kubernetes.io/"+signer).rule())
}

// Roles of TLS bootstrapping.
const (
	NodeBootstrapperRole       = "system:node-bootstrapper"
	NodeClientApproverRole     = "system:certificates.k8s.io:certificatesigningrequests:nodeclient"
	SelfNodeClientApproverRole = "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient"
	// BootstrappersGroup is the group of every bootstrap token user.
	BootstrappersGroup = "system:bootstrappers"
)

// NodeBootstrapBindings are the bindings kubeadm creates (not Kubernetes'
// defaults) so that kubelets with a bootstrap token may ask for their
// client certificate and have it auto-approved, and nodes may renew
// theirs: system:node-bootstrapper and the nodeclient approval role for
// group system:bootstrappers, the selfnodeclient role for system:nodes.
func NodeBootstrapBindings() []rbacv1.ClusterRoleBinding {
	named := func(name, role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
		b := clusterBinding(role, subjects...)
		b.ObjectMeta = objectMeta(name, "", nil)
		return b
	}
	return []rbacv1.ClusterRoleBinding{
		named("kubeadm:kubelet-bootstrap", NodeBootstrapperRole, group(BootstrappersGroup)),
		named("kubeadm:node-autoapprove-bootstrap", NodeClientApproverRole, group(BootstrappersGroup)),
		named("kubeadm:node-autoapprove-certificate-rotation", SelfNodeClientApproverRole, group("system:nodes")),
	}
}

// ClusterRoleBindings returns the default ClusterRoleBindings.
func ClusterRoleBindings() []rbacv1.ClusterRoleBinding {
	bindings := []rbacv1.ClusterRoleBinding{
		clusterBinding("cluster-admin", group(SystemMastersGroup)),
		clusterBinding("system:monitoring", group(MonitoringGroup)),
		clusterBinding("system:discovery", group(AuthenticatedGroup)),
		clusterBinding("system:basic-user", group(AuthenticatedGroup)),
		clusterBinding("system:public-info-viewer", group(AuthenticatedGroup), group(UnauthenticatedGroup)),
		clusterBinding("system:node-proxier", user(KubeProxy)),
		clusterBinding("system:kube-controller-manager", user(KubeControllerManager)),
		clusterBinding("system:kube-scheduler", user(KubeScheduler)),
		clusterBinding("system:volume-scheduler", user(KubeScheduler)),
		// Bound to nobody: nodes get these rules through the Node
		// authorizer, which also limits them to the node's own objects.
		clusterBinding("system:node"),
	}
	return append(bindings, ControllerRoleBindings()...)
}

func clusterBinding(role string, subjects ...rbacv1.Subject) rbacv1.ClusterRoleBinding {
	return rbacv1.ClusterRoleBinding{
		ObjectMeta: objectMeta(role, "", nil),
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role},
		Subjects:   subjects,
	}
}

func group(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.GroupKind, APIGroup: rbacv1.GroupName, Name: name}
}

func user(name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: name}
}

func serviceAccount(namespace, name string) rbacv1.Subject {
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: namespace, Name: name}
}

// KubeSystem is the namespace of the control plane's own objects.
const KubeSystem = "kube-system"

// NamespaceRoles returns the default Roles (all in kube-system).
func NamespaceRoles() []rbacv1.Role {
	role := func(name string, rules ...rbacv1.PolicyRule) rbacv1.Role {
		return rbacv1.Role{ObjectMeta: objectMeta(name, KubeSystem, nil), Rules: rules}
	}
	return []rbacv1.Role{
		role("extension-apiserver-authentication-reader",
			verbs("get", "list", "watch").groups(legacyGroup).resources("configmaps").names("extension-apiserver-authentication").rule()),
		role("system::leader-locking-kube-controller-manager",
			verbs("watch").groups(legacyGroup).resources("configmaps").rule(),
			verbs("get", "update").groups(legacyGroup).resources("configmaps").names("kube-controller-manager").rule()),
		role("system::leader-locking-kube-scheduler",
			verbs("watch").groups(legacyGroup).resources("configmaps").rule(),
			verbs("get", "update").groups(legacyGroup).resources("configmaps").names("kube-scheduler").rule()),
	}
}

// NamespaceRoleBindings returns the default RoleBindings (all in
// kube-system).
func NamespaceRoleBindings() []rbacv1.RoleBinding {
	binding := func(name, role string, subjects ...rbacv1.Subject) rbacv1.RoleBinding {
		return rbacv1.RoleBinding{
			ObjectMeta: objectMeta(name, KubeSystem, nil),
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "Role", Name: role},
			Subjects:   subjects,
		}
	}
	return []rbacv1.RoleBinding{
		binding("system::extension-apiserver-authentication-reader", "extension-apiserver-authentication-reader",
			user(KubeControllerManager), user(KubeScheduler)),
		binding("system::leader-locking-kube-controller-manager", "system::leader-locking-kube-controller-manager",
			user(KubeControllerManager), serviceAccount(KubeSystem, "kube-controller-manager")),
		binding("system::leader-locking-kube-scheduler", "system::leader-locking-kube-scheduler",
			user(KubeScheduler), serviceAccount(KubeSystem, "kube-scheduler")),
	}
}
