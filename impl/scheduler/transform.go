package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

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
//
// Pods of one workload carry equal labels, resource requests and (defaulted)
// tolerations, and nodes of one kind equal allocatable resources, so the
// transform also interns those values: equal maps and slices become one
// shared instance. Informer objects are read-only (everyone who changes one
// copies it first), which is what makes sharing safe.

const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// Transformer trims and interns the objects of one scheduler's informers.
type Transformer struct {
	labels      interner[map[string]string]
	resources   interner[v1.ResourceList]
	tolerations interner[[]v1.Toleration]
}

// NewTransformer returns a Transformer with empty intern tables.
func NewTransformer() *Transformer { return &Transformer{} }

// Transform trims a pod or a node as described above (in place: an
// informer hands its transform a freshly decoded object no one else holds).
// Other objects, and tombstones, only lose managedFields.
func (t *Transformer) Transform(obj any) (any, error) {
	switch o := obj.(type) {
	case *v1.Pod:
		trimPod(o)
		t.internPod(o)
	case *v1.Node:
		trimNode(o)
		o.Status.Allocatable = t.resources.intern(o.Status.Allocatable, resourceListKey)
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

func (t *Transformer) internPod(p *v1.Pod) {
	p.Labels = t.labels.intern(p.Labels, labelsKey)
	p.Spec.Tolerations = t.tolerations.intern(p.Spec.Tolerations, tolerationsKey)
	for _, cs := range [][]v1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			cs[i].Resources.Requests = t.resources.intern(cs[i].Resources.Requests, resourceListKey)
			cs[i].Resources.Limits = t.resources.intern(cs[i].Resources.Limits, resourceListKey)
		}
	}
}

// maxInterned bounds each intern table: once full, values not in it stay
// unshared (a cluster whose pods all differ gains nothing from interning,
// and must not pay for a table that grows with it).
const maxInterned = 4096

// interner maps a canonical key to the first value seen with it.
type interner[T any] struct {
	mu    sync.Mutex
	table map[string]T
}

// intern returns the shared value equal to v (v itself the first time).
// Empty values are returned as they are.
func (in *interner[T]) intern(v T, key func(T) (string, bool)) T {
	k, ok := key(v)
	if !ok {
		return v
	}
	in.mu.Lock()
	defer in.mu.Unlock()
	if shared, found := in.table[k]; found {
		return shared
	}
	if in.table == nil {
		in.table = map[string]T{}
	}
	if len(in.table) < maxInterned {
		in.table[k] = v
	}
	return v
}

func labelsKey(m map[string]string) (string, bool) {
	if len(m) == 0 {
		return "", false
	}
	keys := slices.Sorted(maps.Keys(m))
	var b strings.Builder
	for _, k := range keys {
		b.WriteString(k)
		b.WriteByte(0)
		b.WriteString(m[k])
		b.WriteByte(0)
	}
	return b.String(), true
}

func resourceListKey(rl v1.ResourceList) (string, bool) {
	if len(rl) == 0 {
		return "", false
	}
	keys := slices.Sorted(maps.Keys(rl))
	var b strings.Builder
	for _, k := range keys {
		q := rl[k]
		b.WriteString(string(k))
		b.WriteByte(0)
		b.WriteString(q.String())
		b.WriteByte(0)
	}
	return b.String(), true
}

func tolerationsKey(ts []v1.Toleration) (string, bool) {
	if len(ts) == 0 {
		return "", false
	}
	var b strings.Builder
	for _, t := range ts {
		fmt.Fprintf(&b, "%s\x00%s\x00%s\x00%s\x00", t.Key, t.Operator, t.Value, t.Effect)
		if t.TolerationSeconds != nil {
			fmt.Fprintf(&b, "%d", *t.TolerationSeconds)
		} else {
			b.WriteByte('-')
		}
		b.WriteByte(0)
	}
	return b.String(), true
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
