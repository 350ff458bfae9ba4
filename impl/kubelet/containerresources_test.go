package kubelet

import (
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestContainerLinuxResources: a container's CRI cgroup values are
// upstream's generateLinuxContainerResources / calculateLinuxResources
// with the CFS quota on (its default): shares from the CPU request, or
// from the limit when there is no request, within 2..262144; the 100 ms
// period always, a quota (at least 1 ms) only with a CPU limit; the memory
// limit; with pod-level resources set, the pod's CPU and memory limits
// stand in for the ones the container lacks. The same calculation as the
// sandbox's (TestSandboxResources).
func TestContainerLinuxResources(t *testing.T) {
	for _, tc := range []struct {
		name   string
		podLvl *v1.ResourceRequirements
		c      v1.Container
		want   *runtimeapi.LinuxContainerResources
	}{{
		name: "no resources: minimum shares, no quota, the period all the same",
		c:    v1.Container{Name: "c"},
		want: sandboxRes(2, 0, 0),
	}, {
		name: "request and limits",
		c:    withResources(resList("cpu", "500m", "memory", "64Mi"), resList("cpu", "1", "memory", "128Mi")),
		want: sandboxRes(512, 100000, 128<<20),
	}, {
		name: "no CPU request: shares from the limit",
		c:    withResources(nil, resList("cpu", "2")),
		want: sandboxRes(2048, 200000, 0),
	}, {
		name: "a zero CPU request: minimum shares, not the limit's",
		c:    withResources(resList("cpu", "0"), resList("cpu", "1")),
		want: sandboxRes(2, 100000, 0),
	}, {
		name: "bounds: at least 2 shares and a 1 ms quota",
		c:    withResources(resList("cpu", "1m"), resList("cpu", "5m")),
		want: sandboxRes(2, 1000, 0),
	}, {
		name: "bounds: at most 262144 shares",
		c:    withResources(resList("cpu", "300"), resList("cpu", "300")),
		want: sandboxRes(262144, 30000000, 0),
	}, {
		name:   "pod-level limits stand in for the container's missing ones",
		podLvl: &v1.ResourceRequirements{Limits: resList("cpu", "2", "memory", "1Gi")},
		c:      withResources(resList("cpu", "250m"), nil),
		want:   sandboxRes(256, 200000, 1<<30),
	}, {
		name:   "pod-level limits: the container's own limit first",
		podLvl: &v1.ResourceRequirements{Limits: resList("cpu", "2", "memory", "1Gi")},
		c:      withResources(nil, resList("cpu", "500m")),
		want:   sandboxRes(512, 50000, 1<<30),
	}, {
		name:   "pod-level requests only: no limit to stand in",
		podLvl: &v1.ResourceRequirements{Requests: resList("cpu", "1")},
		c:      v1.Container{Name: "c"},
		want:   sandboxRes(2, 0, 0),
	}} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Resources: tc.podLvl, Containers: []v1.Container{tc.c}}}
			pod.Name, pod.Namespace, pod.UID = "p", "default", "uid-p"
			cfg := containerConfig(pod, &pod.Spec.Containers[0], false, 0, nil, nil, cgroupParams{nodeMemory: 32 << 30})
			got := cfg.GetLinux().GetResources()
			got.OomScoreAdj = 0 // TestContainerOOMScoreAdj's
			if !proto.Equal(got, tc.want) {
				t.Errorf("resources\n got %v\nwant %v", got, tc.want)
			}
		})
	}
}
