package registry

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	netutils "k8s.io/utils/net"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// Node role labels shown in the ROLES column.
const (
	labelNodeRolePrefix = "node-role.kubernetes.io/"
	labelNodeRole       = "kubernetes.io/role"
)

func nodes(now func() time.Time) *resource.Resource {
	k := kind[*corev1.Node]{
		namespaced: false,
		defaults:   defaultNode,
		// Nodes may set status on create (the kubelet registers itself
		// with its status); later status changes go through /status.
		prepareForUpdate: func(n, old *corev1.Node) { n.Status = old.Status },
		validateCreate:   func(n *corev1.Node) field.ErrorList { return validateNode(n, nil) },
		validateUpdate: func(n, old *corev1.Node) field.ErrorList {
			return append(validateNode(n, old), validateNodeUpdate(n, old)...)
		},
		warnings: nodeWarnings,
		fields: func(n *corev1.Node) fields.Set {
			return fields.Set{"spec.unschedulable": strconv.FormatBool(n.Spec.Unschedulable)}
		},
		table: &tableSpec[*corev1.Node]{columns: nodeColumns, cells: nodeCells},
	}
	s := newStrategy(k, now)
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "nodes", SingularName: "node", Kind: "Node",
		Namespaced: false, ShortNames: []string{"no"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &corev1.Node{} },
		NewList:  func() runtime.Object { return &corev1.NodeList{} },
		Strategy: s,
		Status: statusStrategy[*corev1.Node]{s: s, k: statusKind[*corev1.Node]{
			keep: func(n, old *corev1.Node) { n.Spec = old.Spec },
			validate: func(n, _ *corev1.Node) field.ErrorList {
				return validateNodeStatus(n)
			},
		}},
	}
}

// defaultNode keeps podCIDR and podCIDRs consistent (the v1 API has both)
// and defaults allocatable to capacity.
func defaultNode(n *corev1.Node) {
	if n.Spec.PodCIDR != "" && len(n.Spec.PodCIDRs) == 0 {
		n.Spec.PodCIDRs = []string{n.Spec.PodCIDR}
	}
	if n.Spec.PodCIDR == "" && len(n.Spec.PodCIDRs) > 0 {
		n.Spec.PodCIDR = n.Spec.PodCIDRs[0]
	}
	if n.Status.Allocatable == nil && len(n.Status.Capacity) > 0 {
		n.Status.Allocatable = n.Status.Capacity.DeepCopy()
	}
}

var taintEffects = []string{string(corev1.TaintEffectNoSchedule), string(corev1.TaintEffectPreferNoSchedule), string(corev1.TaintEffectNoExecute)}

// validateNode checks a node on create (old nil) and update. spec.podCIDRs
// are legacy CIDR fields as upstream 1.37's ValidateNode with
// StrictIPCIDRValidation on (KEP-4858, beta and on since 1.36): no leading
// zeros, no IPv4-mapped IPv6, no bits set beyond the prefix length, a
// non-canonical IPv6 CIDR accepted with a warning (was refused: must be in
// canonical form); on update a CIDR the stored node already had may stay.
// More than one must be a dual-stack pair without repeats.
func validateNode(n, old *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if len(n.Spec.PodCIDRs) > 0 {
		cidrsPath := spec.Child("podCIDRs")
		if n.Spec.PodCIDR != n.Spec.PodCIDRs[0] {
			errs = append(errs, field.Invalid(spec.Child("podCIDR"), n.Spec.PodCIDR, "must match first element of podCIDRs"))
		}
		var oldCIDRs []string
		if old != nil {
			oldCIDRs = old.Spec.PodCIDRs
		}
		bad := false
		for i, cidr := range n.Spec.PodCIDRs {
			cidrErrs := validation.IsValidCIDRForLegacyField(cidrsPath.Index(i), cidr, true, oldCIDRs)
			bad = bad || len(cidrErrs) > 0
			errs = append(errs, cidrErrs...)
		}
		if len(n.Spec.PodCIDRs) > 1 {
			if dualStack, err := netutils.IsDualStackCIDRStrings(n.Spec.PodCIDRs); err != nil && !bad {
				errs = append(errs, field.InternalError(cidrsPath, fmt.Errorf("invalid PodCIDRs. failed to check with dual stack with error:%v", err)))
			} else if (err == nil && !dualStack) || len(n.Spec.PodCIDRs) > 2 {
				errs = append(errs, field.Invalid(cidrsPath, n.Spec.PodCIDRs, "may specify no more than one CIDR for each IP family"))
			}
			seen := map[string]bool{}
			for i, cidr := range n.Spec.PodCIDRs {
				if seen[cidr] {
					errs = append(errs, field.Duplicate(cidrsPath.Index(i), cidr))
				}
				seen[cidr] = true
			}
		}
	}
	type taintKey struct {
		key    string
		effect corev1.TaintEffect
	}
	seen := map[taintKey]bool{}
	for i, t := range n.Spec.Taints {
		p := spec.Child("taints").Index(i)
		errs = append(errs, validateLabelKey(t.Key, p.Child("key"))...)
		if t.Value != "" {
			for _, msg := range validation.IsValidLabelValue(t.Value) {
				errs = append(errs, field.Invalid(p.Child("value"), t.Value, msg))
			}
		}
		switch t.Effect {
		case corev1.TaintEffectNoSchedule, corev1.TaintEffectPreferNoSchedule, corev1.TaintEffectNoExecute:
		case "":
			errs = append(errs, field.Required(p.Child("effect"), ""))
		default:
			errs = append(errs, field.NotSupported(p.Child("effect"), t.Effect, taintEffects))
		}
		k := taintKey{t.Key, t.Effect}
		if seen[k] {
			errs = append(errs, field.Duplicate(p, "taints must be unique by key and effect pair"))
		}
		seen[k] = true
	}
	return append(errs, validateNodeStatus(n)...)
}

