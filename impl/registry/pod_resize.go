package registry

import (
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// In-place resize (pods/resize, InPlacePodVerticalScaling, GA since
// Kubernetes 1.35): a running pod's containers' cpu and memory requests
// and limits change through their own subresource only (the main endpoint
// keeps the whole spec but a few fields, validatePodUpdate). The kubelet
// of the pod's node actuates the change and reports it in the status
// (containerStatuses[].allocatedResources and .resources, the
// PodResizePending and PodResizeInProgress conditions).

// keepPodForResizeUpdate: a write through pods/resize takes the app and
// init containers' resources and resizePolicy only, as upstream
// podResizeStrategy (dropNonResizeUpdates); the rest of the spec, the
// status and the metadata a status write may not change stay as stored.
// Containers added, removed, reordered or renamed are left as sent, so
// that validation refuses them. The pod-level resources (spec.resources)
// are taken too (InPlacePodLevelResourcesVerticalScaling, beta and on
// since 1.36: their cpu and memory are resized as the containers'). A
// change bumps metadata.generation, as any pod spec change does.
func keepPodForResizeUpdate(p, old *corev1.Pod) {
	if containers, ok := resizedContainers(p.Spec.Containers, old.Spec.Containers); ok {
		if inits, ok := resizedContainers(p.Spec.InitContainers, old.Spec.InitContainers); ok {
			podResources := p.Spec.Resources
			p.Spec = *old.Spec.DeepCopy()
			p.Spec.Resources = podResources
			p.Spec.Containers = containers
			p.Spec.InitContainers = inits
		}
	}
	p.Status = old.Status
	metav1.ResetObjectMetaForStatus(p, old)
	if !apiequality.Semantic.DeepEqual(p.Spec, old.Spec) {
		p.Generation = old.Generation + 1
	}
}

// resizedContainers is a copy of old with the resources and resize
// policies of cs, when cs are old's containers in the same order; ok is
// false otherwise.
func resizedContainers(cs, old []corev1.Container) ([]corev1.Container, bool) {
	if len(cs) != len(old) {
		return nil, false
	}
	if len(cs) == 0 {
		return cs, true
	}
	out := make([]corev1.Container, len(old))
	for i := range old {
		if cs[i].Name != old[i].Name {
			return nil, false
		}
		old[i].DeepCopyInto(&out[i])
		out[i].Resources = cs[i].Resources
		out[i].ResizePolicy = cs[i].ResizePolicy
	}
	return out, true
}

// Messages of pods/resize validation, as upstream ValidatePodResize.
const (
	resizeOnlyCPUMemory         = "only cpu and memory resources are mutable"
	resizeOnlyCPUMemoryPodLevel = "only cpu and memory resources are mutable at pod-level"
	resizeOnlySidecarCPUMem     = "only cpu and memory resources for sidecar containers are mutable"
	resizeNonSidecarInit        = "resources for non-sidecar init containers are immutable"
	resizeQOSMayNotChange       = "Pod QOS Class may not change as a result of resizing"
	resizeNodeWithoutSupport    = "Pod running on node without support for resize"
)

// validatePodResize checks a pods/resize write as upstream's
// ValidatePodResize (the newest copy the search index holds predates
// 1.36's pod-level resize; 1.34's memory limit decreases, 1.35's
// refusal of added non-cpu/memory resources and the pod-level resize of
// PR 132919 are applied from their pull requests): the pod (with its new
// resources) is valid, relaxed as for any update by what the stored pod
// already had — so pod-level values still bound the containers'; static
// pods' mirrors and Windows pods are refused outright; the QoS class may
// not change; requests and limits may not be removed, neither the
// containers' nor the pod-level ones (validatePodLevelResize); and
// nothing but the cpu and memory requests and limits of the app
// containers, the sidecars (restartable init containers) and the pod
// level changes. Memory limits may be decreased and added (upstream
// allows it since 1.34; the kubelet checks the usage before it applies a
// decrease).
func validatePodResize(p, old *corev1.Pod) field.ErrorList {
	errs := validatePod(p, podValidationOptionsFor(&old.Spec))
	if _, ok := old.Annotations[corev1.MirrorPodAnnotationKey]; ok {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "static pods cannot be resized")}
	}
	if old.Spec.OS != nil && old.Spec.OS.Name == corev1.Windows {
		return field.ErrorList{field.Forbidden(field.NewPath(""), "windows pods cannot be resized")}
	}
	spec := field.NewPath("spec")
	oldQOS := old.Status.QOSClass
	if oldQOS == "" {
		oldQOS = podQOSClass(old)
	}
	if oldQOS != podQOSClass(p) {
		errs = append(errs, field.Invalid(spec, p.Status.QOSClass, resizeQOSMayNotChange))
	}
	if !resizeSupportedByNode(old) {
		errs = append(errs, field.Forbidden(spec, resizeNodeWithoutSupport))
	}
	podLevel := hasPodLevelResources(&old.Spec) || hasPodLevelResources(&p.Spec)
	if podLevel {
		errs = append(errs, validatePodLevelResize(p.Spec.Resources, old.Spec.Resources, spec)...)
	}
	sameContainers := len(p.Spec.Containers) == len(old.Spec.Containers) && len(p.Spec.InitContainers) == len(old.Spec.InitContainers)
	if sameContainers {
		for i := range old.Spec.InitContainers {
			if !isSidecar(&old.Spec.InitContainers[i]) {
				continue
			}
			errs = append(errs, validateContainerResize(&p.Spec.InitContainers[i].Resources, &old.Spec.InitContainers[i].Resources,
				spec.Child("initContainers").Index(i).Child("resources"))...)
		}
		for i := range old.Spec.Containers {
			errs = append(errs, validateContainerResize(&p.Spec.Containers[i].Resources, &old.Spec.Containers[i].Resources,
				spec.Child("containers").Index(i).Child("resources"))...)
		}
		for i := range p.Spec.Containers {
			if !sameButCPUMemory(&p.Spec.Containers[i], &old.Spec.Containers[i]) {
				errs = append(errs, field.Forbidden(spec, resizeOnlyCPUMemory))
			}
		}
		for i := range p.Spec.InitContainers {
			c, o := &p.Spec.InitContainers[i], &old.Spec.InitContainers[i]
			switch {
			case isSidecar(c):
				if !sameButCPUMemory(c, o) {
					errs = append(errs, field.Forbidden(spec, resizeOnlySidecarCPUMem))
				}
			case !apiequality.Semantic.DeepEqual(*c, *o):
				errs = append(errs, field.Forbidden(spec, resizeNonSidecarInit))
			}
		}
	}
	if len(errs) > 0 {
		return errs
	}
	if !sameContainers || !sameSpecButContainers(&p.Spec, &old.Spec, podLevel) {
		errs = append(errs, field.Forbidden(spec, resizeOnlyCPUMemory))
	}
	return errs
}

