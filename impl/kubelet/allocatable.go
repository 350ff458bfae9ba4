package kubelet

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
)

// Node allocatable, as upstream's kubelet reckons and enforces it
// (pkg/kubelet/cm/node_container_manager_linux.go, the MachineInfo node
// status setter) with --system-reserved, --kube-reserved and
// --enforce-node-allocatable (Config.SystemReserved, KubeReserved,
// EnforceNodeAllocatable):
//
//   - the Node's status.allocatable is its capacity less the system and
//     kube reservations and the hard eviction thresholds, per resource,
//     never below zero, and memory that much less again for the huge
//     pages' capacity (nodeAllocatable over allocatableReservation); a
//     reservation above the capacity is refused at start
//     (validateNodeAllocatable);
//   - with "pods" enforced (the default), kubepods has the capacity less
//     the system and kube reservations, not less the eviction thresholds,
//     its process capacity ("pid") included (allocatableAbsolute,
//     Config.kubepodsResources); without it, the capacity itself;
//   - with "system-reserved" or "kube-reserved" enforced, the existing
//     cgroup named by --system-reserved-cgroup or --kube-reserved-cgroup
//     is given that reservation as its limits at start, and the kubelet
//     does not run when it cannot be (enforceReservedCgroups); the
//     "-compressible" forms give it the CPU shares only.
//
// The decisions are pure functions of the configuration; the I/O is
// enforceReservedCgroups's writes. (--reserved-cpus, which only matters
// to the static CPU manager kubeproof does not have, is not taken.)

// ResourcePID is upstream's internal "pid" resource (pidlimit.PIDs): the
// node's process capacity, which a reservation may take processes off
// (kubepods's pids.max) but which the Node's status does not report.
const ResourcePID v1.ResourceName = "pid"

// Upstream's --enforce-node-allocatable keys (kubetypes).
const (
	EnforcePods                       = "pods"
	EnforceSystemReserved             = "system-reserved"
	EnforceSystemReservedCompressible = "system-reserved-compressible"
	EnforceKubeReserved               = "kube-reserved"
	EnforceKubeReservedCompressible   = "kube-reserved-compressible"
	EnforceNone                       = "none"
)

// nodeAllocatableEnforcement is what Config.EnforceNodeAllocatable
// enforces (setDefaults).
type nodeAllocatableEnforcement struct {
	pods                       bool
	system, systemCompressible bool
	kube, kubeCompressible     bool
}

// ParseReserved parses a --system-reserved or --kube-reserved value,
// resource=quantity pairs separated by commas ("cpu=200m,memory=1Gi"), as
// upstream's kubelet reads the flag (a map of strings: SplitReserved) and
// then parseResourceList (ReservedList); "" is no reservation (nil).
func ParseReserved(s string) (v1.ResourceList, error) {
	m := map[string]string{}
	if err := SplitReserved(m, s); err != nil {
		return nil, err
	}
	return ReservedList(m)
}

// SplitReserved adds the resource=quantity pairs of s, separated by
// commas, to m, as upstream's --system-reserved and --kube-reserved flag
// type (component-base's MapStringString) takes each use of the flag:
// empty pairs skipped, names and quantities trimmed of spaces, a later
// pair of a name replacing an earlier one; a pair without "=" (a blank
// one too) is its error.
func SplitReserved(m map[string]string, s string) error {
	for _, pair := range strings.Split(s, ",") {
		if pair == "" {
			continue
		}
		k, v, ok := strings.Cut(pair, "=")
		if !ok {
			return errors.New("malformed pair, expect string=string")
		}
		m[strings.TrimSpace(k)] = strings.TrimSpace(v)
	}
	return nil
}

// ReservedList is the reservation of the resource=quantity pairs m (a
// flag's, SplitReserved), as upstream's kubelet's parseResourceList:
// only cpu, memory, ephemeral-storage and pid may be reserved, each a
// quantity not below zero, with its messages; none is nil. The pairs are
// checked in the order of their names (upstream's in a map's).
func ReservedList(m map[string]string) (v1.ResourceList, error) {
	if len(m) == 0 {
		return nil, nil
	}
	rl := make(v1.ResourceList, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		if !reservable(v1.ResourceName(k)) {
			return nil, fmt.Errorf("cannot reserve %q resource", k)
		}
		q, err := resource.ParseQuantity(m[k])
		if err != nil {
			return nil, fmt.Errorf("failed to parse quantity %q for %q resource: %w", m[k], k, err)
		}
		if q.Sign() < 0 {
			return nil, fmt.Errorf("resource quantity for %q cannot be negative: %v", k, m[k])
		}
		rl[v1.ResourceName(k)] = q
	}
	return rl, nil
}

