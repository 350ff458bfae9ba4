package admission

import (
	"context"
	"errors"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// PodResizeValidator refuses, at the API, an in-place resize the bound
// node can never carry out, as kube-apiserver's plugin of that name
// (upstream PR 136043, on by default with InPlacePodVerticalScaling, GA):
// a pods/resize update of a bound pod whose generation moved (the spec's
// resources changed) is refused with 403 when
//   - the node is not a Linux node (its kubernetes.io/os label is set and
//     not "linux"): "pod resize is only supported on linux nodes, node %q
//     is %q", cause UnsupportedPlatform;
//   - the pod's requests (component-helpers PodRequests: its containers',
//     init containers' and overhead, or its pod-level requests) exceed the
//     node's allocatable cpu or memory: "node didn't have enough
//     allocatable resources: cpu, requested: N, allocatable: N; memory,
//     ...", cause NodeCapacity (cpu in millicores, memory in bytes);
//   - the node does not exist: "node %q not found".
//
// Before it the kubelet marked such a resize PodResizePending Infeasible;
// it still does for what only it can see. Other requests (creates, other
// subresources, pending pods, writes that leave the spec alone) pass.
// Validating only.
type PodResizeValidator struct {
	GetNode NodeGetter
}

// Pod resize refusal causes (upstream's metav1.CauseType values).
const (
	causeNodeCapacity        metav1.CauseType = "NodeCapacity"
	causeUnsupportedPlatform metav1.CauseType = "UnsupportedPlatform"
)

func newPodResizeValidator(d *deps) (any, error) {
	get, err := cachedNodeGetter(d)
	if err != nil {
		return nil, err
	}
	return &PodResizeValidator{GetNode: get}, nil
}

// Validate implements Validator.
func (p *PodResizeValidator) Validate(ctx context.Context, a *Attributes) error {
	if a.Operation != Update || a.Resource.GroupResource() != podResource || a.Subresource != "resize" {
		return nil
	}
	pod, ok := a.Object.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected a pod but got a %T", a.Object))
	}
	if pod.Spec.NodeName == "" {
		return nil
	}
	old, ok := a.OldObject.(*corev1.Pod)
	if !ok {
		return apierrors.NewBadRequest(fmt.Sprintf("expected an old pod but got a %T", a.OldObject))
	}
	// The generation moves only when the spec changes.
	if old.Generation == pod.Generation {
		return nil
	}
	node, err := p.GetNode(ctx, pod.Spec.NodeName)
	if apierrors.IsNotFound(err) {
		return forbidden(a, fmt.Errorf("node %q not found", pod.Spec.NodeName))
	}
	if err != nil {
		return forbidden(a, fmt.Errorf("failed to get node %q: %w", pod.Spec.NodeName, err))
	}
	if err := resizeOnLinux(node); err != nil {
		return forbiddenWithCause(a, err, causeUnsupportedPlatform)
	}
	if err := resizeWithinAllocatable(pod, node.Status.Allocatable); err != nil {
		return forbiddenWithCause(a, err, causeNodeCapacity)
	}
	return nil
}

// resizeOnLinux: a node without the OS label counts as Linux.
func resizeOnLinux(node *corev1.Node) error {
	os, ok := node.Labels[corev1.LabelOSStable]
	if !ok || os == "linux" {
		return nil
	}
	return fmt.Errorf("pod resize is only supported on linux nodes, node %q is %q", node.Name, os)
}

func resizeWithinAllocatable(pod *corev1.Pod, allocatable corev1.ResourceList) error {
	requests := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{})
	cpu, mem := requests[corev1.ResourceCPU], requests[corev1.ResourceMemory]
	cpuAlloc, memAlloc := allocatable.Cpu(), allocatable.Memory()
	var over []string
	if cpu.Cmp(*cpuAlloc) > 0 {
		over = append(over, fmt.Sprintf("cpu, requested: %d, allocatable: %d", cpu.MilliValue(), cpuAlloc.MilliValue()))
	}
	if mem.Cmp(*memAlloc) > 0 {
		over = append(over, fmt.Sprintf("memory, requested: %d, allocatable: %d", mem.Value(), memAlloc.Value()))
	}
	if len(over) > 0 {
		return fmt.Errorf("node didn't have enough allocatable resources: %s", strings.Join(over, "; "))
	}
	return nil
}

// forbiddenWithCause is forbidden with a cause of type reason added to
// the Status's details.
func forbiddenWithCause(a *Attributes, err error, reason metav1.CauseType) error {
	se := forbidden(a, err)
	var status *apierrors.StatusError
	if errors.As(se, &status) && status.ErrStatus.Details != nil {
		status.ErrStatus.Details.Causes = append(status.ErrStatus.Details.Causes, metav1.StatusCause{Type: reason})
	}
	return se
}