// hasPodLevelResources: the pod spec sets pod-level requests or limits.
func hasPodLevelResources(s *corev1.PodSpec) bool {
	return s.Resources != nil && len(s.Resources.Requests)+len(s.Resources.Limits) > 0
}

// resizeSupportedByNode is upstream's version-skew guard: a pod with a
// running container is resized only when its node reports the running
// container's resources (the first running container decides); a pod with
// none running may be.
func resizeSupportedByNode(p *corev1.Pod) bool {
	for i := range p.Status.ContainerStatuses {
		if s := &p.Status.ContainerStatuses[i]; s.State.Running != nil {
			return s.Resources != nil
		}
	}
	return true
}

// validateContainerResize: requests and limits may change but not go.
func validateContainerResize(r, old *corev1.ResourceRequirements, path *field.Path) field.ErrorList {
	var errs field.ErrorList
	if resourcesRemoved(r.Requests, old.Requests) {
		errs = append(errs, field.Forbidden(path.Child("requests"), "resource requests cannot be removed"))
	}
	if resourcesRemoved(r.Limits, old.Limits) {
		errs = append(errs, field.Forbidden(path.Child("limits"), "resource limits cannot be removed"))
	}
	return errs
}

// resourcesRemoved: a resource of old is not in l.
func resourcesRemoved(l, old corev1.ResourceList) bool {
	for n := range old {
		if _, ok := l[n]; !ok {
			return true
		}
	}
	return false
}

