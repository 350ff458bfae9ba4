package scheduler

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// The scheduler's informers keep every pod and node of the cluster in
// memory, so before an object enters an informer cache it is trimmed to the
// fields scheduling reads (an informer transform, as kube-scheduler strips
// managedFields). What stays:
//
//   - of a pod's metadata: name, namespace, uid, resourceVersion, labels,
//     creation and deletion timestamps and the controller owner reference
//     (PodTopologySpread's default selector); no annotations, finalizers or
//     managedFields;
//   - of a pod's spec: nodeName, schedulerName, priority, preemptionPolicy,
//     nodeSelector, affinity, tolerations, topologySpreadConstraints,
//     schedulingGates, overhead, pod-level resources, hostNetwork, the
//     volumes VolumeRestrictions checks (GCE PD, AWS EBS, RBD, iSCSI), and of
//     the containers and init containers: name, image (ImageLocality),
//     ports, resources and restartPolicy;
//   - of a pod's status: phase, nominatedNodeName, startTime and — for a
//     pod not yet assigned — its PodScheduled condition (the scheduler
//     writes it only when it changes); of a pod being resized in place
//     (fw.Resizing: its node reports other requests than its spec's, or
//     pod-level ones above them), the containers' names, allocated
//     resources and actual requests, the pod-level allocatedResources and
//     resources' requests and its PodResizePending condition's type,
//     status and reason, which its requests are computed from (every
//     other pod's pod-level status, which the kubelet reports for all,
//     gives its spec's requests and is dropped);
//   - of a node: labels, spec.unschedulable and spec.taints,
//     status.allocatable, the conditions' types and statuses (requeueing on
//     condition changes) and the images' names and sizes (ImageLocality);
//   - of Services, ReplicationControllers, ReplicaSets and StatefulSets:
//     name, namespace and selector (PodTopologySpread's defaults);
//   - of other objects: everything but managedFields.
//
// The trimmed objects are never written back: the scheduler only binds
// (pods/binding), patches status and deletes with a UID precondition.
//
// Pods of one workload carry equal labels, resource requests and (defaulted)
// tolerations, and nodes of one kind equal allocatable resources, so the
// transform also interns those values: equal maps, slices and strings
// (namespaces, node and scheduler names, images) become one shared
// instance. Informer objects are read-only (everyone who changes one copies
// it first), which is what makes sharing safe.

// Transformer trims and interns the objects of one scheduler's informers.
type Transformer struct {
	labels      interner[map[string]string]
	resources   interner[v1.ResourceList]
	tolerations interner[[]v1.Toleration]
	containers  interner[[]v1.Container]
	strings     interner[string]
}

// NewTransformer returns a Transformer with empty intern tables.
func NewTransformer() *Transformer {
	return &Transformer{strings: interner[string]{limit: maxInternedStrings}}
}

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
		t.internNode(o)
	case *v1.Service:
		*o = v1.Service{ObjectMeta: workloadMeta(&o.ObjectMeta), Spec: v1.ServiceSpec{Selector: o.Spec.Selector}}
	case *v1.ReplicationController:
		*o = v1.ReplicationController{ObjectMeta: workloadMeta(&o.ObjectMeta), Spec: v1.ReplicationControllerSpec{Selector: o.Spec.Selector}}
	case *appsv1.ReplicaSet:
		*o = appsv1.ReplicaSet{ObjectMeta: workloadMeta(&o.ObjectMeta), Spec: appsv1.ReplicaSetSpec{Selector: o.Spec.Selector}}
	case *appsv1.StatefulSet:
		*o = appsv1.StatefulSet{ObjectMeta: workloadMeta(&o.ObjectMeta), Spec: appsv1.StatefulSetSpec{Selector: o.Spec.Selector}}
	case metav1.Object:
		o.SetManagedFields(nil)
	}
	return obj, nil
}

