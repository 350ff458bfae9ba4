package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// cgroupPod is a pod of uid with one app container of those requests and
// limits ("" leaves a value out), its QoS class left for podQOS to compute.
func cgroupPod(uid string, containers ...v1.ResourceRequirements) *v1.Pod {
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: types.UID("u-" + uid)}}
	for i, r := range containers {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: "c" + string(rune('0'+i)), Resources: r})
	}
	return pod
}

// req is requests and limits of cpu and memory ("" leaves one out).
func req(reqCPU, reqMem, limCPU, limMem string) v1.ResourceRequirements {
	r := v1.ResourceRequirements{}
	set := func(l *v1.ResourceList, name v1.ResourceName, q string) {
		if q == "" {
			return
		}
		if *l == nil {
			*l = v1.ResourceList{}
		}
		(*l)[name] = resource.MustParse(q)
	}
	set(&r.Requests, v1.ResourceCPU, reqCPU)
	set(&r.Requests, v1.ResourceMemory, reqMem)
	set(&r.Limits, v1.ResourceCPU, limCPU)
	set(&r.Limits, v1.ResourceMemory, limMem)
	return r
}

// The sandbox's cgroup parent is the pod's cgroup as upstream's cgroupfs
// driver names it with cgroups per QoS class (its defaults): Guaranteed
// pods under /kubepods itself, the others under their class's cgroup.
func TestPodCgroupNameByQOSClass(t *testing.T) {
	for _, tc := range []struct {
		pod  *v1.Pod
		want string
	}{
		{cgroupPod("g", req("100m", "64Mi", "100m", "64Mi")), "/kubepods/podu-g"},
		{cgroupPod("b", req("100m", "", "200m", "64Mi")), "/kubepods/burstable/podu-b"},
		{cgroupPod("e", req("", "", "", "")), "/kubepods/besteffort/podu-e"},
	} {
		if got := podCgroupName(tc.pod); got != tc.want {
			t.Errorf("podCgroupName(%s): %q; want %q", tc.pod.UID, got, tc.want)
		}
		if got := sandboxConfig(tc.pod, 0, t.TempDir(), false).GetLinux().GetCgroupParent(); got != tc.want {
			t.Errorf("sandbox cgroup parent of %s: %q; want %q", tc.pod.UID, got, tc.want)
		}
	}
	// status.qosClass, when the API server has set it, decides (upstream's
	// GetPodQOS).
	p := cgroupPod("s", req("", "", "", ""))
	p.Status.QOSClass = v1.PodQOSBurstable
	if got := podCgroupName(p); got != "/kubepods/burstable/podu-s" {
		t.Errorf("podCgroupName with status.qosClass Burstable: %q", got)
	}
}
