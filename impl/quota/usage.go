package quota

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"
)

// ObjectUsage is what one object of resource gr uses: one of
// count/<resource>[.<group>], one of the legacy count name of core
// resources, a pod's compute resources while it counts (PodCounts), and a
// service's load balancer and node ports (ServiceUsage).
func ObjectUsage(gr schema.GroupResource, obj runtime.Object, now time.Time) corev1.ResourceList {
	countName := "count/" + gr.Resource
	if gr.Group != "" {
		countName += "." + gr.Group
	}
	out := corev1.ResourceList{corev1.ResourceName(countName): *resource.NewQuantity(1, resource.DecimalSI)}
	if gr.Group == "" && LegacyCounts[gr.Resource] {
		out[corev1.ResourceName(gr.Resource)] = *resource.NewQuantity(1, resource.DecimalSI)
	}
	if pod, ok := obj.(*corev1.Pod); ok && gr == podResource && PodCounts(pod, now) {
		for n, v := range PodComputeUsage(pod) {
			out[n] = v
		}
	}
	if svc, ok := obj.(*corev1.Service); ok && gr == serviceResource {
		for n, v := range ServiceUsage(svc) {
			out[n] = v
		}
	}
	return out
}

// ServiceUsage is what a service uses besides its counts, as upstream's
// service quota evaluator: services.loadbalancers 1 for type LoadBalancer,
// else 0; services.nodeports the number of its ports for type NodePort or
// LoadBalancer — of a LoadBalancer with allocateLoadBalancerNodePorts
// false, only the ports that name a nodePort — else 0. (A zero is usage
// too: the controller writes it; admission does not check it.)
func ServiceUsage(svc *corev1.Service) corev1.ResourceList {
	lbs, nodePorts := 0, 0
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		nodePorts = len(svc.Spec.Ports)
	case corev1.ServiceTypeLoadBalancer:
		lbs = 1
		if a := svc.Spec.AllocateLoadBalancerNodePorts; a != nil && !*a {
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					nodePorts++
				}
			}
		} else {
			nodePorts = len(svc.Spec.Ports)
		}
	}
	return corev1.ResourceList{
		corev1.ResourceServicesLoadBalancers: *resource.NewQuantity(int64(lbs), resource.DecimalSI),
		corev1.ResourceServicesNodePorts:     *resource.NewQuantity(int64(nodePorts), resource.DecimalSI),
	}
}

// PodCounts tells whether a pod still uses "pods" and compute quota: not
// once it has succeeded or failed, nor once its deletion grace period
// (deletionTimestamp + deletionGracePeriodSeconds) has passed, as upstream.
func PodCounts(pod *corev1.Pod, now time.Time) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if now.After(end) {
			return false
		}
	}
	return true
}

// PodComputeUsage: one "pods"; the requests of cpu, memory,
// ephemeral-storage and hugepages-<size> bare and as requests.<name>, of
// extended resources (example.com/gpu) only as requests.<name>;
// limits.cpu, limits.memory and limits.ephemeral-storage, as upstream's
// podComputeUsageHelper. The pod's requests and limits are added up as
// kube-apiserver's pod quota evaluator does, by component-helpers'
// PodRequests and PodLimits: app containers
// and sidecars (restartable init containers) summed, raised to the peak
// while a regular init container runs (it plus the sidecars before it);
// pod-level values (spec.resources, PodLevelResources being on by default)
// in place of the sums; the overhead added to the requests and to the
// non-zero limits; and, in-place resize being on by default upstream, a
// container's status resources or allocated resources where larger than
// its spec (a pod resized down through pods/resize is counted at its
// larger allocated or actual resources until its node has applied the
// resize). The pod-level status.allocatedResources and status.resources
// are not read: upstream's pod evaluator passes no
// InPlacePodLevelResourcesVerticalScalingEnabled (the scheduler does).
func PodComputeUsage(pod *corev1.Pod) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: *resource.NewQuantity(1, resource.DecimalSI)}
	opts := resourcehelper.PodResourcesOptions{UseStatusResources: true}
	requests := resourcehelper.PodRequests(pod, opts)
	limits := resourcehelper.PodLimits(pod, opts)
	for n, v := range requests {
		switch {
		case isBareCompute(n) || strings.HasPrefix(string(n), corev1.ResourceHugePagesPrefix):
			out[n] = v.DeepCopy()
			out["requests."+n] = v.DeepCopy()
		case isExtended(n):
			out["requests."+n] = v.DeepCopy()
		}
	}
	for n, v := range limits {
		if isBareCompute(n) {
			out["limits."+n] = v.DeepCopy()
		}
	}
	return out
}

func isBareCompute(n corev1.ResourceName) bool {
	return n == corev1.ResourceCPU || n == corev1.ResourceMemory || n == corev1.ResourceEphemeralStorage
}

// isExtended tells an extended resource name: one outside the
// kubernetes.io domain (a native name has no domain or that one), and not
// itself a requests.<name>.
func isExtended(n corev1.ResourceName) bool {
	s := string(n)
	native := !strings.Contains(s, "/") || strings.Contains(s, "kubernetes.io/")
	return !native && !strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix)
}
