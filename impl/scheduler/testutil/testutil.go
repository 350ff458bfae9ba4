// Package testutil builds pods, nodes and frameworks for the scheduler's
// tests and benchmarks.
package testutil

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// PodWrapper builds a pod fluently.
type PodWrapper struct{ v1.Pod }

// Pod starts a pod in namespace "default" with one container.
func Pod(name string) *PodWrapper {
	return &PodWrapper{v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name)},
		Spec: v1.PodSpec{
			SchedulerName: config.DefaultSchedulerName,
			Containers:    []v1.Container{{Name: "c", Image: "nginx", Resources: v1.ResourceRequirements{Requests: v1.ResourceList{}}}},
		},
	}}
}

// Obj returns the pod.
func (p *PodWrapper) Obj() *v1.Pod { return &p.Pod }

// Namespace sets the namespace.
func (p *PodWrapper) Namespace(ns string) *PodWrapper { p.Pod.Namespace = ns; return p }

// Req adds resource requests to the first container ("cpu", "500m", ...).
func (p *PodWrapper) Req(kv ...string) *PodWrapper {
	for i := 0; i+1 < len(kv); i += 2 {
		p.Spec.Containers[0].Resources.Requests[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	return p
}

// Node sets spec.nodeName.
func (p *PodWrapper) Node(n string) *PodWrapper { p.Spec.NodeName = n; return p }

// Label adds a label.
func (p *PodWrapper) Label(k, v string) *PodWrapper {
	if p.Labels == nil {
		p.Labels = map[string]string{}
	}
	p.Labels[k] = v
	return p
}

// Priority sets spec.priority.
func (p *PodWrapper) Priority(v int32) *PodWrapper { p.Spec.Priority = &v; return p }

// NodeSelector sets spec.nodeSelector.
func (p *PodWrapper) NodeSelector(m map[string]string) *PodWrapper { p.Spec.NodeSelector = m; return p }

// Toleration adds a toleration.
func (p *PodWrapper) Toleration(t v1.Toleration) *PodWrapper {
	p.Spec.Tolerations = append(p.Spec.Tolerations, t)
	return p
}

// HostPort adds a host port to the first container.
func (p *PodWrapper) HostPort(port int32, proto v1.Protocol, ip string) *PodWrapper {
	p.Spec.Containers[0].Ports = append(p.Spec.Containers[0].Ports, v1.ContainerPort{ContainerPort: port, HostPort: port, Protocol: proto, HostIP: ip})
	return p
}

// Affinity sets spec.affinity.
func (p *PodWrapper) Affinity(a *v1.Affinity) *PodWrapper { p.Spec.Affinity = a; return p }

// Spread adds a topology spread constraint selecting label key=value.
func (p *PodWrapper) Spread(maxSkew int32, key string, when v1.UnsatisfiableConstraintAction, selKey, selValue string) *PodWrapper {
	p.Spec.TopologySpreadConstraints = append(p.Spec.TopologySpreadConstraints, v1.TopologySpreadConstraint{
		MaxSkew: maxSkew, TopologyKey: key, WhenUnsatisfiable: when,
		LabelSelector: &metav1.LabelSelector{MatchLabels: map[string]string{selKey: selValue}},
	})
	return p
}

// NodeWrapper builds a node fluently.
type NodeWrapper struct{ v1.Node }

// Node starts a node with 110 pods allocatable and no cpu or memory.
func Node(name string) *NodeWrapper {
	n := &NodeWrapper{v1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID("node-" + name),
		Labels: map[string]string{v1.LabelHostname: name}}}}
	n.Status.Allocatable = v1.ResourceList{v1.ResourcePods: resource.MustParse("110")}
	return n
}

// Obj returns the node.
func (n *NodeWrapper) Obj() *v1.Node { return &n.Node }

// Capacity sets allocatable resources ("cpu", "4", ...).
func (n *NodeWrapper) Capacity(kv ...string) *NodeWrapper {
	for i := 0; i+1 < len(kv); i += 2 {
		n.Status.Allocatable[v1.ResourceName(kv[i])] = resource.MustParse(kv[i+1])
	}
	n.Status.Capacity = n.Status.Allocatable
	return n
}

// Label adds a label.
func (n *NodeWrapper) Label(k, v string) *NodeWrapper { n.Labels[k] = v; return n }

// Taint adds a taint.
func (n *NodeWrapper) Taint(key, value string, effect v1.TaintEffect) *NodeWrapper {
	n.Spec.Taints = append(n.Spec.Taints, v1.Taint{Key: key, Value: value, Effect: effect})
	return n
}

// Unschedulable cordons the node.
func (n *NodeWrapper) Unschedulable() *NodeWrapper { n.Spec.Unschedulable = true; return n }

// NodeInfo builds a NodeInfo of node with pods.
func NodeInfo(node *v1.Node, pods ...*v1.Pod) *fw.NodeInfo {
	ni := fw.NewNodeInfo(pods...)
	ni.SetNode(node)
	return ni
}
