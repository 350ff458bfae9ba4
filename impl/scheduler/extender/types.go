package extender

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// The wire types of the scheduler extender protocol (upstream's
// k8s.io/kube-scheduler/extender/v1): JSON with Go field names, so an
// extender written for kube-scheduler works unchanged.

// MaxExtenderPriority is the highest score an extender gives; scores are
// scaled to the plugins' 0–100 range.
const MaxExtenderPriority int64 = 10

// ExtenderArgs is the body of filter and prioritize calls. Nodes is set for
// extenders that are not node-cache capable, NodeNames for those that are.
type ExtenderArgs struct {
	Pod       *v1.Pod
	Nodes     *v1.NodeList
	NodeNames *[]string
}

// FailedNodesMap maps a node name to why it failed.
type FailedNodesMap map[string]string

// ExtenderFilterResult is the answer to a filter call.
type ExtenderFilterResult struct {
	Nodes                      *v1.NodeList
	NodeNames                  *[]string
	FailedNodes                FailedNodesMap
	FailedAndUnresolvableNodes FailedNodesMap
	Error                      string
}

// HostPriority is one node's score from a prioritize call.
type HostPriority struct {
	Host  string
	Score int64
}

// HostPriorityList is the answer to a prioritize call.
type HostPriorityList []HostPriority

// ExtenderBindingArgs is the body of a bind call.
type ExtenderBindingArgs struct {
	PodName      string
	PodNamespace string
	PodUID       types.UID
	Node         string
}

// ExtenderBindingResult is the answer to a bind call.
type ExtenderBindingResult struct {
	Error string
}

// ExtenderPreemptionArgs is the body of a preempt call: the candidate
// victims per node, as pods (NodeNameToVictims) for extenders that are not
// node-cache capable, as UIDs (NodeNameToMetaVictims) for those that are.
type ExtenderPreemptionArgs struct {
	Pod                   *v1.Pod
	NodeNameToVictims     map[string]*Victims
	NodeNameToMetaVictims map[string]*MetaVictims
}

// ExtenderPreemptionResult is the answer to a preempt call: the nodes the
// extender accepts for preemption, with their victims (a subset or
// another choice), always as UIDs.
type ExtenderPreemptionResult struct {
	NodeNameToMetaVictims map[string]*MetaVictims
}

// Victims are the pods to preempt on one node and how many of them violate
// a PodDisruptionBudget.
type Victims struct {
	Pods             []*v1.Pod
	NumPDBViolations int64
}

// MetaPod identifies a pod by UID.
type MetaPod struct {
	UID string
}

// MetaVictims are Victims by UID.
type MetaVictims struct {
	Pods             []*MetaPod
	NumPDBViolations int64
}
