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