// reservable reports whether a reservation may name resource name, as
// upstream's parseResourceList.
func reservable(name v1.ResourceName) bool {
	switch name {
	case v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, ResourcePID:
		return true
	}
	return false
}

// checkReserved refuses a reservation ParseReserved would not give:
// another resource, or a quantity below zero (upstream's messages).
func checkReserved(rl v1.ResourceList) error {
	for _, k := range sortedNames(rl) {
		if !reservable(k) {
			return fmt.Errorf("cannot reserve %q resource", k)
		}
		if q := rl[k]; q.Sign() < 0 {
			return fmt.Errorf("resource quantity for %q cannot be negative: %v", k, q.String())
		}
	}
	return nil
}

// checkEnforceNodeAllocatable is upstream's validation of
// enforceNodeAllocatable (--enforce-node-allocatable) with the cgroups it
// needs (--system-reserved-cgroup, --kube-reserved-cgroup; kubeproof's
// cgroups are always per QoS class), every error of it aggregated as
// upstream's, and what it enforces.
func checkEnforceNodeAllocatable(keys []string, systemCgroup, kubeCgroup string) (nodeAllocatableEnforcement, error) {
	var e nodeAllocatableEnforcement
	var errs []error
	has := func(k string) bool { return slices.Contains(keys, k) }
	if has(EnforceSystemReserved) && has(EnforceSystemReservedCompressible) {
		errs = append(errs, fmt.Errorf("invalid configuration: both %q and %q cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)", EnforceSystemReserved, EnforceSystemReservedCompressible))
	}
	if has(EnforceKubeReserved) && has(EnforceKubeReservedCompressible) {
		errs = append(errs, fmt.Errorf("invalid configuration: both %q and %q cannot be specified together in enforceNodeAllocatable (--enforce-node-allocatable)", EnforceKubeReserved, EnforceKubeReservedCompressible))
	}
	for i, k := range keys {
		if slices.Contains(keys[:i], k) {
			errs = append(errs, fmt.Errorf("invalid configuration: duplicated enforcements %q in enforceNodeAllocatable (--enforce-node-allocatable)", k))
			continue
		}
		switch k {
		case EnforcePods:
			e.pods = true
		case EnforceSystemReserved, EnforceSystemReservedCompressible:
			if systemCgroup == "" {
				errs = append(errs, fmt.Errorf("invalid configuration: systemReservedCgroup (--system-reserved-cgroup) must be specified when %q or %q included in enforceNodeAllocatable (--enforce-node-allocatable)", EnforceSystemReserved, EnforceSystemReservedCompressible))
			}
			e.system = e.system || k == EnforceSystemReserved
			e.systemCompressible = e.systemCompressible || k == EnforceSystemReservedCompressible
		case EnforceKubeReserved, EnforceKubeReservedCompressible:
			if kubeCgroup == "" {
				errs = append(errs, fmt.Errorf("invalid configuration: kubeReservedCgroup (--kube-reserved-cgroup) must be specified when %q or %q included in enforceNodeAllocatable (--enforce-node-allocatable)", EnforceKubeReserved, EnforceKubeReservedCompressible))
			}
			e.kube = e.kube || k == EnforceKubeReserved
			e.kubeCompressible = e.kubeCompressible || k == EnforceKubeReservedCompressible
		case EnforceNone:
			if len(keys) > 1 {
				errs = append(errs, fmt.Errorf("invalid configuration: enforceNodeAllocatable (--enforce-node-allocatable) may not contain additional enforcements when %q is specified", EnforceNone))
			}
		default:
			errs = append(errs, fmt.Errorf("invalid configuration: option %q specified for enforceNodeAllocatable (--enforce-node-allocatable). Valid options are %q, %q, %q, %q, %q or %q",
				k, EnforcePods, EnforceSystemReserved, EnforceSystemReservedCompressible, EnforceKubeReserved, EnforceKubeReservedCompressible, EnforceNone))
		}
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		return nodeAllocatableEnforcement{}, err
	}
	return e, nil
}

