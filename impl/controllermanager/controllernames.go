package controllermanager

import (
	"fmt"
	"slices"
	"strings"
)

// upstreamControllerNames maps the names kube-controller-manager 1.37
// knows kubeproof's controllers by, other than kubeproof's own (which
// are upstream's aliases, podgc's excepted), to kubeproof's: each
// controller's canonical name (cmd/kube-controller-manager/names) and
// podgc's alias.
var upstreamControllerNames = map[string]string{
	"node-lifecycle-controller":                      NodeLifecycle,
	"pod-garbage-collector-controller":               PodGC,
	"podgc":                                          PodGC,
	"endpoints-controller":                           Endpoint,
	"endpointslice-controller":                       EndpointSlice,
	"endpointslice-mirroring-controller":             EndpointSliceMirroring,
	"namespace-controller":                           Namespace,
	"resourcequota-controller":                       ResourceQuota,
	"disruption-controller":                          Disruption,
	"serviceaccount-token-controller":                ServiceAccountToken,
	"legacy-serviceaccount-token-cleaner-controller": LegacyServiceAccountTokenCleaner,
	"serviceaccount-controller":                      ServiceAccount,
	"root-ca-certificate-publisher-controller":       RootCAPublisher,
	"certificatesigningrequest-approving-controller": CSRApproving,
	"certificatesigningrequest-signing-controller":   CSRSigning,
	"certificatesigningrequest-cleaner-controller":   CSRCleaner,
	"clusterrole-aggregation-controller":             ClusterRoleAggregation,
	"garbage-collector-controller":                   GarbageCollector,
	"replicaset-controller":                          ReplicaSet,
	"deployment-controller":                          Deployment,
}

// NormalizeControllers reads --controllers as kube-controller-manager
// does: each entry is "*", a controller's name (enable it) or a name
// after "-" (disable it), where a name is kubeproof's (AllControllers),
// upstream's canonical one or its alias. It returns the entries in
// kubeproof's names for Config.Controllers, or, as upstream's
// validation, one error per name no controller has, naming it without
// its "-". Controllers upstream has and kubeproof does not (job, ttl,
// bootstrapsigner, ...) are unknown here, so asking for one is refused
// rather than silently running nothing.
func NormalizeControllers(entries []string) ([]string, []error) {
	var errs []error
	out := make([]string, 0, len(entries))
	for _, e := range entries {
		if e == "*" {
			out = append(out, e)
			continue
		}
		name, disable := strings.CutPrefix(e, "-")
		ours, ok := upstreamControllerNames[name]
		if !ok && slices.Contains(AllControllers, name) {
			ours, ok = name, true
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not in the list of known controllers", name))
			continue
		}
		if disable {
			ours = "-" + ours
		}
		out = append(out, ours)
	}
	return out, errs
}
