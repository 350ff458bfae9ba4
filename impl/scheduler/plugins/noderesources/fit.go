// Package noderesources holds the NodeResourcesFit plugin (Filter: the pod's
// requests — fw.PodRequests, pod-level requests included — fit the node's
// free allocatable cpu, memory, ephemeral storage, pod count, hugepages and
// extended resources; Score: LeastAllocated, MostAllocated or
// RequestedToCapacityRatio) and NodeResourcesBalancedAllocation (Score:
// prefer nodes whose cpu and memory utilisation stay balanced). Fit's
// Filter enforces SCHED-2 (NodeCapacity) together with the cache's assumed
// pods.
package noderesources

import (
	"context"
	"encoding/json"
	"fmt"

	v1 "k8s.io/api/core/v1"
	resourcehelper "k8s.io/component-helpers/resource"

	"github.com/kubeproof/kubeproof/impl/faults"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// FitName is the Fit plugin's name.
const FitName = "NodeResourcesFit"

// Scoring strategy types, as in KubeSchedulerConfiguration.
const (
	LeastAllocated           = "LeastAllocated"
	MostAllocated            = "MostAllocated"
	RequestedToCapacityRatio = "RequestedToCapacityRatio"
)

// ResourceSpec is a resource and its weight in scoring.
type ResourceSpec struct {
	Name   v1.ResourceName `json:"name"`
	Weight int64           `json:"weight,omitempty"`
}

// UtilizationShapePoint is a point of RequestedToCapacityRatio's shape.
type UtilizationShapePoint struct {
	Utilization int32 `json:"utilization"`
	Score       int32 `json:"score"`
}

// RequestedToCapacityRatioParam configures that strategy.
type RequestedToCapacityRatioParam struct {
	Shape []UtilizationShapePoint `json:"shape,omitempty"`
}

// ScoringStrategy selects how Fit scores.
type ScoringStrategy struct {
	Type                     string                         `json:"type,omitempty"`
	Resources                []ResourceSpec                 `json:"resources,omitempty"`
	RequestedToCapacityRatio *RequestedToCapacityRatioParam `json:"requestedToCapacityRatio,omitempty"`
}

// FitArgs are NodeResourcesFitArgs.
type FitArgs struct {
	IgnoredResources      []string         `json:"ignoredResources,omitempty"`
	IgnoredResourceGroups []string         `json:"ignoredResourceGroups,omitempty"`
	ScoringStrategy       *ScoringStrategy `json:"scoringStrategy,omitempty"`
}

// DefaultResources are cpu and memory, weight 1 each.
var DefaultResources = []ResourceSpec{{Name: v1.ResourceCPU, Weight: 1}, {Name: v1.ResourceMemory, Weight: 1}}

// Fit is the NodeResourcesFit plugin.
type Fit struct {
	ignored       map[string]bool
	ignoredGroups map[string]bool
	strategy      string
	resources     []ResourceSpec
	shape         []UtilizationShapePoint
}

// NewFit is the plugin factory.
func NewFit(raw json.RawMessage, _ fw.Handle) (fw.Plugin, error) {
	args := FitArgs{}
	if err := fw.DecodeArgs(raw, &args); err != nil {
		return nil, fmt.Errorf("decoding NodeResourcesFitArgs: %w", err)
	}
	f := &Fit{ignored: map[string]bool{}, ignoredGroups: map[string]bool{}, strategy: LeastAllocated, resources: DefaultResources}
	for _, r := range args.IgnoredResources {
		f.ignored[r] = true
	}
	for _, g := range args.IgnoredResourceGroups {
		f.ignoredGroups[g] = true
	}
	if s := args.ScoringStrategy; s != nil {
		if s.Type != "" {
			f.strategy = s.Type
		}
		if len(s.Resources) > 0 {
			f.resources = s.Resources
		}
		if s.RequestedToCapacityRatio != nil {
			f.shape = s.RequestedToCapacityRatio.Shape
		}
	}
	switch f.strategy {
	case LeastAllocated, MostAllocated:
	case RequestedToCapacityRatio:
		if len(f.shape) == 0 {
			return nil, fmt.Errorf("scoringStrategy.requestedToCapacityRatio.shape is required for %s", RequestedToCapacityRatio)
		}
	default:
		return nil, fmt.Errorf("scoringStrategy.type: unsupported value %q", f.strategy)
	}
	for i, r := range f.resources {
		if r.Weight == 0 {
			f.resources[i].Weight = 1
		}
		if r.Weight < 0 || r.Weight > 100 {
			return nil, fmt.Errorf("resource %q weight %d not in range [1, 100]", r.Name, r.Weight)
		}
	}
	return f, nil
}

// Name implements fw.Plugin.
func (*Fit) Name() string { return FitName }

// EventsToRegister implements fw.EnqueueExtensions.
func (*Fit) EventsToRegister() []fw.ClusterEvent {
	return []fw.ClusterEvent{
		{Resource: fw.AssignedPod, ActionType: fw.Delete | fw.UpdatePodScaleDown},
		{Resource: fw.Node, ActionType: fw.Add | fw.UpdateNodeAllocatable},
	}
}

const preFilterKey fw.StateKey = "PreFilter" + FitName

type preFilterState struct {
	fw.Resource
	nonZero fw.Resource
}

func (s *preFilterState) Clone() fw.StateData { return s }

// PreFilter implements fw.PreFilterPlugin: computes the pod's requests once
// (fw.PodRequests: pod-level requests of cpu, memory and hugepages count),
// and the cpu and memory it is scored with (scoringNonZero).
func (*Fit) PreFilter(_ context.Context, state *fw.CycleState, pod *v1.Pod) *fw.Status {
	r, nz := fw.PodRequests(pod)
	if resourcehelper.IsPodLevelRequestsSet(pod) {
		nz = scoringNonZero(pod)
	}
	state.Write(preFilterKey, &preFilterState{Resource: r, nonZero: nz})
	return nil
}

// scoringNonZero is the cpu and memory the pod being scheduled is scored
// with by the strategies that score non-zero requests, as upstream's
// resourceAllocationScorer (calculatePodResourceRequest): every container
// naming no cpu or no memory counts the defaults (100m, 200Mi), pod-level
// requests still win. It differs from fw.PodRequests' non-zero form, which
// is what a NodeInfo adds up for its pods, only for a pod with pod-level
// requests, where that form fills in a default only for a resource neither
// the pod level nor any container names.
func scoringNonZero(pod *v1.Pod) fw.Resource {
	rl := resourcehelper.PodRequests(pod, resourcehelper.PodResourcesOptions{NonMissingContainerRequests: fw.NonZeroDefaults})
	return fw.Resource{MilliCPU: rl.Cpu().MilliValue(), Memory: rl.Memory().Value()}
}

// PreFilterExtensions implements fw.PreFilterPlugin.
func (*Fit) PreFilterExtensions() fw.PreFilterExtensions { return nil }

func getPreFilterState(state *fw.CycleState) (*preFilterState, error) {
	d, err := state.Read(preFilterKey)
	if err != nil {
		return nil, fmt.Errorf("reading %q from cycleState: %w", preFilterKey, err)
	}
	return d.(*preFilterState), nil
}

// InsufficientResource is one resource the node lacks.
type InsufficientResource struct {
	ResourceName v1.ResourceName
	Reason       string
	Requested    int64
	Used         int64
	Capacity     int64
	// Unresolvable: the node's whole allocatable is less than the request,
	// so evicting pods cannot help.
	Unresolvable bool
}

// Filter implements fw.FilterPlugin.
func (f *Fit) Filter(_ context.Context, state *fw.CycleState, _ *v1.Pod, nodeInfo *fw.NodeInfo) *fw.Status {
	s, err := getPreFilterState(state)
	if err != nil {
		return fw.AsStatus(err)
	}
	insufficient := f.fits(&s.Resource, nodeInfo)
	if len(insufficient) == 0 {
		return nil
	}
	code := fw.UnschedulableAndUnresolvable
	reasons := make([]string, 0, len(insufficient))
	for _, r := range insufficient {
		reasons = append(reasons, r.Reason)
		if !r.Unresolvable {
			code = fw.Unschedulable
		}
	}
	return fw.NewStatus(code, reasons...)
}

// Fits reports what the node lacks for the pod (empty: it fits).
func Fits(pod *v1.Pod, nodeInfo *fw.NodeInfo) []InsufficientResource {
	r, _ := fw.PodRequests(pod)
	return (&Fit{}).fits(&r, nodeInfo)
}

func (f *Fit) fits(req *fw.Resource, n *fw.NodeInfo) []InsufficientResource {
	var out []InsufficientResource
	alloc, used := &n.Allocatable, &n.Requested
	// Mutation faults.SchedulerIgnoresPodCapacity drops this check (SCHED-2).
	if len(n.Pods)+1 > alloc.AllowedPodNumber && !faults.Enabled(faults.SchedulerIgnoresPodCapacity) {
		out = append(out, InsufficientResource{ResourceName: v1.ResourcePods, Reason: "Too many pods",
			Requested: 1, Used: int64(len(n.Pods)), Capacity: int64(alloc.AllowedPodNumber), Unresolvable: alloc.AllowedPodNumber < 1})
	}
	check := func(name v1.ResourceName, want, have, capacity int64) {
		if want > 0 && want > capacity-have {
			out = append(out, InsufficientResource{ResourceName: name, Reason: "Insufficient " + string(name),
				Requested: want, Used: have, Capacity: capacity, Unresolvable: want > capacity})
		}
	}
	check(v1.ResourceCPU, req.MilliCPU, used.MilliCPU, alloc.MilliCPU)
	check(v1.ResourceMemory, req.Memory, used.Memory, alloc.Memory)
	check(v1.ResourceEphemeralStorage, req.EphemeralStorage, used.EphemeralStorage, alloc.EphemeralStorage)
	for name, want := range req.ScalarResources {
		// Only extended resources may be ignored (upstream's
		// fitsRequest): hugepages and attachable volumes are always
		// checked.
		if fw.IsExtendedResourceName(name) {
			if f.ignored[string(name)] {
				continue
			}
			if i := indexByte(string(name), '/'); i >= 0 && f.ignoredGroups[string(name)[:i]] {
				continue
			}
		}
		check(name, want, used.ScalarResources[name], alloc.ScalarResources[name])
	}
	return out
}

func indexByte(s string, b byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == b {
			return i
		}
	}
	return -1
}

