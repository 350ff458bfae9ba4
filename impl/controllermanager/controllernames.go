package controllermanager

import (
	"fmt"
	"slices"
	"strings"
)

// upstreamController is one controller kube-controller-manager 1.37
// knows: its canonical name, the aliases it also answers to, whether
// "*" leaves it off, and the kubeproof controller that does its work
// ("" when kubeproof has none).
type upstreamController struct {
	name              string
	aliases           []string
	disabledByDefault bool
	ours              string
}

// upstreamControllers is kube-controller-manager 1.37's list of known
// controllers (app.NewControllerDescriptors: the canonical names of
// cmd/kube-controller-manager/names and cloud-provider's names, each
// descriptor's aliases and isDisabledByDefault). --controllers accepts
// exactly these names and aliases; kubeproof runs the ones with ours
// set. Controllers added after 1.35 carry no alias (they are behind
// feature gates when added).
var upstreamControllers = []upstreamController{
	{name: "serviceaccount-token-controller", aliases: []string{"serviceaccount-token"}, ours: ServiceAccountToken},
	{name: "endpoints-controller", aliases: []string{"endpoint"}, ours: Endpoint},
	{name: "endpointslice-controller", aliases: []string{"endpointslice"}, ours: EndpointSlice},
	{name: "endpointslice-mirroring-controller", aliases: []string{"endpointslicemirroring"}, ours: EndpointSliceMirroring},
	{name: "replicationcontroller-controller", aliases: []string{"replicationcontroller"}},
	{name: "pod-garbage-collector-controller", aliases: []string{"podgc"}, ours: PodGC},
	{name: "resourcequota-controller", aliases: []string{"resourcequota"}, ours: ResourceQuota},
	{name: "namespace-controller", aliases: []string{"namespace"}, ours: Namespace},
	{name: "serviceaccount-controller", aliases: []string{"serviceaccount"}, ours: ServiceAccount},
	{name: "garbage-collector-controller", aliases: []string{"garbagecollector"}, ours: GarbageCollector},
	{name: "daemonset-controller", aliases: []string{"daemonset"}},
	{name: "job-controller", aliases: []string{"job"}},
	{name: "deployment-controller", aliases: []string{"deployment"}, ours: Deployment},
	{name: "replicaset-controller", aliases: []string{"replicaset"}, ours: ReplicaSet},
	{name: "horizontal-pod-autoscaler-controller", aliases: []string{"horizontalpodautoscaling"}},
	{name: "disruption-controller", aliases: []string{"disruption"}, ours: Disruption},
	{name: "statefulset-controller", aliases: []string{"statefulset"}},
	{name: "cronjob-controller", aliases: []string{"cronjob"}},
	{name: "certificatesigningrequest-signing-controller", aliases: []string{"csrsigning"}, ours: CSRSigning},
	{name: "certificatesigningrequest-approving-controller", aliases: []string{"csrapproving"}, ours: CSRApproving},
	{name: "certificatesigningrequest-cleaner-controller", aliases: []string{"csrcleaner"}, ours: CSRCleaner},
	{name: "podcertificaterequest-cleaner-controller"},
	{name: "ttl-controller", aliases: []string{"ttl"}},
	{name: "bootstrap-signer-controller", aliases: []string{"bootstrapsigner"}, disabledByDefault: true},
	{name: "token-cleaner-controller", aliases: []string{"tokencleaner"}, disabledByDefault: true},
	{name: "node-ipam-controller", aliases: []string{"nodeipam"}},
	{name: "node-lifecycle-controller", aliases: []string{"nodelifecycle"}, ours: NodeLifecycle},
	{name: "service-lb-controller", aliases: []string{"service"}},
	{name: "node-route-controller", aliases: []string{"route"}},
	{name: "cloud-node-lifecycle-controller", aliases: []string{"cloud-node-lifecycle"}},
	{name: "persistentvolume-binder-controller", aliases: []string{"persistentvolume-binder"}},
	{name: "persistentvolume-attach-detach-controller", aliases: []string{"attachdetach"}},
	{name: "persistentvolume-expander-controller", aliases: []string{"persistentvolume-expander"}},
	{name: "clusterrole-aggregation-controller", aliases: []string{"clusterrole-aggregation"}, ours: ClusterRoleAggregation},
	{name: "persistentvolumeclaim-protection-controller", aliases: []string{"pvc-protection"}},
	{name: "persistentvolume-protection-controller", aliases: []string{"pv-protection"}},
	{name: "volumeattributesclass-protection-controller"},
	{name: "ttl-after-finished-controller", aliases: []string{"ttl-after-finished"}},
	{name: "root-ca-certificate-publisher-controller", aliases: []string{"root-ca-cert-publisher"}, ours: RootCAPublisher},
	{name: "kube-apiserver-serving-clustertrustbundle-publisher-controller"},
	{name: "ephemeral-volume-controller", aliases: []string{"ephemeral-volume"}},
	{name: "storageversion-garbage-collector-controller", aliases: []string{"storage-version-gc"}},
	{name: "resourceclaim-controller", aliases: []string{"resource-claim-controller"}},
	{name: "device-taint-eviction-controller"},
	{name: "legacy-serviceaccount-token-cleaner-controller", aliases: []string{"legacy-service-account-token-cleaner"}, ours: LegacyServiceAccountTokenCleaner},
	{name: "validatingadmissionpolicy-status-controller"},
	{name: "taint-eviction-controller"},
	{name: "service-cidr-controller"},
	{name: "storage-version-migrator-controller"},
	{name: "selinux-warning-controller", disabledByDefault: true},
	{name: "resourcepoolstatusrequest-controller"},
	{name: "podgroup-protection-controller"},
	{name: "evictionrequest-controller"},
	{name: "imperative-eviction-responder-controller"},
}

