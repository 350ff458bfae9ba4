package registry

import (
	"fmt"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kubectlqos "k8s.io/kubectl/pkg/util/qos"
	netutils "k8s.io/utils/net"

	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

func pods(now func() time.Time) *resource.Resource {
	k := kind[*corev1.Pod]{
		namespaced:       true,
		defaults:         defaultPod,
		spec:             func(p *corev1.Pod) any { return p.Spec },
		prepareForCreate: preparePodForCreate,
		prepareForUpdate: func(p, old *corev1.Pod) {
			p.Status = old.Status
			preparePodLevelResourcesForUpdate(p, old)
			dropDisabledStopSignals(&p.Spec, &old.Spec)
		},
		// The spec is validated in validateCreate and validateUpdate: an
		// update's checks are relaxed by what the stored pod already had.
		validateCreate: func(p *corev1.Pod) field.ErrorList {
			errs := append(validatePod(p, podValidationOptions{}), validatePodAnnotations(p, false)...)
			errs = append(errs, validatePodCreateAsUpstream(p)...)
			return append(errs, validatePodCreate(p)...)
		},
		validateUpdate: func(p, old *corev1.Pod) field.ErrorList {
			errs := append(validatePod(p, podValidationOptionsFor(&old.Spec)), validatePodAnnotations(p, !validDeletionCost(old.Annotations))...)
			errs = append(errs, validatePodAnnotationUpdates(p, old)...)
			return append(errs, validatePodUpdate(p, old)...)
		},
		warnings: podCreateWarnings,
		fields:   podFields,
		table:    &tableSpec[*corev1.Pod]{columns: podColumns, cells: podCells, conditions: podRowConditions},
	}
	s := newStrategy(k, now)
	return &resource.Resource{
		GroupVersion: corev1.SchemeGroupVersion,
		Name:         "pods", SingularName: "pod", Kind: "Pod",
		Namespaced: true, ShortNames: []string{"po"}, Categories: []string{"all"}, Verbs: allVerbs,
		New:      func() runtime.Object { return &corev1.Pod{} },
		NewList:  func() runtime.Object { return &corev1.PodList{} },
		Strategy: s,

		// kube-apiserver's store answers a delete with the deleted object.
		ReturnDeletedObject: true,

		Status: statusStrategy[*corev1.Pod]{s: s, k: statusKind[*corev1.Pod]{
			keep:     keepPodForStatusUpdate,
			validate: validatePodStatusUpdate,
			warnings: podStatusIPWarnings,
		}},
		EphemeralContainers: statusStrategy[*corev1.Pod]{s: s, k: statusKind[*corev1.Pod]{
			keep:     keepPodForEphemeralContainersUpdate,
			validate: validatePodEphemeralContainersUpdate,
		}},
		Resize: statusStrategy[*corev1.Pod]{s: s, k: statusKind[*corev1.Pod]{
			keep:     keepPodForResizeUpdate,
			validate: validatePodResize,
		}},
		GracefulDelete: podGracefulDeleter{},
	}
}

// preparePodForCreate: a stopSignal is dropped (dropDisabledStopSignals);
// a new pod's pod-level resources are defaulted
// (after mutating admission, as 1.37's PodLevelResourcesFixDefaulting, so
// the containers' resources admission set count), and it is Pending with
// its QoS class computed (and PodScheduled=False when scheduling gates hold
// it); nothing else of the status comes from the client. The pod's labels
// named by matchLabelKeys/mismatchLabelKeys are merged into its topology
// spread and pod affinity selectors (mergeLabelKeysIntoSelectors).
func preparePodForCreate(p *corev1.Pod) {
	dropDisabledStopSignals(&p.Spec, nil)
	defaultPodLevelResources(p)
	mergeLabelKeysIntoSelectors(p)
	p.Status = corev1.PodStatus{Phase: corev1.PodPending, QOSClass: podQOSClass(p)}
	if len(p.Spec.SchedulingGates) > 0 {
		p.Status.Conditions = []corev1.PodCondition{{
			Type:    corev1.PodScheduled,
			Status:  corev1.ConditionFalse,
			Reason:  corev1.PodReasonSchedulingGated,
			Message: "Scheduling is blocked due to non-empty scheduling gates",
		}}
	}
}

// preparePodLevelResourcesForUpdate: an update body's pod-level resources
// keep what the stored pod has (PR 140514: existing pod-level fields are
// preserved on update): a request or limit the body leaves out is the
// stored one, so a body without the defaulted values is no change, and no
// value is derived anew for a pod stored under earlier defaulting (which
// would change the immutable spec.resources and refuse even a label
// update). Pod-level resources the stored pod lacks are defaulted as on
// create (validation then refuses adding them).
func preparePodLevelResourcesForUpdate(p, old *corev1.Pod) {
	r, o := p.Spec.Resources, old.Spec.Resources
	if r == nil {
		return
	}
	if o == nil || (len(o.Requests) == 0 && len(o.Limits) == 0) {
		defaultPodLevelResources(p)
		return
	}
	r.Requests = withStored(r.Requests, o.Requests)
	r.Limits = withStored(r.Limits, o.Limits)
}

// withStored is l with every entry of stored that l lacks.
func withStored(l, stored corev1.ResourceList) corev1.ResourceList {
	for n, q := range stored {
		if _, ok := l[n]; ok {
			continue
		}
		if l == nil {
			l = corev1.ResourceList{}
		}
		l[n] = q.DeepCopy()
	}
	return l
}

// keepPodForStatusUpdate: /status writes change the status only; owner
// references stay (old kubelets corrupted them), the QoS class, set at
// creation, is backfilled when a client dropped it, and so are observed
// generations (keepObservedGenerations).
func keepPodForStatusUpdate(p, old *corev1.Pod) {
	p.Spec = old.Spec
	p.OwnerReferences = old.OwnerReferences
	if p.Status.QOSClass == "" {
		p.Status.QOSClass = old.Status.QOSClass
	}
	keepObservedGenerations(&p.Status, &old.Status)
	defaultPodStatus(&p.Status)
}

// keepObservedGenerations: an observedGeneration a status write leaves at
// 0 is the stored one, as upstream's preserveOldObservedGeneration: the
// status's own, and each condition's from the stored conditions of its
// type, taken in order (the n-th condition of a type gets the n-th stored
// one's, since conditions of a type may repeat).
func keepObservedGenerations(s, old *corev1.PodStatus) {
	if s.ObservedGeneration == 0 {
		s.ObservedGeneration = old.ObservedGeneration
	}
	stored := map[corev1.PodConditionType][]int64{}
	for _, c := range old.Conditions {
		stored[c.Type] = append(stored[c.Type], c.ObservedGeneration)
	}
	for i := range s.Conditions {
		c := &s.Conditions[i]
		var g int64
		if gs := stored[c.Type]; len(gs) > 0 {
			g, stored[c.Type] = gs[0], gs[1:]
		}
		if c.ObservedGeneration == 0 {
			c.ObservedGeneration = g
		}
	}
}

// podFields are the selectable fields of pods.
func podFields(p *corev1.Pod) fields.Set {
	podIP := ""
	if len(p.Status.PodIPs) > 0 {
		podIP = p.Status.PodIPs[0].IP
	} else {
		podIP = p.Status.PodIP
	}
	return fields.Set{
		"spec.nodeName":            p.Spec.NodeName,
		"spec.restartPolicy":       string(p.Spec.RestartPolicy),
		"spec.schedulerName":       p.Spec.SchedulerName,
		"spec.serviceAccountName":  p.Spec.ServiceAccountName,
		"spec.hostNetwork":         strconv.FormatBool(p.Spec.HostNetwork),
		"status.phase":             string(p.Status.Phase),
		"status.podIP":             podIP,
		"status.nominatedNodeName": p.Status.NominatedNodeName,
	}
}

// podQOSClass computes the pod's quality of service class with
// upstream's own ComputePodQOS as k8s.io/kubectl v0.37.2 ships it (the
// copy kube-apiserver's is kept in step with; PodLevelResources and its
// QoS fix on): when pod-level resources name a pod-level resource (cpu,
// memory, hugepages-*; an empty spec.resources does not count), they alone
// decide; otherwise each init and app container is classed on its own and
// the pod is BestEffort or Guaranteed only when every container is,
// Burstable as soon as one container is Burstable or two differ.
func podQOSClass(p *corev1.Pod) corev1.PodQOSClass {
	return kubectlqos.ComputePodQOS(p)
}

func isQOSResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory
}