func (t *Transformer) internPod(p *v1.Pod) {
	p.APIVersion, p.Kind = t.str(p.APIVersion), t.str(p.Kind)
	p.Namespace = t.str(p.Namespace)
	p.Labels = t.labels.intern(p.Labels, labelsKey)
	p.Spec.NodeName = t.str(p.Spec.NodeName)
	p.Spec.SchedulerName = t.str(p.Spec.SchedulerName)
	p.Spec.Tolerations = t.tolerations.intern(p.Spec.Tolerations, tolerationsKey)
	p.Status.NominatedNodeName = t.str(p.Status.NominatedNodeName)
	p.Status.Phase = v1.PodPhase(t.str(string(p.Status.Phase)))
	for _, cs := range [][]v1.Container{p.Spec.Containers, p.Spec.InitContainers} {
		for i := range cs {
			cs[i].Name = t.str(cs[i].Name)
			cs[i].Image = t.str(cs[i].Image)
			cs[i].Resources.Requests = t.resources.intern(cs[i].Resources.Requests, resourceListKey)
			cs[i].Resources.Limits = t.resources.intern(cs[i].Resources.Limits, resourceListKey)
		}
	}
	// Pods of one workload have equal (trimmed) containers.
	p.Spec.Containers = t.containers.intern(p.Spec.Containers, containersKey)
	p.Spec.InitContainers = t.containers.intern(p.Spec.InitContainers, containersKey)
	for i := range p.Status.Conditions {
		c := &p.Status.Conditions[i]
		c.Type = v1.PodConditionType(t.str(string(c.Type)))
		c.Status = v1.ConditionStatus(t.str(string(c.Status)))
		c.Reason = t.str(c.Reason)
	}
}

func (t *Transformer) internNode(n *v1.Node) {
	n.APIVersion, n.Kind = t.str(n.APIVersion), t.str(n.Kind)
	n.Status.Allocatable = t.resources.intern(n.Status.Allocatable, resourceListKey)
	n.Name = t.str(n.Name)
	if h, ok := n.Labels[v1.LabelHostname]; ok && h == n.Name && len(n.Labels) > 0 {
		n.Labels[v1.LabelHostname] = n.Name
	}
	for i := range n.Status.Conditions {
		c := &n.Status.Conditions[i]
		c.Type = v1.NodeConditionType(t.str(string(c.Type)))
		c.Status = v1.ConditionStatus(t.str(string(c.Status)))
	}
}

// str returns the shared copy of s.
func (t *Transformer) str(s string) string {
	return t.strings.intern(s, func(s string) (string, bool) { return s, s != "" })
}

// maxInterned bounds each intern table: once full, values not in it stay
// unshared (a cluster whose pods all differ gains nothing from interning,
// and must not pay for a table that grows with it).
const maxInterned = 4096

// maxInternedStrings bounds the string table, which also holds node names.
const maxInternedStrings = 16384

