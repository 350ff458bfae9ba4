package framework

import (
	"context"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/sets"
)

// Score bounds: every score plugin's normalized scores lie in [MinNodeScore, MaxNodeScore].
const (
	MinNodeScore int64 = 0
	MaxNodeScore int64 = 100
)

// Plugin is anything with a name.
type Plugin interface {
	Name() string
}

// QueuedPodInfo is a pod waiting in the scheduling queue.
type QueuedPodInfo struct {
	*PodInfo
	// Timestamp is when the pod was (re)added to the queue: its arrival
	// order among pods of equal priority.
	Timestamp time.Time
	// Attempts counts scheduling attempts; it drives the backoff.
	Attempts int
	// InitialAttemptTimestamp is the first time the pod was popped.
	InitialAttemptTimestamp *time.Time
	// UnschedulablePlugins are the plugins that rejected the pod in its
	// last attempt; only cluster events they care about move it back.
	UnschedulablePlugins sets.Set[string]
}

// QueueSortPlugin orders the active queue.
type QueueSortPlugin interface {
	Plugin
	Less(a, b *QueuedPodInfo) bool
}

// LessFunc orders queued pods.
type LessFunc func(a, b *QueuedPodInfo) bool

// PreFilterPlugin computes per-pod data once per attempt. It may return
// Skip to skip its Filter, or reject the pod outright.
type PreFilterPlugin interface {
	Plugin
	PreFilter(ctx context.Context, state *CycleState, pod *v1.Pod) *Status
	// PreFilterExtensions returns nil or the hooks preemption uses to
	// update the plugin's CycleState when it simulates adding or removing
	// a pod on a node.
	PreFilterExtensions() PreFilterExtensions
}

// PreFilterExtensions keep a plugin's CycleState consistent when preemption
// or nominated pods change a node's pods during a simulation.
type PreFilterExtensions interface {
	AddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status
}

// FilterPlugin decides whether the pod can run on a node.
type FilterPlugin interface {
	Plugin
	Filter(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) *Status
}

// PostFilterResult is what a PostFilter plugin (preemption) decided, as
// data: the node nominated for the pod and the pods to evict from it.
type PostFilterResult struct {
	NominatedNodeName string
	Victims           []*v1.Pod
}

// PostFilterPlugin runs when no node fits.
type PostFilterPlugin interface {
	Plugin
	PostFilter(ctx context.Context, state *CycleState, pod *v1.Pod, statuses NodeToStatus) (*PostFilterResult, *Status)
}

// PreScorePlugin computes per-pod scoring data once, over the feasible nodes.
type PreScorePlugin interface {
	Plugin
	PreScore(ctx context.Context, state *CycleState, pod *v1.Pod, nodes []*NodeInfo) *Status
}

// ScorePlugin ranks feasible nodes.
type ScorePlugin interface {
	Plugin
	Score(ctx context.Context, state *CycleState, pod *v1.Pod, nodeInfo *NodeInfo) (int64, *Status)
	// ScoreExtensions returns nil or the plugin's NormalizeScore.
	ScoreExtensions() ScoreExtensions
}

// ScoreExtensions normalizes a plugin's scores into [0, 100].
type ScoreExtensions interface {
	NormalizeScore(ctx context.Context, state *CycleState, pod *v1.Pod, scores NodeScoreList) *Status
}

// NodeScore is one node's score.
type NodeScore struct {
	Name  string
	Score int64
}

// NodeScoreList is the scores of all feasible nodes.
type NodeScoreList []NodeScore

// EventResource is the kind of object a cluster event is about.
type EventResource string

// Event resources.
const (
	// AssignedPod is a pod bound (or assumed) to a node.
	AssignedPod EventResource = "AssignedPod"
	// UnscheduledPod is a pod waiting to be scheduled.
	UnscheduledPod EventResource = "UnscheduledPod"
	Node           EventResource = "Node"
	// WildCard matches any resource.
	WildCard EventResource = "*"
)

// ActionType is a bitmask of what happened to the object.
type ActionType int64