func validateNodeStatus(n *corev1.Node) field.ErrorList {
	status := field.NewPath("status")
	errs := validateResourceList(n.Status.Capacity, status.Child("capacity"), validateResourceName)
	errs = append(errs, validateResourceList(n.Status.Allocatable, status.Child("allocatable"), validateResourceName)...)
	return errs
}

// validateNodeUpdate: podCIDRs and providerID may only be set once.
func validateNodeUpdate(n, old *corev1.Node) field.ErrorList {
	var errs field.ErrorList
	spec := field.NewPath("spec")
	if len(old.Spec.PodCIDRs) > 0 {
		changed := len(old.Spec.PodCIDRs) != len(n.Spec.PodCIDRs)
		for i := 0; !changed && i < len(old.Spec.PodCIDRs); i++ {
			changed = old.Spec.PodCIDRs[i] != n.Spec.PodCIDRs[i]
		}
		if changed {
			errs = append(errs, field.Forbidden(spec.Child("podCIDRs"), "node updates may not change podCIDR except from \"\" to valid"))
		}
	}
	if old.Spec.ProviderID != "" && n.Spec.ProviderID != old.Spec.ProviderID {
		errs = append(errs, field.Forbidden(spec.Child("providerID"), "node updates may not change providerID except from \"\" to valid"))
	}
	return errs
}

var nodeColumns = []metav1.TableColumnDefinition{
	nameColumn(),
	column("Status", "string", "The readiness of the node and whether it is schedulable."),
	column("Roles", "string", "The roles of the node, from its node-role labels."),
	ageColumn(),
	column("Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kubeletVersion"]),
	wideColumn("Internal-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
	wideColumn("External-IP", "string", corev1.NodeStatus{}.SwaggerDoc()["addresses"]),
	wideColumn("OS-Image", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["osImage"]),
	wideColumn("Kernel-Version", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["kernelVersion"]),
	wideColumn("Container-Runtime", "string", corev1.NodeSystemInfo{}.SwaggerDoc()["containerRuntimeVersion"]),
}

func nodeCells(n *corev1.Node, now time.Time) []any {
	var status []string
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			if c.Status == corev1.ConditionTrue {
				status = append(status, "Ready")
			} else {
				status = append(status, "NotReady")
			}
			break
		}
	}
	if len(status) == 0 {
		status = append(status, "Unknown")
	}
	if n.Spec.Unschedulable {
		status = append(status, "SchedulingDisabled")
	}
	roles := strings.Join(nodeRoles(n), ",")
	if roles == "" {
		roles = "<none>"
	}
	info := n.Status.NodeInfo
	return []any{n.Name, strings.Join(status, ","), roles, age(n.CreationTimestamp, now), info.KubeletVersion,
		nodeAddress(n, corev1.NodeInternalIP), nodeAddress(n, corev1.NodeExternalIP),
		orUnknown(info.OSImage), orUnknown(info.KernelVersion), orUnknown(info.ContainerRuntimeVersion)}
}

// nodeRoles lists the roles from node-role.kubernetes.io/<role> labels and
// the kubernetes.io/role label, sorted and de-duplicated.
func nodeRoles(n *corev1.Node) []string {
	set := map[string]bool{}
	for k, v := range n.Labels {
		switch {
		case strings.HasPrefix(k, labelNodeRolePrefix):
			if role := strings.TrimPrefix(k, labelNodeRolePrefix); role != "" {
				set[role] = true
			}
		case k == labelNodeRole && v != "":
			set[v] = true
		}
	}
	roles := make([]string, 0, len(set))
	for r := range set {
		roles = append(roles, r)
	}
	sort.Strings(roles)
	return roles
}

func nodeAddress(n *corev1.Node, t corev1.NodeAddressType) string {
	for _, a := range n.Status.Addresses {
		if a.Type == t {
			return a.Address
		}
	}
	return "<none>"
}

func orUnknown(s string) string {
	if s == "" {
		return "<unknown>"
	}
	return s
}

func orNone(s string) string {
	if s == "" {
		return "<none>"
	}
	return s
}

// nodeWarnings are the Warning headers of a valid node create or update,
// as upstream's node strategy: the unused externalID, and non-standard
// spec.podCIDRs values (KEP-4858's API warnings). (Upstream's configSource
// warning is not given: configSource is not dropped here as upstream
// drops it.)
func nodeWarnings(n, _ *corev1.Node) []string {
	var warnings []string
	if n.Spec.DoNotUseExternalID != "" {
		warnings = append(warnings, "spec.externalID: this field is deprecated, and is unused by Kubernetes")
	}
	for i, cidr := range n.Spec.PodCIDRs {
		if _, _, err := netutils.ParseCIDRSloppy(cidr); err == nil {
			warnings = append(warnings, validation.GetWarningsForCIDR(field.NewPath("spec", "podCIDRs").Index(i), cidr)...)
		}
	}
	return warnings
}
