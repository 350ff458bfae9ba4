// Package randpod makes random pods for oracle tests of resource
// arithmetic: code that sums a pod's requests (the scheduler's and the
// kubelet admission's PodRequests) is checked against upstream's
// k8s.io/component-helpers/resource on pods of app containers, regular and
// sidecar init containers, pod-level requests and overhead, each naming a
// random subset of cpu, memory, ephemeral-storage, a hugepages size and an
// extended resource, zero quantities included.
package randpod

import (
	"math/rand/v2"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Names are the resources the pods' lists may name.
var Names = []v1.ResourceName{v1.ResourceCPU, v1.ResourceMemory, v1.ResourceEphemeralStorage, "hugepages-2Mi", "example.com/gpu"}

// Requests returns a pod of one to three app containers, up to maxInit init
// containers (each a sidecar with even odds), pod-level requests with even
// odds and overhead with odds of one in three; every list names each of
// Names with odds of two in three, in multiples of 250m cpu or 1 Mi.
func Requests(rng *rand.Rand, maxInit int) *v1.Pod {
	list := func() v1.ResourceList {
		rl := v1.ResourceList{}
		for _, n := range Names {
			if rng.IntN(3) == 0 {
				continue
			}
			v := int64(rng.IntN(4)) // zeros too
			if n == v1.ResourceCPU {
				rl[n] = *resource.NewMilliQuantity(v*250, resource.DecimalSI)
			} else {
				rl[n] = *resource.NewQuantity(v<<20, resource.BinarySI)
			}
		}
		return rl
	}
	always := v1.ContainerRestartPolicyAlways
	pod := &v1.Pod{}
	for range rng.IntN(3) + 1 {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Resources: v1.ResourceRequirements{Requests: list()}})
	}
	for range rng.IntN(maxInit + 1) {
		c := v1.Container{Resources: v1.ResourceRequirements{Requests: list()}}
		if rng.IntN(2) == 0 {
			c.RestartPolicy = &always
		}
		pod.Spec.InitContainers = append(pod.Spec.InitContainers, c)
	}
	if rng.IntN(2) == 0 {
		pod.Spec.Resources = &v1.ResourceRequirements{Requests: list()}
	}
	if rng.IntN(3) == 0 {
		pod.Spec.Overhead = list()
	}
	return pod
}
