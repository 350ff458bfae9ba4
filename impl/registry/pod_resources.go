package registry

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	resourcehelper "k8s.io/component-helpers/resource"
)

// validatePodLevelResources checks a pod spec's pod-level resources
// (spec.resources, PodLevelResources, on by default), as kube-apiserver's
// validatePodResources: not on Windows pods, no claims, only cpu, memory
// and hugepages-* with valid quantities and requests within limits, and
// consistent with the containers: the pod-level request of a resource
// covers the containers' aggregate request (sidecars and init containers
// counted as the scheduler counts them), a pod-level hugepages limit
// covers the containers' aggregate limit, and no app container's limit
// exceeds the pod-level one.
func validatePodLevelResources(s *corev1.PodSpec, path *field.Path, opts podValidationOptions) field.ErrorList {
	if s.Resources == nil {
		return nil
	}
	if s.OS != nil && s.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(path, "may not be set for a windows pod")}
	}
	var errs field.ErrorList
	if s.Resources.Claims != nil {
		errs = append(errs, field.Forbidden(path.Child("claims"), "claims may not be set for Resources at pod-level"))
	}
	errs = append(errs, validatePodResourceRequirements(s.Resources, path, opts)...)
	return append(errs, validatePodResourceConsistency(s, path)...)
}

// validatePodResourceRequirements is upstream's validateResourceRequirements
// with the pod-level resource names.
func validatePodResourceRequirements(r *corev1.ResourceRequirements, path *field.Path, opts podValidationOptions) field.ErrorList {
	return validateResourceRequirements(r, validatePodResourceName, path, opts)
}

// validatePodResourceName: a qualified, standard resource name that
// pod-level resources support (cpu, memory, hugepages-*).
func validatePodResourceName(name corev1.ResourceName, path *field.Path) field.ErrorList {
	if errs := validateResourceName(name, path); len(errs) > 0 {
		return errs
	}
	n := string(name)
	if !strings.Contains(n, "/") && !standardQuotaResources[name] &&
		!strings.HasPrefix(n, corev1.ResourceHugePagesPrefix) && !strings.HasPrefix(n, corev1.ResourceRequestsHugePagesPrefix) {
		return field.ErrorList{field.Invalid(path, name, "must be a standard resource type or fully qualified")}
	}
	if !resourcehelper.IsSupportedPodLevelResource(name) {
		return field.ErrorList{field.NotSupported(path, name, sets.List(resourcehelper.SupportedPodLevelResources()))}
	}
	return nil
}