// podGracefulDeleter decides the grace period of pod deletions.
type podGracefulDeleter struct{}

// GracePeriod: the requested gracePeriodSeconds, else the pod's
// terminationGracePeriodSeconds; 0 for pods never scheduled or already
// terminal; a negative period becomes 1. For a pod already being deleted
// only a shorter period replaces the pending one; a pod whose pending
// period is unset or 0 is deleted at once (0).
func (podGracefulDeleter) GracePeriod(obj runtime.Object, options *metav1.DeleteOptions) int64 {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return 0
	}
	var period int64
	switch {
	case options != nil && options.GracePeriodSeconds != nil:
		period = *options.GracePeriodSeconds
	case p.Spec.TerminationGracePeriodSeconds != nil:
		period = *p.Spec.TerminationGracePeriodSeconds
	}
	if p.Spec.NodeName == "" || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		period = 0
	}
	if period < 0 {
		period = 1
	}
	if p.DeletionTimestamp != nil {
		pending := p.DeletionGracePeriodSeconds
		if pending == nil || *pending == 0 {
			return 0
		}
		if options == nil || options.GracePeriodSeconds == nil || period >= *pending {
			return *pending
		}
	}
	return period
}

// validatePodStatusUpdate checks a status written through /status as
// upstream's ValidatePodStatusUpdate: neither status.phase nor a
// condition's status is checked against the known values (upstream takes
// any string for both), and a nominatedNodeName is checked only when the
// write changes it (a stored invalid one may stay; a bound pod may not get
// a new one).
func validatePodStatusUpdate(p, old *corev1.Pod) field.ErrorList {
	var errs field.ErrorList
	status := field.NewPath("status")
	if n := p.Status.NominatedNodeName; n != "" && n != old.Status.NominatedNodeName {
		errs = append(errs, dnsSubdomain(n, status.Child("nominatedNodeName"))...)
		// ClearingNominatedNodeNameAfterBinding (beta, on since 1.35): a
		// bound pod may keep or clear its nomination, not get a new one.
		if old.Spec.NodeName != "" {
			errs = append(errs, field.Forbidden(status.Child("nominatedNodeName"), "may not be set on pods that are already bound to a node"))
		}
	}
	if g := p.Status.ObservedGeneration; g < 0 {
		errs = append(errs, field.Invalid(status.Child("observedGeneration"), g, "must be a non-negative integer"))
	}
	// Set at creation (QoS is computed once); a status write may only
	// leave it out (keepPodForStatusUpdate backfills it).
	errs = append(errs, apivalidation.ValidateImmutableField(p.Status.QOSClass, old.Status.QOSClass, status.Child("qosClass"))...)
	for i, c := range p.Status.Conditions {
		cp := status.Child("conditions").Index(i)
		if c.ObservedGeneration < 0 {
			errs = append(errs, field.Invalid(cp.Child("observedGeneration"), c.ObservedGeneration, "must be a non-negative integer"))
		}
		// Upstream's validatePodConditions names the type "Type".
		if !isKnownPodCondition(c.Type) {
			errs = append(errs, validateLabelKey(string(c.Type), cp.Child("Type"))...)
		}
	}
	errs = append(errs, validatePodIPs(p, old, status)...)
	errs = append(errs, validateNoRestartAfterTermination(p.Status.ContainerStatuses, old.Status.ContainerStatuses,
		status.Child("containerStatuses"), old.Spec.RestartPolicy, nil)...)
	sidecars := sets.New[string]()
	for i := range old.Spec.InitContainers {
		if isSidecar(&old.Spec.InitContainers[i]) {
			sidecars.Insert(old.Spec.InitContainers[i].Name)
		}
	}
	errs = append(errs, validateNoRestartAfterTermination(p.Status.InitContainerStatuses, old.Status.InitContainerStatuses,
		status.Child("initContainerStatuses"), old.Spec.RestartPolicy, sidecars)...)
	// An ephemeral container never restarts.
	errs = append(errs, validateNoRestartAfterTermination(p.Status.EphemeralContainerStatuses, old.Status.EphemeralContainerStatuses,
		status.Child("ephemeralContainerStatuses"), corev1.RestartPolicyNever, nil)...)
	return errs
}