// Action types.
const (
	Add ActionType = 1 << iota
	Delete
	UpdateNodeAllocatable
	UpdateNodeLabel
	UpdateNodeTaint
	UpdateNodeCondition
	UpdatePodLabel
	UpdatePodScaleDown
	UpdatePodOther

	UpdateNode = UpdateNodeAllocatable | UpdateNodeLabel | UpdateNodeTaint | UpdateNodeCondition
	Update     = UpdateNode | UpdatePodLabel | UpdatePodScaleDown | UpdatePodOther
	All        = Add | Delete | Update
)

// ClusterEvent is something that happened in the cluster that may make
// unschedulable pods schedulable.
type ClusterEvent struct {
	Resource   EventResource
	ActionType ActionType
	Label      string
}

// Match reports whether e (registered interest) covers the event ev.
func (e ClusterEvent) Match(ev ClusterEvent) bool {
	return (e.Resource == WildCard || e.Resource == ev.Resource) && e.ActionType&ev.ActionType != 0
}

// Well-known events.
var (
	EventUnschedulableTimeout = ClusterEvent{Resource: WildCard, ActionType: All, Label: "UnschedulableTimeout"}
	EventForceActivate        = ClusterEvent{Resource: WildCard, ActionType: All, Label: "ForceActivate"}
	EventAssignedPodDelete    = ClusterEvent{Resource: AssignedPod, ActionType: Delete, Label: "AssignedPodDelete"}
	EventAssignedPodAdd       = ClusterEvent{Resource: AssignedPod, ActionType: Add, Label: "AssignedPodAdd"}
	EventNodeAdd              = ClusterEvent{Resource: Node, ActionType: Add, Label: "NodeAdd"}
)

// EnqueueExtensions lists the cluster events after which a pod this plugin
// rejected may fit; other events leave such pods where they are.
type EnqueueExtensions interface {
	Plugin
	EventsToRegister() []ClusterEvent
}

// NodeInfoLister lists the NodeInfos of a snapshot.
type NodeInfoLister interface {
	List() ([]*NodeInfo, error)
	HavePodsWithAffinityList() ([]*NodeInfo, error)
	HavePodsWithRequiredAntiAffinityList() ([]*NodeInfo, error)
	Get(nodeName string) (*NodeInfo, error)
	// NumNodesWithImage is how many nodes list the image name in
	// status.images (ImageLocality).
	NumNodesWithImage(name string) int
}

// SharedLister gives plugins read access to the cycle's snapshot.
type SharedLister interface {
	NodeInfos() NodeInfoLister
}

// Victims are the pods preemption would evict on one node and how many of
// them violate a PodDisruptionBudget.
type Victims struct {
	Pods             []*v1.Pod
	NumPDBViolations int64
}

// PreemptionExtender is an HTTP scheduler extender as preemption sees it:
// those that support preemption are sent the candidates and may narrow or
// change them.
type PreemptionExtender interface {
	Name() string
	IsInterested(pod *v1.Pod) bool
	IsIgnorable() bool
	SupportsPreemption() bool
	ProcessPreemption(ctx context.Context, pod *v1.Pod, victims map[string]*Victims, nodes NodeInfoLister) (map[string]*Victims, error)
}

// PodNominator knows the pods nominated to run on each node by preemption.
type PodNominator interface {
	NominatedPodsForNode(nodeName string) []*PodInfo
}

// Handle is what plugins get from the framework at construction.
type Handle interface {
	SnapshotSharedLister() SharedLister
	Parallelizer() Parallelizer
	// RunFilterPluginsWithNominatedPods runs every filter plugin, counting
	// pods nominated to the node with priority at least the pod's.
	RunFilterPluginsWithNominatedPods(ctx context.Context, state *CycleState, pod *v1.Pod, info *NodeInfo) *Status
	RunPreFilterExtensionAddPod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToAdd *PodInfo, nodeInfo *NodeInfo) *Status
	RunPreFilterExtensionRemovePod(ctx context.Context, state *CycleState, podToSchedule *v1.Pod, podInfoToRemove *PodInfo, nodeInfo *NodeInfo) *Status
	// NamespaceLabels returns a namespace's labels (nil if unknown), for
	// affinity terms with a namespaceSelector.
	NamespaceLabels(namespace string) labels.Set
	// DefaultSelector selects the pods of pod's workload: the union of the
	// selectors of the Services, ReplicationControllers, ReplicaSets and
	// StatefulSets that select or own it (empty when none does), for
	// PodTopologySpread's default constraints.
	DefaultSelector(pod *v1.Pod) labels.Selector
	// Extenders are the configured HTTP extenders (preemption asks those
	// with a preempt verb).
	Extenders() []PreemptionExtender
	// PodDisruptionBudgets lists the cluster's PodDisruptionBudgets (none
	// when the API server does not serve policy/v1), for preemption.
	PodDisruptionBudgets() ([]*policyv1.PodDisruptionBudget, error)
	// The pods held at Permit.
	WaitingPodsHandle
}