// Score implements fw.ScorePlugin with the configured strategy.
func (f *Fit) Score(_ context.Context, state *fw.CycleState, _ *v1.Pod, nodeInfo *fw.NodeInfo) (int64, *fw.Status) {
	s, err := getPreFilterState(state)
	if err != nil {
		return 0, fw.AsStatus(err)
	}
	var total, weights int64
	for _, r := range f.resources {
		requested, allocatable := requestedAndAllocatable(r.Name, s, nodeInfo, false)
		if allocatable == 0 {
			continue
		}
		var score int64
		switch f.strategy {
		case LeastAllocated:
			score = leastRequestedScore(requested, allocatable)
		case MostAllocated:
			score = mostRequestedScore(requested, allocatable)
		case RequestedToCapacityRatio:
			score = shapeScore(f.shape, requested, allocatable)
		}
		total += score * r.Weight
		weights += r.Weight
	}
	if weights == 0 {
		return 0, nil
	}
	return total / weights, nil
}

// requestedAndAllocatable returns what the node would have requested after
// placing the pod and its allocatable: cpu and memory with the non-zero
// defaults unless useRequested (upstream's resourceAllocationScorer:
// BalancedAllocation scores the requests as they are, the Fit strategies
// the non-zero ones).
func requestedAndAllocatable(name v1.ResourceName, s *preFilterState, n *fw.NodeInfo, useRequested bool) (int64, int64) {
	switch {
	case name == v1.ResourceCPU && useRequested:
		return n.Requested.MilliCPU + s.MilliCPU, n.Allocatable.MilliCPU
	case name == v1.ResourceMemory && useRequested:
		return n.Requested.Memory + s.Memory, n.Allocatable.Memory
	}
	switch name {
	case v1.ResourceCPU:
		return n.NonZeroRequested.MilliCPU + s.nonZero.MilliCPU, n.Allocatable.MilliCPU
	case v1.ResourceMemory:
		return n.NonZeroRequested.Memory + s.nonZero.Memory, n.Allocatable.Memory
	case v1.ResourceEphemeralStorage:
		return n.Requested.EphemeralStorage + s.EphemeralStorage, n.Allocatable.EphemeralStorage
	default:
		if s.ScalarResources[name] == 0 {
			// Pods that do not ask for an extended resource are not
			// scored on it.
			return 0, 0
		}
		return n.Requested.ScalarResources[name] + s.ScalarResources[name], n.Allocatable.ScalarResources[name]
	}
}

func leastRequestedScore(requested, capacity int64) int64 {
	if requested > capacity {
		return 0
	}
	return (capacity - requested) * fw.MaxNodeScore / capacity
}

func mostRequestedScore(requested, capacity int64) int64 {
	if requested > capacity {
		requested = capacity
	}
	return requested * fw.MaxNodeScore / capacity
}

// shapeScore interpolates the utilisation shape (scores 0–10 scaled to 0–100).
func shapeScore(shape []UtilizationShapePoint, requested, capacity int64) int64 {
	util := min(requested*100/capacity, 100)
	scaled := func(i int) int64 { return int64(shape[i].Score) * fw.MaxNodeScore / 10 }
	if util <= int64(shape[0].Utilization) {
		return scaled(0)
	}
	for i := 1; i < len(shape); i++ {
		if util <= int64(shape[i].Utilization) {
			x0, x1 := int64(shape[i-1].Utilization), int64(shape[i].Utilization)
			y0, y1 := scaled(i-1), scaled(i)
			return y0 + (y1-y0)*(util-x0)/(x1-x0)
		}
	}
	return scaled(len(shape) - 1)
}

// ScoreExtensions implements fw.ScorePlugin.
func (*Fit) ScoreExtensions() fw.ScoreExtensions { return nil }
