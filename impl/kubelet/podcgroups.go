package kubelet

import (
	v1 "k8s.io/api/core/v1"
)

// Pod cgroups, as upstream's kubelet (pkg/kubelet/cm) makes them with its
// defaults (--cgroups-per-qos, --cgroup-driver=cgroupfs, --cgroup-root=/;
// kubeproof has none of these flags, so these are the only names): every
// pod runs in a cgroup of its own, pod<UID>, under its QoS class's —
// /kubepods itself for Guaranteed pods, /kubepods/burstable and
// /kubepods/besteffort for the others — and its sandbox is created with
// that cgroup as its parent (CRI CgroupParent).

// podCgroupName is pod's cgroup as upstream's cgroupfs driver names it
// (GetPodContainerName): "/kubepods/pod<UID>" for a Guaranteed pod,
// "/kubepods/burstable/pod<UID>" and "/kubepods/besteffort/pod<UID>" for
// the others, by podQOS (status.qosClass when the API server set it). One
// string allocated, as the sandbox's parent always was.
func podCgroupName(pod *v1.Pod) string {
	switch podQOS(pod) {
	case v1.PodQOSBurstable:
		return "/kubepods/burstable/pod" + string(pod.UID)
	case v1.PodQOSBestEffort:
		return "/kubepods/besteffort/pod" + string(pod.UID)
	}
	return "/kubepods/pod" + string(pod.UID)
}
