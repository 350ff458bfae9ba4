package registry

import (
	corev1 "k8s.io/api/core/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
)

// podValidationOptions relaxes pod spec checks for values an update's old
// object already had, as upstream's PodValidationOptions derived from the
// old pod or template (GetValidationOptionsFromPodSpecAndMeta): an object
// stored before a check was tightened stays updatable, while no new object
// and no object that passed the check may gain such a value. The zero
// value relaxes nothing (creates). Only the options of checks made here
// exist.
type podValidationOptions struct {
	// allowIndivisibleHugePagesValues: hugepages-<size> quantities need
	// not be whole pages (containers, overhead, pod-level resources).
	allowIndivisibleHugePagesValues bool
	// allowInvalidLabelValueInSelector: the label and namespace selectors
	// of pod (anti-)affinity terms may have invalid expression values.
	allowInvalidLabelValueInSelector bool
	// allowInvalidTopologySpreadConstraintLabelSelector: topology spread
	// constraints' label selectors are not checked.
	allowInvalidTopologySpreadConstraintLabelSelector bool
	// allowNonLocalProjectedTokenPath: projected service account token
	// paths need not stay inside the volume.
	allowNonLocalProjectedTokenPath bool
	// allowInvalidLabelValueInRequiredNodeAffinity: required node affinity
	// terms' expression values need not be label values.
	allowInvalidLabelValueInRequiredNodeAffinity bool
	// oldPodViolatesMatchLabelKeysValidation: topology spread constraints'
	// matchLabelKeys are not checked.
	oldPodViolatesMatchLabelKeysValidation bool
	// allowNamespacedSysctlsForHostNetAndHostIPC: network and IPC
	// sysctls may be set beside hostNetwork and hostIPC.
	allowNamespacedSysctlsForHostNetAndHostIPC bool
	// allowAnySELinuxChangePolicy: securityContext.seLinuxChangePolicy may
	// be MountOption, not only Recursive (upstream: SELinuxMount, off by
	// default, or the stored object had a policy).
	allowAnySELinuxChangePolicy bool
	// allowUserNamespacesHostNetwork: a pod with hostUsers false may be
	// in the host's network (upstream: UserNamespacesHostNetworkSupport,
	// alpha and off, or the stored object was).
	allowUserNamespacesHostNetwork bool
	// allowUserNamespacesWithVolumeDevices: a pod with hostUsers false may
	// have volumeDevices (which do not work there).
	allowUserNamespacesWithVolumeDevices bool
	// allowRestartContainerResizeForNonSidecarInit: an init container that
	// is no sidecar may have a RestartContainer resize policy (upstream's
	// AllowExistingRestartContainerForNonSidecarInitContainer; taken here
	// from the stored object having one).
	allowRestartContainerResizeForNonSidecarInit bool
}

// podValidationOptionsFor gives the options of an update whose stored
// object has the pod spec old: each check old fails is relaxed.
func podValidationOptionsFor(old *corev1.PodSpec) podValidationOptions {
	if old == nil {
		return podValidationOptions{}
	}
	return podValidationOptions{
		allowIndivisibleHugePagesValues:                   usesIndivisibleHugePagesValues(old),
		allowInvalidLabelValueInSelector:                  hasInvalidLabelValueInAffinitySelector(old),
		allowInvalidTopologySpreadConstraintLabelSelector: hasInvalidTopologySpreadConstraintLabelSelector(old),
		allowNonLocalProjectedTokenPath:                   hasNonLocalProjectedTokenPath(old),
		allowInvalidLabelValueInRequiredNodeAffinity:      hasInvalidLabelValueInRequiredNodeAffinity(old),
		oldPodViolatesMatchLabelKeysValidation:            hasInvalidTopologySpreadConstraintMatchLabelKeys(old),
		allowNamespacedSysctlsForHostNetAndHostIPC:        hasHostNamespacedSysctl(old),
		allowAnySELinuxChangePolicy:                       old.SecurityContext != nil && old.SecurityContext.SELinuxChangePolicy != nil,
		allowUserNamespacesHostNetwork:                    inUserNamespace(old) && old.HostNetwork,
		allowUserNamespacesWithVolumeDevices:              inUserNamespace(old) && hasVolumeDevices(old),
		allowRestartContainerResizeForNonSidecarInit:      hasRestartContainerResizeForNonSidecarInit(old),
	}
}

// hasRestartContainerResizeForNonSidecarInit: an init container that is no
// sidecar has a RestartContainer resize policy.
func hasRestartContainerResizeForNonSidecarInit(s *corev1.PodSpec) bool {
	for i := range s.InitContainers {
		if isSidecar(&s.InitContainers[i]) {
			continue
		}
		for _, rp := range s.InitContainers[i].ResizePolicy {
			if rp.RestartPolicy == corev1.RestartContainer {
				return true
			}
		}
	}
	return false
}

// inUserNamespace: hostUsers is false.
func inUserNamespace(s *corev1.PodSpec) bool {
	return s.HostUsers != nil && !*s.HostUsers
}

// hasVolumeDevices: a container of any kind has volumeDevices.
func hasVolumeDevices(s *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			if len(cs[i].VolumeDevices) > 0 {
				return true
			}
		}
	}
	for i := range s.EphemeralContainers {
		if len(s.EphemeralContainers[i].VolumeDevices) > 0 {
			return true
		}
	}
	return false
}