// allocatableReservation is what a node of capacity keeps back from its
// allocatable, as upstream's GetNodeAllocatableReservation: for each
// resource of the capacity the system and kube reservations and the hard
// eviction thresholds' (eviction.Config.HardEvictionReservation) summed,
// those that come to zero left out.
func allocatableReservation(capacity, system, kube, eviction v1.ResourceList) v1.ResourceList {
	out := v1.ResourceList{}
	for name := range capacity {
		v := resource.NewQuantity(0, resource.DecimalSI)
		v.Add(system[name])
		v.Add(kube[name])
		v.Add(eviction[name])
		if !v.IsZero() {
			out[name] = *v
		}
	}
	return out
}

// validateNodeAllocatable refuses a reservation (allocatableReservation)
// above the capacity of its resource, as upstream's container manager
// does at start, with its message (its quantities printed as Go prints
// the values, as upstream's; the resources in name order, upstream's in
// a map's).
func validateNodeAllocatable(capacity, reservation v1.ResourceList) error {
	var msgs []string
	for _, name := range sortedNames(reservation) {
		r := reservation[name]
		c := capacity[name]
		v := c.DeepCopy()
		v.Sub(r)
		if v.Sign() < 0 {
			msgs = append(msgs, fmt.Sprintf("Resource %q has a reservation of %v but capacity of %v. Expected capacity >= reservation.", name, quantityValue(r), quantityValue(c)))
		}
	}
	if len(msgs) > 0 {
		return fmt.Errorf("invalid Node Allocatable configuration. %s", strings.Join(msgs, " "))
	}
	return nil
}

// quantityValue is q as fmt's %v prints a resource.Quantity that is not
// addressable (its String method has a pointer receiver): its fields, as
// upstream's message shows them.
type quantityValue resource.Quantity

// sortedNames are rl's resource names in order.
func sortedNames(rl v1.ResourceList) []v1.ResourceName {
	names := make([]v1.ResourceName, 0, len(rl))
	for name := range rl {
		names = append(names, name)
	}
	slices.Sort(names)
	return names
}

// nodeAllocatable is the Node's status.allocatable of capacity less
// reservation (allocatableReservation), as upstream's MachineInfo
// setter: each resource less its reservation, never below zero, then
// memory less each huge page size's capacity (pre-allocated huge pages
// are not memory pods can use as such), never below zero.
func nodeAllocatable(capacity, reservation v1.ResourceList) v1.ResourceList {
	out := make(v1.ResourceList, len(capacity))
	for name, q := range capacity {
		v := q.DeepCopy()
		if r, ok := reservation[name]; ok {
			v.Sub(r)
		}
		if v.Sign() < 0 {
			v.Set(0)
		}
		out[name] = v
	}
	for name, q := range capacity {
		if !strings.HasPrefix(string(name), v1.ResourceHugePagesPrefix) {
			continue
		}
		mem := out[v1.ResourceMemory]
		mem.Sub(q)
		if mem.Sign() < 0 {
			mem.Set(0)
		}
		out[v1.ResourceMemory] = mem
	}
	return out
}

// allocatableAbsolute is capacity less the system and kube reservations,
// per resource and never below zero, as upstream's
// getNodeAllocatableAbsoluteImpl: what kubepods gets with "pods"
// enforced (no eviction threshold taken off).
func allocatableAbsolute(capacity, system, kube v1.ResourceList) v1.ResourceList {
	out := make(v1.ResourceList, len(capacity))
	for name, q := range capacity {
		v := q.DeepCopy()
		v.Sub(system[name])
		v.Sub(kube[name])
		if v.Sign() < 0 {
			v.Set(0)
		}
		out[name] = v
	}
	return out
}

