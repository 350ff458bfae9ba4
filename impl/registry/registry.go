package registry

import (
	"time"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// Discovery verbs.
var (
	allVerbs                = []string{"create", "delete", "deletecollection", "get", "list", "patch", "update", "watch"}
	verbsNoDeleteCollection = []string{"create", "delete", "get", "list", "patch", "update", "watch"}
)

// All returns every resource the API server serves, in discovery order.
func All() []*resource.Resource {
	return resources(time.Now)
}

// resources builds the resource list with the given clock (table ages).
func resources(now func() time.Time) []*resource.Resource {
	return []*resource.Resource{
		// core/v1
		componentStatuses(now), // computed on each read, not stored
		configMaps(now),
		endpoints(now),
		events(now),
		limitRanges(now),
		namespaces(now),
		nodes(now),
		pods(now),
		resourceQuotas(now),
		secrets(now),
		serviceAccounts(now),
		services(now),
		// apps/v1
		deployments(now),
		replicaSets(now),
		// certificates.k8s.io/v1
		certificateSigningRequests(now),
		// coordination.k8s.io/v1
		leases(now),
		// discovery.k8s.io/v1
		endpointSlices(now),
		// rbac.authorization.k8s.io/v1
		clusterRoleBindings(now),
		clusterRoles(now),
		roleBindings(now),
		roles(now),
		// admissionregistration.k8s.io/v1
		mutatingWebhookConfigurations(now),
		validatingWebhookConfigurations(now),
		// policy/v1
		podDisruptionBudgets(now),
		// scheduling.k8s.io/v1
		priorityClasses(now),
		// node.k8s.io/v1
		runtimeClasses(now),
		// events.k8s.io/v1
		eventsV1(now),
		// flowcontrol.apiserver.k8s.io/v1
		flowSchemas(now),
		priorityLevelConfigurations(now),
	}
}
