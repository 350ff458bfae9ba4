package kubelet

import (
	"testing"

	"google.golang.org/protobuf/proto"
	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestHugepageLimitsPodLevel: a pod's pod-level hugepage limits reach the
// CRI hugepage limits of its containers that set none of that size, as
// upstream's since kubernetes/kubernetes#131089 ("propagate Pod level
// hugepage cgroup to containers when they do not specify hugepage
// resources"); a container's own limit of a size stays its own; sizes
// neither sets are 0. Before, a container without hugepage limits got 0
// of every size, so it could use none of the pod's huge pages.
func TestHugepageLimitsPodLevel(t *testing.T) {
	node := []HugePages{{PageSize: 2 << 20, Pages: 512}, {PageSize: 1 << 30, Pages: 2}}
	podLevel := &v1.ResourceRequirements{
		Requests: resList("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "8Mi"),
		Limits:   resList("cpu", "1", "memory", "1Gi", "hugepages-2Mi", "8Mi"),
	}
	for _, tc := range []struct {
		name      string
		pod       *v1.ResourceRequirements
		container v1.ResourceList // the container's limits
		want      []*runtimeapi.HugepageLimit
	}{
		{"no pod-level resources", nil, nil, []*runtimeapi.HugepageLimit{{PageSize: "2MB"}, {PageSize: "1GB"}}},
		{"container without hugepages: the pod's", podLevel, resList("cpu", "500m"),
			[]*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 8 << 20}, {PageSize: "1GB"}}},
		{"container with its own: its own", podLevel, resList("hugepages-2Mi", "4Mi"),
			[]*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 4 << 20}, {PageSize: "1GB"}}},
		{"container with another size: its own and the pod's", podLevel, resList("hugepages-1Gi", "1Gi"),
			[]*runtimeapi.HugepageLimit{{PageSize: "2MB", Limit: 8 << 20}, {PageSize: "1GB", Limit: 1 << 30}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{Resources: tc.pod, Containers: []v1.Container{withResources(nil, tc.container)}}}
			got := containerConfig(pod, &pod.Spec.Containers[0], false, 0, nil, nil, cgroupParams{nodeMemory: 32 << 30, hugePages: node}).GetLinux().GetResources().GetHugepageLimits()
			if len(got) != len(tc.want) {
				t.Fatalf("CRI hugepage limits %v, want %v", got, tc.want)
			}
			for i := range got {
				if !proto.Equal(got[i], tc.want[i]) {
					t.Errorf("CRI hugepage limit %d = %v, want %v", i, got[i], tc.want[i])
				}
			}
		})
	}
}
