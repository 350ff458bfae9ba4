package kubelet

import (
	"context"
	"encoding/json"
	"strconv"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// Killing a container without its pod (the container GC's kill of one in
// the unknown state): what the kill needs of the pod and the container
// is read back from what containerConfig wrote on the container, as
// upstream's killContainer restores it (restoreSpecsFromContainerLabels).

// restoreKillSpecs is the pod and container a kill without the pod goes
// by, from a container's labels and annotations: the pod's name,
// namespace and UID and the container's name from the labels; the pod's
// deletion and termination grace periods, the container's ports,
// termination message path and preStop handler from the annotations. An
// annotation that does not parse is passed over, as upstream logs and
// skips it. Nothing else of either is set. Pure.
func restoreKillSpecs(labels, annotations map[string]string) (*v1.Pod, *v1.Container) {
	pod := &v1.Pod{}
	pod.Name, pod.Namespace = labels[runtime.LabelPodName], labels[runtime.LabelPodNamespace]
	pod.UID = types.UID(labels[runtime.LabelPodUID])
	pod.DeletionGracePeriodSeconds = int64Annotation(annotations, runtime.AnnotationPodDeletionGracePeriod)
	pod.Spec.TerminationGracePeriodSeconds = int64Annotation(annotations, runtime.AnnotationPodTerminationGracePeriod)
	c := &v1.Container{Name: labels[runtime.LabelContainerName], TerminationMessagePath: annotations[runtime.AnnotationContainerTerminationMessagePath]}
	if s, ok := annotations[runtime.AnnotationContainerPorts]; ok {
		var ports []v1.ContainerPort
		if json.Unmarshal([]byte(s), &ports) == nil {
			c.Ports = ports
		}
	}
	if s, ok := annotations[runtime.AnnotationContainerPreStopHandler]; ok {
		var h v1.LifecycleHandler
		if json.Unmarshal([]byte(s), &h) == nil {
			c.Lifecycle = &v1.Lifecycle{PreStop: &h}
		}
	}
	return pod, c
}

// int64Annotation is the annotation key as a number, nil if absent or
// not one.
func int64Annotation(annotations map[string]string, key string) *int64 {
	s, ok := annotations[key]
	if !ok {
		return nil
	}
	v, err := strconv.ParseInt(s, 10, 64)
	if err != nil {
		return nil
	}
	return &v
}

// unknownKillMessage is the Killing event's message for a container the
// container GC kills because its state is unknown (upstream's
// removeOldestN).
const unknownKillMessage = "Container is in unknown state, try killing it before removal"

// killUnknownContainer is the container GC's kill of c, in the unknown
// state, before its removal (gc.UnknownKill), as upstream's
// killContainer without the pod: the pod and container restored from c
// (restoreKillSpecs), a Normal Killing event about the container of that
// pod (which names no container in its spec: upstream's "implicitly
// required container" reference, containerRef), then the preStop hook
// within the pod's grace period (its deletion grace period, else its
// termination grace period, else the 2 s minimum) and the stop with what
// is left of it, at least 2 s (killContainer).
func (k *Kubelet) killUnknownContainer(ctx context.Context, c *runtimeapi.Container) error {
	pod, spec := restoreKillSpecs(c.GetLabels(), c.GetAnnotations())
	grace := int64(minimumGracePeriod)
	switch {
	case pod.DeletionGracePeriodSeconds != nil:
		grace = *pod.DeletionGracePeriodSeconds
	case pod.Spec.TerminationGracePeriodSeconds != nil:
		grace = *pod.Spec.TerminationGracePeriodSeconds
	}
	k.containerEvent(pod, spec.Name, false, v1.EventTypeNormal, EventKilling, "%s", unknownKillMessage)
	return k.killContainer(ctx, pod, spec, c.GetId(), k.hookPodIP(ctx, spec, pod.UID), grace)
}

// hookPodIP is the IP a preStop hook of spec reaches the pod at when it
// names no host (an HTTP hook; a tcpSocket one is not run): as upstream's
// handler runner reads the runtime's pod status, the primary IP of the
// pod's newest sandbox while that one is ready (podRuntimeState, podIP),
// whichever sandbox the container was made in; "" for other hooks, when
// the newest sandbox is not ready or the runtime reports none.
func (k *Kubelet) hookPodIP(ctx context.Context, spec *v1.Container, uid types.UID) string {
	if spec.Lifecycle == nil || spec.Lifecycle.PreStop == nil || spec.Lifecycle.PreStop.HTTPGet == nil || uid == "" {
		return ""
	}
	ps, err := k.podRuntimeState(ctx, uid)
	if err != nil {
		k.log.Debug("reading the pod of a container in unknown state", "pod", uid, "err", err)
		return ""
	}
	return podIP(ps)
}
