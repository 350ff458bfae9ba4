package podsync

import v1 "k8s.io/api/core/v1"

// ContainersAmount is what pod's containers ask of resource name, added
// up as upstream's PodRequests and PodLimits (component-helpers) add
// them: app containers and sidecars summed, raised to the peak while a
// regular init container runs (it plus the sidecars started before it).
// Requests, or limits if limits; in milli-units if milli, else in units.
// named reports whether any container names the resource. A pod-level
// value and the overhead are the caller's to apply.
func ContainersAmount(pod *v1.Pod, name v1.ResourceName, limits, milli bool) (amount int64, named bool) {
	of := func(r *v1.ResourceRequirements) (int64, bool) {
		l := r.Requests
		if limits {
			l = r.Limits
		}
		q, ok := l[name]
		if !ok {
			return 0, false
		}
		if milli {
			return q.MilliValue(), true
		}
		return q.Value(), true
	}
	var sum, sidecars, peak int64
	for i := range pod.Spec.Containers {
		v, ok := of(&pod.Spec.Containers[i].Resources)
		sum += v
		named = named || ok
	}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		v, ok := of(&c.Resources)
		named = named || ok
		if IsSidecar(c) {
			sidecars += v
			peak = max(peak, sidecars)
		} else {
			peak = max(peak, sidecars+v)
		}
	}
	return max(sum+sidecars, peak), named
}