// upstreamByName finds a controller by its canonical name or an alias.
func upstreamByName(name string) (upstreamController, bool) {
	for _, c := range upstreamControllers {
		if c.name == name || slices.Contains(c.aliases, name) {
			return c, true
		}
	}
	return upstreamController{}, false
}

// UpstreamControllerNames lists kube-controller-manager's canonical
// controller names, sorted (its "All controllers" in --help).
func UpstreamControllerNames() []string {
	var names []string
	for _, c := range upstreamControllers {
		names = append(names, c.name)
	}
	slices.Sort(names)
	return names
}

// UpstreamControllersDisabledByDefault lists the controllers "*" leaves
// off, sorted (its "Disabled-by-default controllers").
func UpstreamControllersDisabledByDefault() []string {
	var names []string
	for _, c := range upstreamControllers {
		if c.disabledByDefault {
			names = append(names, c.name)
		}
	}
	slices.Sort(names)
	return names
}

// NormalizeControllers reads --controllers as kube-controller-manager
// 1.37 does (k8s.io/controller-manager options Validate and ApplyTo,
// app.IsControllerEnabled). Each entry is "*" (every controller not
// disabled by default), a name (enable it) or "-" and a name (disable
// it), where a name is a controller's canonical name or alias; the
// first entry naming a controller decides it, "*" only what no entry
// names. kubeproof's own names (AllControllers) are accepted too; all
// are upstream aliases but pod-garbage-collector.
//
// It returns the entries in kubeproof's names for Config.Controllers
// (entries of controllers kubeproof does not run are dropped); the
// canonical names of the controllers upstream would run because an
// entry names them but kubeproof does not have (unimplemented, to warn
// about; a disabled one or one only "*" enables is not listed); and, as
// upstream's validation, one error per name no controller has, naming
// it without its "-".
func NormalizeControllers(entries []string) (controllers, unimplemented []string, errs []error) {
	canonical := make([]string, 0, len(entries))
	controllers = make([]string, 0, len(entries))
	for _, e := range entries {
		if e == "*" {
			canonical = append(canonical, e)
			controllers = append(controllers, e)
			continue
		}
		name, disable := strings.CutPrefix(e, "-")
		c, ok := upstreamByName(name)
		if !ok && slices.Contains(AllControllers, name) {
			c, ok = upstreamByName(ourUpstreamName(name))
		}
		if !ok {
			errs = append(errs, fmt.Errorf("%q is not in the list of known controllers", name))
			continue
		}
		prefix := ""
		if disable {
			prefix = "-"
		}
		canonical = append(canonical, prefix+c.name)
		if c.ours != "" {
			controllers = append(controllers, prefix+c.ours)
		}
	}
	if len(errs) > 0 {
		return nil, nil, errs
	}
	for _, e := range canonical {
		c, ok := upstreamByName(e)
		if !ok || c.ours != "" || slices.Contains(unimplemented, c.name) {
			continue
		}
		if upstreamEnabled(c, canonical) {
			unimplemented = append(unimplemented, c.name)
		}
	}
	return controllers, unimplemented, nil
}

// ourUpstreamName is the canonical name of kubeproof's controller ours.
func ourUpstreamName(ours string) string {
	for _, c := range upstreamControllers {
		if c.ours == ours {
			return c.name
		}
	}
	return ""
}

// upstreamEnabled is app.IsControllerEnabled on canonical entries: the
// first entry naming c decides; else "*" enables it unless it is
// disabled by default.
func upstreamEnabled(c upstreamController, entries []string) bool {
	star := false
	for _, e := range entries {
		switch e {
		case c.name:
			return true
		case "-" + c.name:
			return false
		case "*":
			star = true
		}
	}
	return star && !c.disabledByDefault
}
