package kubelet

import (
	"context"
	"fmt"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// ContainerLogs returns the output of one container of a pod on this node:
// the current instance, or with previous the one before it (what
// `kubectl logs [-p]` shows). An empty container name means the pod's only
// container. Errors read like upstream's.
func (k *Kubelet) ContainerLogs(ctx context.Context, namespace, name, container string, previous bool, opts runtime.LogOptions) ([]runtime.LogLine, error) {
	pod, ok := k.GetPodByName(namespace, name) // rec.pod is read under k.mu
	if !ok {
		return nil, fmt.Errorf("pod %q not found on node %s", namespace+"/"+name, k.cfg.NodeName)
	}
	init := false
	if container == "" {
		if len(pod.Spec.Containers) != 1 {
			return nil, fmt.Errorf("a container name must be specified for pod %s", name)
		}
		container = pod.Spec.Containers[0].Name
	} else if containerSpec(pod, container, false) == nil {
		if containerSpec(pod, container, true) == nil {
			return nil, fmt.Errorf("container %s is not valid for pod %s", container, name)
		}
		init = true
	}
	rs, err := k.podRuntimeState(ctx, pod.UID)
	if err != nil {
		return nil, err
	}
	c := rs.Latest(container, init)
	if previous {
		c = rs.Previous(c)
		if c == nil {
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, name)
		}
	}
	if c == nil || c.State == podstate.ContainerCreated {
		return nil, fmt.Errorf("container %q in pod %q is waiting to start: ContainerCreating", container, name)
	}
	return k.rt.ContainerLogs(ctx, c.ID, opts)
}
