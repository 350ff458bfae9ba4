package scheduler

import (
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The scheduler's informers keep every pod and node of the cluster in
// memory, so before an object enters an informer cache it is trimmed to the
// fields scheduling reads (an informer transform, as kube-scheduler strips
// managedFields). What stays:
//
//   - metadata, without managedFields and the kubectl last-applied
//     annotation (both can be larger than the rest of the object);
//   - of a pod's containers, init containers and ephemeral containers: name,
//     ports, resources and restartPolicy (NodeResourcesFit, NodePorts,
//     sidecars); every other spec field except volumes, which no plugin of
//     kubeproof reads;
//   - of a pod's status: phase, conditions, nominatedNodeName, startTime,
//     qosClass (the queue, preemption and the PodScheduled condition);
//   - of a node: spec.unschedulable and spec.taints, status.allocatable and
//     the conditions without their messages and heartbeat times.
//
// The trimmed objects are never written back: the scheduler only binds
// (pods/binding), patches status and deletes with a UID precondition.

const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// TransformForScheduling trims a pod or a node as described above (in place:
// an informer hands its transform a freshly decoded object no one else
// holds). Other objects, and tombstones, only lose managedFields.
func TransformForScheduling(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Pod:
		trimPod(o)
	case *v1.Node:
		trimNode(o)
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

func trimMeta(m *metav1.ObjectMeta) {
	m.ManagedFields = nil
	if _, ok := m.Annotations[lastAppliedAnnotation]; ok {
		kept := make(map[string]string, len(m.Annotations)-1)
		for k, v := range m.Annotations {
			if k != lastAppliedAnnotation {
				kept[k] = v
			}
		}
		m.Annotations = kept
	}
}

func trimPod(p *v1.Pod) {
	trimMeta(&p.ObjectMeta)
	p.Spec.Containers = trimContainers(p.Spec.Containers)
	p.Spec.InitContainers = trimContainers(p.Spec.InitContainers)
	for i := range p.Spec.EphemeralContainers {
		c := &p.Spec.EphemeralContainers[i].EphemeralContainerCommon
		*c = v1.EphemeralContainerCommon{Name: c.Name, Resources: c.Resources}
	}
	p.Spec.Volumes = nil
	p.Status = v1.PodStatus{
		Phase:             p.Status.Phase,
		Conditions:        p.Status.Conditions,
		NominatedNodeName: p.Status.NominatedNodeName,
		StartTime:         p.Status.StartTime,
		QOSClass:          p.Status.QOSClass,
	}
}

// trimContainers keeps what resource fitting and host ports read.
func trimContainers(cs []v1.Container) []v1.Container {
	if len(cs) == 0 {
		return cs
	}
	out := make([]v1.Container, len(cs))
	for i := range cs {
		out[i] = v1.Container{Name: cs[i].Name, Ports: cs[i].Ports, Resources: cs[i].Resources, RestartPolicy: cs[i].RestartPolicy}
	}
	return out
}

func trimNode(n *v1.Node) {
	trimMeta(&n.ObjectMeta)
	n.Spec = v1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints}
	var conds []v1.NodeCondition
	for _, c := range n.Status.Conditions {
		conds = append(conds, v1.NodeCondition{Type: c.Type, Status: c.Status, Reason: c.Reason, LastTransitionTime: c.LastTransitionTime})
	}
	n.Status = v1.NodeStatus{Allocatable: n.Status.Allocatable, Conditions: conds}
}
