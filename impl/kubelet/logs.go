package kubelet

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/types"

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
		c = previousInstance(rs, c, k.lastTerminatedID(pod.UID, container, init))
		if c == nil {
			return nil, fmt.Errorf("previous terminated container %q in pod %q not found", container, name)
		}
	}
	if c == nil || c.State == podstate.ContainerCreated {
		return nil, fmt.Errorf("container %q in pod %q is waiting to start: ContainerCreating", container, name)
	}
	return k.rt.ContainerLogs(ctx, c.ID, opts)
}

// previousInstance is the instance `kubectl logs --previous` reads, as
// upstream's: the one the pod's status reports as the container's last
// termination if the runtime still has it (in a crash loop's back-off
// that is the newest instance itself, the one dead instance the
// container GC keeps), otherwise the one before the newest.
func previousInstance(rs *podstate.Pod, latest *podstate.Container, lastTerminatedID string) *podstate.Container {
	if rs != nil && lastTerminatedID != "" {
		for i := range rs.Containers {
			if rs.Containers[i].ID == lastTerminatedID {
				return &rs.Containers[i]
			}
		}
	}
	return rs.Previous(latest)
}

// lastTerminatedID is the runtime id of the instance the pod's last
// written status reports as the container's last termination ("" if
// none).
func (k *Kubelet) lastTerminatedID(uid types.UID, name string, init bool) string {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.pods[uid]
	if rec == nil {
		return ""
	}
	st := rec.lastStatus
	if st == nil && rec.pod != nil {
		st = &rec.pod.Status
	}
	if st == nil {
		return ""
	}
	list := st.ContainerStatuses
	if init {
		list = st.InitContainerStatuses
	}
	for i := range list {
		if list[i].Name != name || list[i].LastTerminationState.Terminated == nil {
			continue
		}
		id := list[i].LastTerminationState.Terminated.ContainerID
		if _, after, ok := strings.Cut(id, "://"); ok {
			return after
		}
		return id
	}
	return ""
}