// PluginFactory builds a plugin from its pluginConfig args (raw JSON, may
// be empty).
type PluginFactory func(args json.RawMessage, h Handle) (Plugin, error)

// Registry maps plugin names to factories. The one registry of kubeproof's
// plugins is plugins.NewInTreeRegistry.
type Registry map[string]PluginFactory

// DecodeArgs decodes raw args into out, leaving out's defaults when args is
// empty, rejecting unknown fields.
func DecodeArgs(args json.RawMessage, out any) error {
	if len(args) == 0 || string(args) == "null" {
		return nil
	}
	dec := json.NewDecoder(strings.NewReader(string(args)))
	dec.DisallowUnknownFields()
	return dec.Decode(out)
}

// NodeToStatus is each evaluated node's filter result.
type NodeToStatus map[string]*Status

// Diagnosis explains why a pod fits no node.
type Diagnosis struct {
	NodeToStatus         NodeToStatus
	UnschedulablePlugins sets.Set[string]
	// PreFilterMsg is set when a PreFilter plugin rejected the pod for all
	// nodes; PostFilterMsg is what preemption said.
	PreFilterMsg  string
	PostFilterMsg string
}

// FitError is the error of a pod that fits no node.
type FitError struct {
	Pod         *v1.Pod
	NumAllNodes int
	Diagnosis   Diagnosis
}

// NoNodeAvailableMsg starts every FitError message.
const NoNodeAvailableMsg = "0/%v nodes are available"

// Error renders the message exactly as kube-scheduler does:
// "0/5 nodes are available: 2 node(s) had untolerated taint {k: v}, 3
// Insufficient cpu. preemption: 0/5 nodes are available: 5 Preemption is not
// helpful for scheduling." The histogram counts each reason once per node
// and is sorted as strings.
func (f *FitError) Error() string {
	msg := fmt.Sprintf(NoNodeAvailableMsg+":", f.NumAllNodes)
	if f.Diagnosis.PreFilterMsg != "" {
		msg += " " + f.Diagnosis.PreFilterMsg + "."
	} else if h := ReasonHistogram(f.Diagnosis.NodeToStatus); h != "" {
		msg += " " + h + "."
	}
	if f.Diagnosis.PostFilterMsg != "" {
		msg += " " + f.Diagnosis.PostFilterMsg
		if !strings.HasSuffix(f.Diagnosis.PostFilterMsg, ".") {
			msg += "."
		}
	}
	return msg
}

// ReasonHistogram counts reasons over nodes: "3 Insufficient cpu, 2 node(s)
// were unschedulable", sorted as strings.
func ReasonHistogram(m NodeToStatus) string {
	counts := map[string]int{}
	for _, s := range m {
		for _, r := range s.Reasons() {
			counts[r]++
		}
	}
	parts := make([]string, 0, len(counts))
	for r, n := range counts {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// DefaultNormalizeScore scales scores so that the highest becomes maxPriority
// (and, if reverse, inverts them), as kube-scheduler's helper does.
func DefaultNormalizeScore(maxPriority int64, reverse bool, scores NodeScoreList) *Status {
	var maxCount int64
	for i := range scores {
		maxCount = max(maxCount, scores[i].Score)
	}
	if maxCount == 0 {
		if reverse {
			for i := range scores {
				scores[i].Score = maxPriority
			}
		}
		return nil
	}
	for i := range scores {
		s := scores[i].Score
		s = maxPriority * s / maxCount
		if reverse {
			s = maxPriority - s
		}
		scores[i].Score = s
	}
	return nil
}
