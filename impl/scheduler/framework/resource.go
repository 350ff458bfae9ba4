package framework

import (
	v1 "k8s.io/api/core/v1"
)

// Requests a pod makes when its containers name none, used only for scoring
// (so that best-effort pods still spread), as in kube-scheduler.
const (
	DefaultMilliCPURequest int64 = 100
	DefaultMemoryRequest   int64 = 200 * 1024 * 1024
)

// Resource is an amount of each schedulable resource.
type Resource struct {
	MilliCPU         int64
	Memory           int64
	EphemeralStorage int64
	// AllowedPodNumber is only meaningful for allocatable.
	AllowedPodNumber int
	// ScalarResources holds extended resources, hugepages and
	// attachable-volume counts by name.
	ScalarResources map[v1.ResourceName]int64
}

// NewResource converts a ResourceList.
func NewResource(rl v1.ResourceList) Resource {
	var r Resource
	r.Add(rl)
	return r
}

// Add adds a ResourceList to r.
func (r *Resource) Add(rl v1.ResourceList) {
	for name, q := range rl {
		switch name {
		case v1.ResourceCPU:
			r.MilliCPU += q.MilliValue()
		case v1.ResourceMemory:
			r.Memory += q.Value()
		case v1.ResourcePods:
			r.AllowedPodNumber += int(q.Value())
		case v1.ResourceEphemeralStorage:
			r.EphemeralStorage += q.Value()
		default:
			if IsScalarResourceName(name) {
				r.AddScalar(name, q.Value())
			}
		}
	}
}

// AddResource adds o to r.
func (r *Resource) AddResource(o *Resource) {
	r.MilliCPU += o.MilliCPU
	r.Memory += o.Memory
	r.EphemeralStorage += o.EphemeralStorage
	r.AllowedPodNumber += o.AllowedPodNumber
	for k, v := range o.ScalarResources {
		r.AddScalar(k, v)
	}
}

// SubResource subtracts o from r.
func (r *Resource) SubResource(o *Resource) {
	r.MilliCPU -= o.MilliCPU
	r.Memory -= o.Memory
	r.EphemeralStorage -= o.EphemeralStorage
	r.AllowedPodNumber -= o.AllowedPodNumber
	for k, v := range o.ScalarResources {
		r.AddScalar(k, -v)
	}
}

// AddScalar adds v of the scalar resource name.
func (r *Resource) AddScalar(name v1.ResourceName, v int64) {
	if r.ScalarResources == nil {
		r.ScalarResources = map[v1.ResourceName]int64{}
	}
	r.ScalarResources[name] += v
}

// SetMaxResource sets every resource of r to max(r, rl).
func (r *Resource) SetMaxResource(o *Resource) {
	r.MilliCPU = max(r.MilliCPU, o.MilliCPU)
	r.Memory = max(r.Memory, o.Memory)
	r.EphemeralStorage = max(r.EphemeralStorage, o.EphemeralStorage)
	for k, v := range o.ScalarResources {
		if v > r.ScalarResources[k] {
			if r.ScalarResources == nil {
				r.ScalarResources = map[v1.ResourceName]int64{}
			}
			r.ScalarResources[k] = v
		}
	}
}

// Clone returns a deep copy.
func (r Resource) Clone() Resource {
	c := r
	if r.ScalarResources != nil {
		c.ScalarResources = make(map[v1.ResourceName]int64, len(r.ScalarResources))
		for k, v := range r.ScalarResources {
			c.ScalarResources[k] = v
		}
	}
	return c
}

// IsScalarResourceName reports whether name is an extended resource,
// hugepages or an attachable-volume count: resources scheduled by count.
func IsScalarResourceName(name v1.ResourceName) bool {
	s := string(name)
	if len(s) >= len(v1.ResourceHugePagesPrefix) && s[:len(v1.ResourceHugePagesPrefix)] == v1.ResourceHugePagesPrefix {
		return true
	}
	if len(s) >= len(v1.ResourceAttachableVolumesPrefix) && s[:len(v1.ResourceAttachableVolumesPrefix)] == v1.ResourceAttachableVolumesPrefix {
		return true
	}
	return IsExtendedResourceName(name)
}

// IsExtendedResourceName reports a fully-qualified name outside the
// kubernetes.io/ namespace (e.g. example.com/gpu), not prefixed "requests.".
func IsExtendedResourceName(name v1.ResourceName) bool {
	s := string(name)
	slash := -1
	for i := 0; i < len(s); i++ {
		if s[i] == '/' {
			slash = i
			break
		}
	}
	if slash < 0 {
		return false
	}
	domain := s[:slash]
	if domain == "kubernetes.io" || len(domain) > len(".kubernetes.io") && domain[len(domain)-len(".kubernetes.io"):] == ".kubernetes.io" {
		return false
	}
	return len(s) < 9 || s[:9] != "requests."
}

// PodRequests computes what the pod asks the node for: the larger of the sum
// of its containers (plus restartable init containers, i.e. sidecars) and
// its largest init container (plus the sidecars started before it), plus
// the pod overhead. Pod-level resources (spec.resources) win for cpu and
// memory when set. The second result substitutes the scoring defaults
// (100m cpu, 200Mi memory) for containers that request none.
func PodRequests(pod *v1.Pod) (reqs Resource, nonZero Resource) {
	var sum, sumNZ Resource
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		sum.Add(c.Resources.Requests)
		addNonZero(&sumNZ, c.Resources.Requests)
	}
	var sidecars, sidecarsNZ, initMax, initMaxNZ Resource
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		r := NewResource(c.Resources.Requests)
		var nz Resource
		addNonZero(&nz, c.Resources.Requests)
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars.AddResource(&r)
			sidecarsNZ.AddResource(&nz)
			continue
		}
		r.AddResource(&sidecars)
		nz.AddResource(&sidecarsNZ)
		initMax.SetMaxResource(&r)
		initMaxNZ.SetMaxResource(&nz)
	}
	sum.AddResource(&sidecars)
	sumNZ.AddResource(&sidecarsNZ)
	sum.SetMaxResource(&initMax)
	sumNZ.SetMaxResource(&initMaxNZ)
	if pr := pod.Spec.Resources; pr != nil {
		if q, ok := pr.Requests[v1.ResourceCPU]; ok {
			sum.MilliCPU, sumNZ.MilliCPU = q.MilliValue(), q.MilliValue()
		}
		if q, ok := pr.Requests[v1.ResourceMemory]; ok {
			sum.Memory, sumNZ.Memory = q.Value(), q.Value()
		}
	}
	if pod.Spec.Overhead != nil {
		sum.Add(pod.Spec.Overhead)
		oh := NewResource(pod.Spec.Overhead)
		sumNZ.MilliCPU += oh.MilliCPU
		sumNZ.Memory += oh.Memory
	}
	sum.AllowedPodNumber, sumNZ.AllowedPodNumber = 0, 0
	return sum, sumNZ
}

func addNonZero(r *Resource, rl v1.ResourceList) {
	cpu, mem := DefaultMilliCPURequest, DefaultMemoryRequest
	if q, ok := rl[v1.ResourceCPU]; ok {
		cpu = q.MilliValue()
	}
	if q, ok := rl[v1.ResourceMemory]; ok {
		mem = q.Value()
	}
	r.MilliCPU += cpu
	r.Memory += mem
}