// validatePodResourceConsistency: the pod-level values bound the
// containers' (upstream's validatePodResourceConsistency).
func validatePodResourceConsistency(s *corev1.PodSpec, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	pod := &corev1.Pod{Spec: *s}
	reqPath := path.Child("requests")
	aggregate := resourcehelper.AggregateContainerRequests(pod, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedResourceNames(aggregate) {
		podReq, ok := s.Resources.Requests[name]
		if !ok {
			continue
		}
		if ctrReqs := aggregate[name]; ctrReqs.Cmp(podReq) > 0 {
			errs = append(errs, field.Invalid(reqPath.Key(string(name)), podReq.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container requests of %s", ctrReqs.String())))
		}
	}
	limPath := path.Child("limits")
	aggregateLimits := resourcehelper.AggregateContainerLimits(pod, resourcehelper.PodResourcesOptions{})
	for _, name := range sortedResourceNames(aggregateLimits) {
		podLimit, ok := s.Resources.Limits[name]
		if !ok || !isHugePageResource(name) {
			continue
		}
		if ctrLimits := aggregateLimits[name]; ctrLimits.Cmp(podLimit) > 0 {
			errs = append(errs, field.Invalid(limPath.Key(string(name)), podLimit.String(),
				fmt.Sprintf("must be greater than or equal to aggregate container limits of %s", ctrLimits.String())))
		}
	}
	for i, c := range s.Containers {
		for _, name := range sortedResourceNames(c.Resources.Limits) {
			podLimit, ok := s.Resources.Limits[name]
			if !ok {
				continue
			}
			if ctrLimit := c.Resources.Limits[name]; ctrLimit.Cmp(podLimit) > 0 {
				// Upstream's path: the container under spec.resources.
				errs = append(errs, field.Invalid(path.Child("containers").Index(i).Key(string(name)).Child("limits"), ctrLimit.String(),
					fmt.Sprintf("must be less than or equal to pod limits of %s", podLimit.String())))
			}
		}
	}
	return errs
}

func isHugePageResource(name corev1.ResourceName) bool {
	return strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

// hugePageValueDivisible: q is a whole number of the pages name counts
// (hugepages-2Mi: multiples of 2Mi).
func hugePageValueDivisible(name corev1.ResourceName, q resource.Quantity) bool {
	size, err := resource.ParseQuantity(strings.TrimPrefix(string(name), corev1.ResourceHugePagesPrefix))
	if err != nil || size.Sign() <= 0 || size.MilliValue()%1000 != 0 {
		return false
	}
	return q.Value()%size.Value() == 0
}

func sortedResourceNames(l corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(l))
	for name := range l {
		names = append(names, name)
	}
	return sets.List(sets.New(names...))
}

// defaultPodLevelResources is what kube-apiserver 1.37 does to a pod's
// pod-level resources (PodLevelResources and PodLevelResourcesFixDefaulting
// on): when the pod is prepared for storage, after mutating admission and
// the containers' requests defaulted from their limits; pods only, not
// templates. The order is upstream's: hugepages limits, then requests (a
// defaulted hugepages limit gets its request), then the other limits (the
// larger of the now complete pod-level request and the containers' limits).
// (1.36 and earlier did it in SetDefaults_Pod, before admission, defaulted
// requests only beside pod-level limits and limits not at all.)
func defaultPodLevelResources(p *corev1.Pod) {
	r := p.Spec.Resources
	if r == nil || (len(r.Limits) == 0 && len(r.Requests) == 0) {
		return
	}
	// The containers' limits are not changed by what follows: aggregated
	// once for both limit defaults.
	containerLimits := resourcehelper.AggregateContainerLimits(p, resourcehelper.PodResourcesOptions{})
	defaultHugePagePodLimits(r, containerLimits)
	defaultPodRequests(p, r)
	defaultPodLimits(&p.Spec, r, containerLimits)
}

// defaultPodLimits: a pod-level resource without a pod-level limit that
// every container limits (app, init and sidecar containers alike;
// ephemeral ones have no resources) gets the containers' aggregate limit,
// counted as the scheduler counts requests (KEP-753), or its pod-level
// request where that is larger, so the request stays within the limit
// (KEP-2837 rows 10 and 12, issue 136120; 1.37's
// PodLevelResourcesFixDefaulting).
func defaultPodLimits(s *corev1.PodSpec, r *corev1.ResourceRequirements, containerLimits corev1.ResourceList) {
	for name, q := range containerLimits {
		if _, ok := r.Limits[name]; ok || !resourcehelper.IsSupportedPodLevelResource(name) || !allContainersLimit(s, name) {
			continue
		}
		limit := q.DeepCopy()
		if req, ok := r.Requests[name]; ok && req.Cmp(limit) > 0 {
			limit = req.DeepCopy()
		}
		setResource(&r.Limits, name, limit)
	}
}

// allContainersLimit: every init and app container of s sets a limit for
// name.
func allContainersLimit(s *corev1.PodSpec, name corev1.ResourceName) bool {
	for _, cs := range [][]corev1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			if _, ok := cs[i].Resources.Limits[name]; !ok {
				return false
			}
		}
	}
	return true
}

// defaultHugePagePodLimits: a hugepages size the containers limit and the
// pod level neither limits nor requests gets the containers' aggregate
// limit as its pod-level limit.
func defaultHugePagePodLimits(r *corev1.ResourceRequirements, containerLimits corev1.ResourceList) {
	for name, q := range containerLimits {
		if !isHugePageResource(name) {
			continue
		}
		if _, ok := r.Requests[name]; ok {
			continue
		}
		if _, ok := r.Limits[name]; !ok {
			setResource(&r.Limits, name, q.DeepCopy())
		}
	}
}

// defaultPodRequests: a missing pod-level cpu or memory request becomes
// the containers' aggregate request, and any pod-level resource still
// without a request gets its pod-level limit.
func defaultPodRequests(p *corev1.Pod, r *corev1.ResourceRequirements) {
	for name, q := range resourcehelper.AggregateContainerRequests(p, resourcehelper.PodResourcesOptions{}) {
		// Only overcommittable resources: cpu and memory, not hugepages.
		if _, ok := r.Requests[name]; !ok && isQOSResource(name) {
			setResource(&r.Requests, name, q.DeepCopy())
		}
	}
	for name, q := range r.Limits {
		if _, ok := r.Requests[name]; !ok && resourcehelper.IsSupportedPodLevelResource(name) {
			setResource(&r.Requests, name, q.DeepCopy())
		}
	}
}

// setResource sets (*l)[name] to q, making the list when it has none.
func setResource(l *corev1.ResourceList, name corev1.ResourceName, q resource.Quantity) {
	if *l == nil {
		*l = corev1.ResourceList{}
	}
	(*l)[name] = q
}