// interner maps a canonical key to the first value seen with it.
type interner[T any] struct {
	mu    sync.Mutex
	table map[string]T
	// limit overrides maxInterned when set.
	limit int
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
	limit := in.limit
	if limit == 0 {
		limit = maxInterned
	}
	if len(in.table) < limit {
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

// containersKey covers every field trimContainers keeps; requests and
// limits are interned first, so their keys are their canonical strings.
func containersKey(cs []v1.Container) (string, bool) {
	if len(cs) == 0 {
		return "", false
	}
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "%s\x00%s\x00", c.Name, c.Image)
		for _, p := range c.Ports {
			fmt.Fprintf(&b, "%s/%d/%s/%d/%s,", p.Name, p.ContainerPort, p.Protocol, p.HostPort, p.HostIP)
		}
		req, _ := resourceListKey(c.Resources.Requests)
		lim, _ := resourceListKey(c.Resources.Limits)
		fmt.Fprintf(&b, "\x00%s\x00%s\x00", req, lim)
		for _, cl := range c.Resources.Claims {
			fmt.Fprintf(&b, "%s/%s,", cl.Name, cl.Request)
		}
		if c.RestartPolicy != nil {
			b.WriteString(string(*c.RestartPolicy))
		}
		b.WriteByte(1)
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

// workloadMeta is what is kept of a Service's or workload controller's
// metadata: only its selector is read.
func workloadMeta(m *metav1.ObjectMeta) metav1.ObjectMeta {
	return metav1.ObjectMeta{Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion}
}

// trimObjectMeta keeps what the scheduler reads of a pod's or node's
// metadata.
func trimObjectMeta(m *metav1.ObjectMeta) {
	kept := metav1.ObjectMeta{
		Name: m.Name, Namespace: m.Namespace, UID: m.UID, ResourceVersion: m.ResourceVersion,
		Labels: m.Labels, CreationTimestamp: m.CreationTimestamp, DeletionTimestamp: m.DeletionTimestamp,
	}
	if ref := metav1.GetControllerOfNoCopy(m); ref != nil {
		kept.OwnerReferences = []metav1.OwnerReference{*ref}
	}
	*m = kept
}

func trimPod(p *v1.Pod) {
	trimObjectMeta(&p.ObjectMeta)
	s := &p.Spec
	p.Spec = v1.PodSpec{
		Containers:                trimContainers(s.Containers),
		InitContainers:            trimContainers(s.InitContainers),
		Volumes:                   conflictingVolumes(s.Volumes),
		NodeSelector:              s.NodeSelector,
		NodeName:                  s.NodeName,
		HostNetwork:               s.HostNetwork,
		Affinity:                  s.Affinity,
		SchedulerName:             s.SchedulerName,
		Tolerations:               s.Tolerations,
		Priority:                  s.Priority,
		PreemptionPolicy:          s.PreemptionPolicy,
		Overhead:                  s.Overhead,
		TopologySpreadConstraints: s.TopologySpreadConstraints,
		SchedulingGates:           s.SchedulingGates,
		Resources:                 s.Resources,
	}
	var conds []v1.PodCondition
	if p.Spec.NodeName == "" {
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodScheduled {
				conds = []v1.PodCondition{c}
			}
		}
	}
	var statuses, initStatuses []v1.ContainerStatus
	var allocated v1.ResourceList
	var actual *v1.ResourceRequirements
	if fw.Resizing(p) {
		statuses, initStatuses = resizeStatuses(p.Status.ContainerStatuses), resizeStatuses(p.Status.InitContainerStatuses)
		allocated = p.Status.AllocatedResources
		if r := p.Status.Resources; r != nil {
			actual = &v1.ResourceRequirements{Requests: r.Requests}
		}
		for _, c := range p.Status.Conditions {
			if c.Type == v1.PodResizePending {
				conds = append(conds, v1.PodCondition{Type: c.Type, Status: c.Status, Reason: c.Reason})
			}
		}
	}
	p.Status = v1.PodStatus{
		Phase:                 p.Status.Phase,
		Conditions:            conds,
		NominatedNodeName:     p.Status.NominatedNodeName,
		StartTime:             p.Status.StartTime,
		ContainerStatuses:     statuses,
		InitContainerStatuses: initStatuses,
		AllocatedResources:    allocated,
		Resources:             actual,
	}
}

// resizeStatuses keeps of a resizing pod's container statuses what its
// requests are computed from (fw.PodRequests): the name, the allocated
// resources and the actual requests.
func resizeStatuses(ss []v1.ContainerStatus) []v1.ContainerStatus {
	if len(ss) == 0 {
		return nil
	}
	out := make([]v1.ContainerStatus, len(ss))
	for i := range ss {
		out[i] = v1.ContainerStatus{Name: ss[i].Name, AllocatedResources: ss[i].AllocatedResources}
		if r := ss[i].Resources; r != nil {
			out[i].Resources = &v1.ResourceRequirements{Requests: r.Requests}
		}
	}
	return out
}

// conflictingVolumes keeps the inline volumes VolumeRestrictions checks.
func conflictingVolumes(vs []v1.Volume) []v1.Volume {
	var out []v1.Volume
	for _, v := range vs {
		src := v1.VolumeSource{GCEPersistentDisk: v.GCEPersistentDisk, AWSElasticBlockStore: v.AWSElasticBlockStore, RBD: v.RBD, ISCSI: v.ISCSI}
		if src != (v1.VolumeSource{}) {
			out = append(out, v1.Volume{Name: v.Name, VolumeSource: src})
		}
	}
	return out
}

// trimContainers keeps what resource fitting, host ports and image
// locality read.
func trimContainers(cs []v1.Container) []v1.Container {
	if len(cs) == 0 {
		return nil
	}
	out := make([]v1.Container, len(cs))
	for i := range cs {
		out[i] = v1.Container{Name: cs[i].Name, Image: cs[i].Image, Ports: cs[i].Ports, Resources: cs[i].Resources, RestartPolicy: cs[i].RestartPolicy}
	}
	return out
}

func trimNode(n *v1.Node) {
	trimObjectMeta(&n.ObjectMeta)
	n.Spec = v1.NodeSpec{Unschedulable: n.Spec.Unschedulable, Taints: n.Spec.Taints}
	var conds []v1.NodeCondition
	if len(n.Status.Conditions) > 0 {
		conds = make([]v1.NodeCondition, len(n.Status.Conditions))
		for i, c := range n.Status.Conditions {
			conds[i] = v1.NodeCondition{Type: c.Type, Status: c.Status}
		}
	}
	n.Status = v1.NodeStatus{Allocatable: n.Status.Allocatable, Conditions: conds, Images: n.Status.Images}
}