// hasHostNamespacedSysctl: a network or IPC sysctl beside hostNetwork or
// hostIPC (validateHostSysctl fails).
func hasHostNamespacedSysctl(s *corev1.PodSpec) bool {
	if s.SecurityContext == nil {
		return false
	}
	for _, sc := range s.SecurityContext.Sysctls {
		if validateHostSysctl(sc.Name, s, nil) != nil {
			return true
		}
	}
	return false
}

// usesIndivisibleHugePagesValues: a container (init, app or ephemeral) or
// the overhead has a hugepages quantity that is not a whole number of
// pages (upstream looks at these, not at pod-level resources).
func usesIndivisibleHugePagesValues(s *corev1.PodSpec) bool {
	indivisible := func(l corev1.ResourceList) bool {
		for name, q := range l {
			if isHugePageResource(name) && !hugePageValueDivisible(name, q) {
				return true
			}
		}
		return false
	}
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			if indivisible(cs[i].Resources.Limits) || indivisible(cs[i].Resources.Requests) {
				return true
			}
		}
	}
	for i := range s.EphemeralContainers {
		r := &s.EphemeralContainers[i].Resources
		if indivisible(r.Limits) || indivisible(r.Requests) {
			return true
		}
	}
	return indivisible(s.Overhead)
}

// hasInvalidLabelValueInAffinitySelector: a pod (anti-)affinity term's
// selectors fail the strict check.
func hasInvalidLabelValueInAffinitySelector(s *corev1.PodSpec) bool {
	a := s.Affinity
	if a == nil {
		return false
	}
	var terms []corev1.PodAffinityTerm
	terms = append(terms, podAffinityRequired(a.PodAffinity)...)
	terms = append(terms, podAntiAffinityRequired(a.PodAntiAffinity)...)
	for _, w := range podAffinityPreferred(a.PodAffinity) {
		terms = append(terms, w.PodAffinityTerm)
	}
	for _, w := range podAntiAffinityPreferred(a.PodAntiAffinity) {
		terms = append(terms, w.PodAffinityTerm)
	}
	for _, t := range terms {
		if len(validatePodAffinityTermSelectors(t, nil, false)) > 0 {
			return true
		}
	}
	return false
}

// hasInvalidLabelValueInRequiredNodeAffinity: a required node affinity
// term's expression has a value that is not a label value.
func hasInvalidLabelValueInRequiredNodeAffinity(s *corev1.PodSpec) bool {
	if s.Affinity == nil || s.Affinity.NodeAffinity == nil || s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return false
	}
	for _, term := range s.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, req := range term.MatchExpressions {
			if len(validateLabelValues(req.Values, nil)) > 0 {
				return true
			}
		}
	}
	return false
}

// hasInvalidTopologySpreadConstraintLabelSelector: a topology spread
// constraint's label selector fails the check.
func hasInvalidTopologySpreadConstraintLabelSelector(s *corev1.PodSpec) bool {
	for _, c := range s.TopologySpreadConstraints {
		if len(metav1validation.ValidateLabelSelector(c.LabelSelector, metav1validation.LabelSelectorValidationOptions{}, nil)) > 0 {
			return true
		}
	}
	return false
}

// hasInvalidTopologySpreadConstraintMatchLabelKeys: a topology spread
// constraint's matchLabelKeys fail the check (upstream's
// hasInvalidTopologySpreadConstrainMatchLabelKeys).
func hasInvalidTopologySpreadConstraintMatchLabelKeys(s *corev1.PodSpec) bool {
	for _, c := range s.TopologySpreadConstraints {
		if len(validateMatchLabelKeysAndMismatchLabelKeys(nil, c.MatchLabelKeys, nil, c.LabelSelector)) > 0 {
			return true
		}
	}
	return false
}

// hasNonLocalProjectedTokenPath: a projected service account token's path
// fails the local non-reserved path check (upstream's, as the create check
// in validateProjectedSources).
func hasNonLocalProjectedTokenPath(s *corev1.PodSpec) bool {
	for _, v := range s.Volumes {
		if v.Projected == nil {
			continue
		}
		for _, src := range v.Projected.Sources {
			if t := src.ServiceAccountToken; t != nil && len(validateLocalNonReservedPath(t.Path, nil)) > 0 {
				return true
			}
		}
	}
	return false
}

// dropDisabledStopSignals removes lifecycle.stopSignal from every
// container (and a lifecycle left empty), as upstream's
// dropContainerStopSignals while ContainerStopSignals is off (alpha since
// 1.33, off in the newest upstream gate list we have), unless old (the
// stored pod's spec on update, nil on create) already uses one.
func dropDisabledStopSignals(s, old *corev1.PodSpec) {
	if old != nil && usesStopSignal(old) {
		return
	}
	wipe := func(l **corev1.Lifecycle) {
		if *l == nil || (*l).StopSignal == nil {
			return
		}
		(*l).StopSignal = nil
		if **l == (corev1.Lifecycle{}) {
			*l = nil
		}
	}
	for i := range s.InitContainers {
		wipe(&s.InitContainers[i].Lifecycle)
	}
	for i := range s.Containers {
		wipe(&s.Containers[i].Lifecycle)
	}
	for i := range s.EphemeralContainers {
		wipe(&s.EphemeralContainers[i].Lifecycle)
	}
}

// usesStopSignal: a container of any kind sets lifecycle.stopSignal.
func usesStopSignal(s *corev1.PodSpec) bool {
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			if cs[i].Lifecycle != nil && cs[i].Lifecycle.StopSignal != nil {
				return true
			}
		}
	}
	for i := range s.EphemeralContainers {
		if l := s.EphemeralContainers[i].Lifecycle; l != nil && l.StopSignal != nil {
			return true
		}
	}
	return false
}