// sameButCPUMemory: c is o but for its cpu and memory requests and
// limits (which may be changed or added; removals are validateContainerResize's),
// as upstream: any other resource added, changed or removed is a
// difference (since 1.35 also for a container that had no resources).
func sameButCPUMemory(c, o *corev1.Container) bool {
	if !sameButCPUMemoryList(c.Resources.Requests, o.Resources.Requests) ||
		!sameButCPUMemoryList(c.Resources.Limits, o.Resources.Limits) {
		return false
	}
	cc := *c
	cc.Resources.Requests, cc.Resources.Limits = o.Resources.Requests, o.Resources.Limits
	return apiequality.Semantic.DeepEqual(cc, *o)
}

// sameButCPUMemoryList: l and old have the same entries but for cpu and
// memory.
func sameButCPUMemoryList(l, old corev1.ResourceList) bool {
	n := 0
	for name, q := range l {
		if isQOSResource(name) {
			continue
		}
		oq, ok := old[name]
		if !ok || q.Cmp(oq) != 0 {
			return false
		}
		n++
	}
	for name := range old {
		if !isQOSResource(name) {
			n--
		}
	}
	return n == 0
}

// sameSpecButContainers: s and old differ in their containers' resources
// at most (which the checks before compared), and with podLevel in their
// pod-level cpu and memory.
func sameSpecButContainers(s, old *corev1.PodSpec, podLevel bool) bool {
	a, b := *s, *old
	a.Containers, b.Containers = nil, nil
	a.InitContainers, b.InitContainers = nil, nil
	if podLevel {
		a.Resources = withoutCPUMemoryChanges(s.Resources, old.Resources)
	}
	return apiequality.Semantic.DeepEqual(a, b)
}

// validatePodLevelResize: the pod-level resources r (old before) may
// change and be added but not removed (spec.resources, its requests, its
// limits), and only their cpu and memory change, as upstream's
// pod-level part of ValidatePodResize (PR 132919).
func validatePodLevelResize(r, old *corev1.ResourceRequirements, spec *field.Path) field.ErrorList {
	path := spec.Child("resources")
	if old != nil && r == nil {
		return field.ErrorList{field.Forbidden(path, "pod-level resources cannot be removed")}
	}
	var errs field.ErrorList
	if old != nil {
		if resourcesRemoved(r.Requests, old.Requests) {
			errs = append(errs, field.Forbidden(path.Child("requests"), "pod-level resource requests cannot be removed"))
		}
		if resourcesRemoved(r.Limits, old.Limits) {
			errs = append(errs, field.Forbidden(path.Child("limits"), "pod-level resource limits cannot be removed"))
		}
	}
	if !apiequality.Semantic.DeepEqual(withoutCPUMemoryChanges(r, old), old) {
		errs = append(errs, field.Forbidden(spec, resizeOnlyCPUMemoryPodLevel))
	}
	return errs
}

// withoutCPUMemoryChanges is r with old's cpu and memory requests and
// limits in place of its own (none where old has none); nil when r is
// nil, or when old is and nothing else is left (upstream's
// dropCPUMemoryResourcesFromPodLevelResources).
func withoutCPUMemoryChanges(r, old *corev1.ResourceRequirements) *corev1.ResourceRequirements {
	if r == nil {
		return nil
	}
	var oldReq, oldLim corev1.ResourceList
	if old != nil {
		oldReq, oldLim = old.Requests, old.Limits
	}
	out := &corev1.ResourceRequirements{
		Requests: withCPUMemoryOf(r.Requests, oldReq),
		Limits:   withCPUMemoryOf(r.Limits, oldLim),
		Claims:   r.Claims,
	}
	if old == nil && len(out.Requests) == 0 && len(out.Limits) == 0 && len(out.Claims) == 0 {
		return nil
	}
	return out
}

// withCPUMemoryOf is a copy of l with old's cpu and memory entries (and
// none where old has none); nil when both are.
func withCPUMemoryOf(l, old corev1.ResourceList) corev1.ResourceList {
	if l == nil && old == nil {
		return nil
	}
	out := corev1.ResourceList{}
	for n, q := range l {
		if !isQOSResource(n) {
			out[n] = q
		}
	}
	for _, n := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		if q, ok := old[n]; ok {
			out[n] = q
		}
	}
	return out
}