func isKnownPodCondition(t corev1.PodConditionType) bool {
	switch t {
	case corev1.PodScheduled, corev1.PodReady, corev1.PodInitialized, corev1.ContainersReady,
		corev1.DisruptionTarget, corev1.PodReadyToStartContainers, corev1.PodResizePending, corev1.PodResizeInProgress:
		return true
	}
	return false
}

// validatePodIPs checks status.podIPs and status.hostIPs as upstream's
// validatePodIPs and validateHostIPs (since 1.33; 1.37's copy was not at
// hand, the newest one read is 1.34-era): each IP is a legacy IP field,
// checked with
// StrictIPCIDRValidation on (beta since 1.36; leading zeros and
// IPv4-mapped IPv6 refused, non-canonical IPv6 accepted and warned of by
// podStatusIPWarnings), except that an IP the stored pod already had in
// the same list may stay, wherever it moves; more than one IP must be a
// dual-stack pair, which also refuses a repeated IP; hostIPs[0] must be
// hostIP.
func validatePodIPs(p, old *corev1.Pod, status *field.Path) field.ErrorList {
	podIPs := make([]string, len(p.Status.PodIPs))
	for i, ip := range p.Status.PodIPs {
		podIPs[i] = ip.IP
	}
	oldPodIPs := make([]string, len(old.Status.PodIPs))
	for i, ip := range old.Status.PodIPs {
		oldPodIPs[i] = ip.IP
	}
	errs := validateStatusIPList(status.Child("podIPs"), p.Status.PodIPs, podIPs, oldPodIPs)
	if len(p.Status.HostIPs) == 0 {
		return errs
	}
	hostIPsPath := status.Child("hostIPs")
	if first := p.Status.HostIPs[0].IP; p.Status.HostIP != first {
		errs = append(errs, field.Invalid(hostIPsPath.Index(0).Child("ip"), first, "must be equal to `hostIP`"))
	}
	hostIPs := make([]string, len(p.Status.HostIPs))
	for i, ip := range p.Status.HostIPs {
		hostIPs[i] = ip.IP
	}
	oldHostIPs := make([]string, len(old.Status.HostIPs))
	for i, ip := range old.Status.HostIPs {
		oldHostIPs[i] = ip.IP
	}
	return append(errs, validateStatusIPList(hostIPsPath, p.Status.HostIPs, hostIPs, oldHostIPs)...)
}

