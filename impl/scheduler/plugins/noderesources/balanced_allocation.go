package noderesources

import (
	"context"
	"encoding/json"
	"fmt"
	"math"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// BalancedAllocationName is the plugin's name.
const BalancedAllocationName = "NodeResourcesBalancedAllocation"

// BalancedAllocationArgs are NodeResourcesBalancedAllocationArgs.
type BalancedAllocationArgs struct {
	Resources []ResourceSpec `json:"resources,omitempty"`
}

// BalancedAllocation scores nodes by how evenly the pod would leave the
// utilisation of its resources: 100 × (1 − standard deviation of the
// requested/allocatable fractions), the pods' requests taken as they are
// (no non-zero defaults for cpu and memory, as upstream's useRequested).
type BalancedAllocation struct {
	resources []ResourceSpec
}

// NewBalancedAllocation is the plugin factory.
func NewBalancedAllocation(raw json.RawMessage, _ fw.Handle) (fw.Plugin, error) {
	args := BalancedAllocationArgs{}
	if err := fw.DecodeArgs(raw, &args); err != nil {
		return nil, fmt.Errorf("decoding NodeResourcesBalancedAllocationArgs: %w", err)
	}
	b := &BalancedAllocation{resources: DefaultResources}
	if len(args.Resources) > 0 {
		b.resources = args.Resources
	}
	return b, nil
}

// Name implements fw.Plugin.
func (*BalancedAllocation) Name() string { return BalancedAllocationName }

const balancedKey fw.StateKey = "PreScore" + BalancedAllocationName

type balancedState struct {
	ps preFilterState
}

func (s *balancedState) Clone() fw.StateData { return s }

// PreScore implements fw.PreScorePlugin; best-effort pods (no requests)
// skip the plugin.
func (b *BalancedAllocation) PreScore(_ context.Context, state *fw.CycleState, pod *v1.Pod, _ []*fw.NodeInfo) *fw.Status {
	req, _ := fw.PodRequests(pod)
	bestEffort := true
	for _, r := range b.resources {
		switch r.Name {
		case v1.ResourceCPU:
			bestEffort = bestEffort && req.MilliCPU == 0
		case v1.ResourceMemory:
			bestEffort = bestEffort && req.Memory == 0
		case v1.ResourceEphemeralStorage:
			bestEffort = bestEffort && req.EphemeralStorage == 0
		default:
			bestEffort = bestEffort && req.ScalarResources[r.Name] == 0
		}
	}
	if bestEffort {
		return fw.NewStatus(fw.Skip)
	}
	state.Write(balancedKey, &balancedState{ps: preFilterState{Resource: req}})
	return nil
}

// Score implements fw.ScorePlugin.
func (b *BalancedAllocation) Score(_ context.Context, state *fw.CycleState, _ *v1.Pod, nodeInfo *fw.NodeInfo) (int64, *fw.Status) {
	d, err := state.Read(balancedKey)
	if err != nil {
		return 0, fw.AsStatus(fmt.Errorf("reading %q from cycleState: %w", balancedKey, err))
	}
	s := d.(*balancedState)
	var buf [8]float64
	fractions := buf[:0]
	for _, r := range b.resources {
		requested, allocatable := requestedAndAllocatable(r.Name, &s.ps, nodeInfo, true)
		if allocatable == 0 {
			continue
		}
		fractions = append(fractions, math.Min(float64(requested)/float64(allocatable), 1))
	}
	return balancedScore(fractions), nil
}

func balancedScore(fractions []float64) int64 {
	if len(fractions) < 2 {
		return fw.MaxNodeScore
	}
	var mean float64
	for _, f := range fractions {
		mean += f
	}
	mean /= float64(len(fractions))
	var variance float64
	for _, f := range fractions {
		variance += (f - mean) * (f - mean)
	}
	std := math.Sqrt(variance / float64(len(fractions)))
	return int64((1 - std) * float64(fw.MaxNodeScore))
}

// ScoreExtensions implements fw.ScorePlugin.
func (*BalancedAllocation) ScoreExtensions() fw.ScoreExtensions { return nil }