// reservedCgroupConfig is the limits a reservation gives the cgroup it
// is enforced on, on a node of the huge page sizes node, as upstream's
// getCgroupConfig: its CPU as shares, and unless only the compressible
// resources are, its memory as the memory limit, its processes as
// pids.max and hugetlb limits of 0 of every node page size (upstream's
// HugePageLimits of the reservation, empty as huge pages are not
// reservable, which its cgroup manager writes as 0 of every size:
// hugetlb.go). Only the compressible ones leave hugetlb alone (no
// HugePageLimit, which upstream 1.37 also takes for 0 of every size, as
// in a resize: kubernetes/kubernetes#141991). No reservation (nil or
// empty, as upstream's parsed flag is nil) gives none: false.
func reservedCgroupConfig(rl v1.ResourceList, compressibleOnly bool, node []HugePages) (cgroupConfig, bool) {
	if len(rl) == 0 {
		return cgroupConfig{}, false
	}
	var c cgroupConfig
	if q, ok := rl[v1.ResourceCPU]; ok {
		c.cpuShares = milliCPUToShares(q.MilliValue())
	}
	if compressibleOnly {
		return c, true
	}
	if q, ok := rl[v1.ResourceMemory]; ok {
		c.memory = q.Value()
	}
	if q, ok := rl[ResourcePID]; ok {
		c.pids = q.Value()
	}
	c.hugetlb = eachHugetlb(node, 0)
	return c, true
}

// cgroupValidator is a podCgroups that says why a cgroup is not there as
// upstream's cgroup manager Validate does (cgroupfs.validate).
type cgroupValidator interface {
	validate(name string) error
}

// enforceReservedCgroups gives the system and kube reservations' cgroups
// their limits, as upstream's enforceNodeAllocatableCgroups once kubepods
// is seen to: for "system-reserved", "kube-reserved",
// "system-reserved-compressible" and "kube-reserved-compressible" in that
// order, the cgroup named must exist (upstream's Validate) and is written
// (reservedCgroupConfig), upstream's NodeAllocatableEnforced event once
// it is; the first that cannot be is its FailedNodeAllocatableEnforcement
// warning and the error (the kubelet does not run). Nothing on a node
// whose cgroups the kubelet does not manage.
func (k *Kubelet) enforceReservedCgroups() error {
	if k.cgroups == nil {
		return nil
	}
	e := k.cfg.enforce
	for _, r := range [...]struct {
		on, compressibleOnly bool
		cgroup               string
		rl                   v1.ResourceList
		failure, success     string
	}{
		{e.system, false, k.cfg.SystemReservedCgroup, k.cfg.SystemReserved, "Failed to enforce System Reserved Cgroup Limits on %q", "Updated limits on system reserved cgroup %v"},
		{e.kube, false, k.cfg.KubeReservedCgroup, k.cfg.KubeReserved, "Failed to enforce Kube Reserved Cgroup Limits on %q", "Updated limits on kube reserved cgroup %v"},
		{e.systemCompressible, true, k.cfg.SystemReservedCgroup, k.cfg.SystemReserved, "Failed to enforce System Reserved Compressible Cgroup Limits on %q", "Updated limits on system reserved cgroup %v"},
		{e.kubeCompressible, true, k.cfg.KubeReservedCgroup, k.cfg.KubeReserved, "Failed to enforce Kube Reserved Compressible Cgroup Limits on %q", "Updated limits on kube reserved cgroup %v"},
	} {
		if !r.on {
			continue
		}
		if err := k.enforceExistingCgroup(r.cgroup, r.rl, r.compressibleOnly); err != nil {
			err = fmt.Errorf("%s: %w", fmt.Sprintf(r.failure, r.cgroup), err)
			k.nodeEvent(v1.EventTypeWarning, EventFailedNodeAllocatableEnforcement, err.Error())
			return err
		}
		k.nodeEvent(v1.EventTypeNormal, EventNodeAllocatableEnforced, fmt.Sprintf(r.success, r.cgroup))
	}
	return nil
}

// enforceExistingCgroup writes reservation rl's limits
// (reservedCgroupConfig) to cgroup, a cgroupfs name ("/system.slice"),
// which must exist, as upstream's enforceExistingCgroup, with its errors
// (the cgroup's name as upstream's CgroupName, a list of its elements).
func (k *Kubelet) enforceExistingCgroup(cgroup string, rl v1.ResourceList, compressibleOnly bool) error {
	name := cgroupRoot(cgroup)
	elems := []string{}
	if name != "" {
		elems = strings.Split(name[1:], "/")
	}
	c, ok := reservedCgroupConfig(rl, compressibleOnly, k.cfg.HugePages)
	if !ok {
		return fmt.Errorf("%q cgroup is not configured properly", elems)
	}
	if v, ok := k.cgroups.(cgroupValidator); ok {
		if err := v.validate(name); err != nil {
			return err
		}
	} else if !k.cgroups.exists(name) {
		return fmt.Errorf("%q cgroup does not exist", elems)
	}
	return k.cgroups.set(name, c)
}