// validateStatusIPList checks one list of status IPs (list is the field's
// value, as the family error shows it): each IP at path[i], then the
// dual-stack rule for more than one.
func validateStatusIPList(path *field.Path, list any, ips, oldIPs []string) field.ErrorList {
	var errs field.ErrorList
	for i, ip := range ips {
		errs = append(errs, validation.IsValidIPForLegacyField(path.Index(i), ip, true, oldIPs)...)
	}
	if len(ips) > 1 {
		dualStack, err := netutils.IsDualStackIPStrings(ips)
		if err != nil {
			errs = append(errs, field.InternalError(path, fmt.Errorf("failed to check for dual stack with error:%v", err)))
		}
		if !dualStack || len(ips) > 2 {
			errs = append(errs, field.Invalid(path, list, "may specify no more than one IP for each IP family"))
		}
	}
	return errs
}

// podStatusIPWarnings are the Warning headers of a valid /status write, as
// upstream's podStatusStrategy.WarningsOnUpdate: one for each pod or host
// IP in a non-standard form (kept from the stored pod, or non-canonical
// IPv6). An IP that does not parse at all (kept from the stored pod) has
// none, as upstream's GetWarningsForIP returns none for it.
func podStatusIPWarnings(p, _ *corev1.Pod) []string {
	var warnings []string
	for i, ip := range p.Status.PodIPs {
		warnings = append(warnings, ipWarnings(func() *field.Path { return field.NewPath("status", "podIPs").Index(i).Child("ip") }, ip.IP)...)
	}
	for i, ip := range p.Status.HostIPs {
		warnings = append(warnings, ipWarnings(func() *field.Path { return field.NewPath("status", "hostIPs").Index(i).Child("ip") }, ip.IP)...)
	}
	return warnings
}

// validateNoRestartAfterTermination: unless the pod restarts always, a
// terminated container stays terminated (with OnFailure, one that failed
// may restart; the restartable ones, sidecars, may always), as upstream's
// Validate(Init|Ephemeral)ContainerStateTransition.
func validateNoRestartAfterTermination(statuses, old []corev1.ContainerStatus, path *field.Path, policy corev1.RestartPolicy, restartable sets.Set[string]) field.ErrorList {
	var errs field.ErrorList
	if policy == corev1.RestartPolicyAlways {
		return nil
	}
	for i, o := range old {
		if o.State.Terminated == nil || (o.State.Terminated.ExitCode != 0 && policy == corev1.RestartPolicyOnFailure) || restartable.Has(o.Name) {
			continue
		}
		for _, s := range statuses {
			if s.Name == o.Name && s.State.Terminated == nil {
				errs = append(errs, field.Forbidden(path.Index(i).Child("state"), "may not be transitioned to non-terminated state"))
			}
		}
	}
	return errs
}
