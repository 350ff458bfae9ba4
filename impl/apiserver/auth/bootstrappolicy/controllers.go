package bootstrappolicy

import (
	rbacv1 "k8s.io/api/rbac/v1"
)

// ControllerRolePrefix starts the name of every controller's ClusterRole
// and ClusterRoleBinding; the subject is the service account
// kube-system/<controller> (user
// system:serviceaccount:kube-system:<controller>), which the controller
// manager acts as when it uses per-controller credentials.
const ControllerRolePrefix = "system:controller:"

// controllerRoles lists, per controller service account, what it writes.
// Reads through shared informers are the controller manager's own
// (system:kube-controller-manager may list and watch everything).
func controllerRoles() map[string][]rbacv1.PolicyRule {
	return map[string][]rbacv1.PolicyRule{
		"certificate-controller": {
			verbs("get", "list", "watch", "delete").groups(certificatesGroup).resources("certificatesigningrequests").rule(),
			verbs("update").groups(certificatesGroup).resources("certificatesigningrequests/approval", "certificatesigningrequests/status").rule(),
			verbs("approve").groups(certificatesGroup).resources("signers").names("kubernetes.io/kube-apiserver-client-kubelet").rule(),
			verbs("sign").groups(certificatesGroup).resources("signers").names("kubernetes.io/legacy-unknown",
				"kubernetes.io/kube-apiserver-client", "kubernetes.io/kube-apiserver-client-kubelet", "kubernetes.io/kubelet-serving").rule(),
			verbs("create").groups(authorizationGroup).resources("subjectaccessreviews").rule(),
			eventsRule(),
		},
		// It rewrites any ClusterRole's rules, hence escalate.
		"clusterrole-aggregation-controller": {
			verbs("escalate", "get", "list", "watch", "update", "patch").groups(rbacGroup).resources("clusterroles").rule(),
		},
		"deployment-controller": {
			verbs("get", "list", "watch", "update", "patch").groups(appsGroup, extensionsGroup).resources("deployments").rule(),
			verbs("update").groups(appsGroup, extensionsGroup).resources("deployments/status").rule(),
			verbs("update").groups(appsGroup, extensionsGroup).resources("deployments/finalizers").rule(),
			verbs("get", "list", "watch", "create", "update", "patch", "delete").groups(appsGroup, extensionsGroup).resources("replicasets").rule(),
			verbs("get", "list", "watch", "update").groups(legacyGroup).resources("pods").rule(),
			eventsRule(),
		},
		"replicaset-controller": {
			verbs("get", "list", "watch", "update").groups(appsGroup, extensionsGroup).resources("replicasets").rule(),
			verbs("update").groups(appsGroup, extensionsGroup).resources("replicasets/status").rule(),
			verbs("update").groups(appsGroup, extensionsGroup).resources("replicasets/finalizers").rule(),
			verbs("list", "watch", "patch", "create", "delete").groups(legacyGroup).resources("pods").rule(),
			eventsRule(),
		},
		"generic-garbage-collector": {
			verbs("get", "list", "watch", "patch", "update", "delete").groups("*").resources("*").rule(),
			eventsRule(),
		},
		"endpoint-controller": {
			verbs("get", "list", "watch").groups(legacyGroup).resources("services", "pods").rule(),
			verbs("create", "update", "delete").groups(legacyGroup).resources("endpoints").rule(),
			verbs("create").groups(legacyGroup).resources("endpoints/restricted").rule(),
			eventsRule(),
		},
		"endpointslice-controller": {
			verbs("get", "list", "watch").groups(legacyGroup).resources("services", "pods", "nodes").rule(),
			// Slices are owned by their service with blockOwnerDeletion.
			verbs("update").groups(legacyGroup).resources("services/finalizers").rule(),
			verbs("get", "list", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices").rule(),
			eventsRule(),
		},
		"endpointslicemirroring-controller": {
			verbs("get", "list", "watch").groups(legacyGroup).resources("services", "endpoints").rule(),
			// Mirrored slices are owned by their Endpoints with blockOwnerDeletion.
			verbs("update").groups(legacyGroup).resources("services/finalizers", "endpoints/finalizers").rule(),
			verbs("get", "list", "create", "update", "delete").groups(discoveryGroup).resources("endpointslices").rule(),
			eventsRule(),
		},
		"namespace-controller": {
			verbs("get", "list", "watch", "delete").groups(legacyGroup).resources("namespaces").rule(),
			verbs("update").groups(legacyGroup).resources("namespaces/finalize", "namespaces/status").rule(),
			verbs("get", "list", "delete", "deletecollection").groups("*").resources("*").rule(),
		},
		"node-controller": {
			verbs("get", "list", "update", "delete", "patch").groups(legacyGroup).resources("nodes").rule(),
			verbs("patch", "update").groups(legacyGroup).resources("nodes/status").rule(),
			verbs("patch", "update").groups(legacyGroup).resources("pods/status").rule(),
			verbs("list", "delete").groups(legacyGroup).resources("pods").rule(),
			eventsRule(),
		},
		"pod-garbage-collector": {
			verbs("list", "watch", "delete").groups(legacyGroup).resources("pods").rule(),
			verbs("get", "list").groups(legacyGroup).resources("nodes").rule(),
			verbs("patch").groups(legacyGroup).resources("pods/status").rule(),
		},
		"disruption-controller": {
			verbs("get", "list", "watch").groups(appsGroup, extensionsGroup).resources("deployments", "replicasets").rule(),
			verbs("get", "list", "watch").groups(legacyGroup).resources("pods").rule(),
			verbs("get", "list", "watch").groups(policyGroup).resources("poddisruptionbudgets").rule(),
			verbs("update").groups(policyGroup).resources("poddisruptionbudgets/status").rule(),
			verbs("patch", "update").groups(legacyGroup).resources("pods/status").rule(),
			eventsRule(),
		},
		"resourcequota-controller": {
			verbs("list", "watch").groups("*").resources("*").rule(),
			verbs("update").groups(legacyGroup).resources("resourcequotas/status").rule(),
			eventsRule(),
		},
		"serviceaccount-controller": {
			verbs("create").groups(legacyGroup).resources("serviceaccounts").rule(),
			eventsRule(),
		},
		"legacy-service-account-token-cleaner": {
			verbs("get").groups(legacyGroup).resources("configmaps").names("kube-apiserver-legacy-service-account-token-tracking").rule(),
			verbs("patch", "delete").groups(legacyGroup).resources("secrets").rule(),
		},
		"root-ca-cert-publisher": {
			verbs("create", "update").groups(legacyGroup).resources("configmaps").rule(),
			eventsRule(),
		},
	}
}

// Controllers are the controller service accounts with a default role, in
// name order.
func Controllers() []string {
	return []string{
		"certificate-controller", "clusterrole-aggregation-controller", "deployment-controller", "disruption-controller", "endpoint-controller", "endpointslice-controller", "endpointslicemirroring-controller", "generic-garbage-collector", "legacy-service-account-token-cleaner", "namespace-controller", "node-controller",
		"pod-garbage-collector", "replicaset-controller", "resourcequota-controller", "root-ca-cert-publisher", "serviceaccount-controller",
	}
}

// ControllerRoles returns the system:controller:<name> ClusterRoles.
func ControllerRoles() []rbacv1.ClusterRole {
	rules := controllerRoles()
	out := make([]rbacv1.ClusterRole, 0, len(rules))
	for _, name := range Controllers() {
		out = append(out, clusterRole(ControllerRolePrefix+name, nil, rules[name]...))
	}
	return out
}

// ControllerRoleBindings bind each controller role to its service account
// in kube-system.
func ControllerRoleBindings() []rbacv1.ClusterRoleBinding {
	out := make([]rbacv1.ClusterRoleBinding, 0, len(Controllers()))
	for _, name := range Controllers() {
		out = append(out, clusterBinding(ControllerRolePrefix+name, serviceAccount(KubeSystem, name)))
	}
	return out
}
