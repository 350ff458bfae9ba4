package kubelet

import (
	"context"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// runtimeAPIPod is the pod a kill of uid's remains in the runtime goes by
// when the kubelet has no spec of it (cleanupPod of a pod a restarted
// kubelet found in the runtime, gone from the API), as upstream's
// SyncTerminatingRuntimePod kills runningPod.ToAPIPod(): the name and
// namespace its sandbox carries (else its containers' labels), and its containers still running by name and image, all in
// spec.containers; so the Killing and FailedKillPod events are about that
// pod and no lifecycle hook runs. rs is returned with every container as
// a regular one, as ToAPIPod lists them (for killPod's events).
func (k *Kubelet) runtimeAPIPod(ctx context.Context, uid types.UID, rs *podstate.Pod) (*v1.Pod, *podstate.Pod) {
	pod := &v1.Pod{}
	pod.UID = uid
	sbs, err := k.rt.ListPodSandbox(ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(uid)}})
	if err != nil {
		k.log.Debug("listing the sandboxes of a pod without spec", "podUID", uid, "err", err)
	}
	for _, s := range sbs {
		if m := s.GetMetadata(); m.GetName() != "" {
			pod.Name, pod.Namespace = m.GetName(), m.GetNamespace()
			break
		}
	}
	if pod.Name == "" {
		// No sandbox left: the containers' labels name it too.
		cs, err := k.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{runtime.LabelPodUID: string(uid)}})
		if err != nil {
			k.log.Debug("listing the containers of a pod without spec", "podUID", uid, "err", err)
		}
		for _, c := range cs {
			if l := c.GetLabels(); l[runtime.LabelPodName] != "" {
				pod.Name, pod.Namespace = l[runtime.LabelPodName], l[runtime.LabelPodNamespace]
				break
			}
		}
	}
	regular := *rs
	regular.Containers = make([]podstate.Container, len(rs.Containers))
	for i, c := range rs.Containers {
		c.Init, c.Ephemeral = false, false
		regular.Containers[i] = c
	}
	for _, c := range regular.Running() {
		pod.Spec.Containers = append(pod.Spec.Containers, v1.Container{Name: c.Name, Image: c.Image})
	}
	return pod, &regular
}
