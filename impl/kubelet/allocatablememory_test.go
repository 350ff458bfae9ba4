package kubelet

import (
	"context"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
)

// fixedObservations is a provider reporting the same observations and
// no pod usage.
type fixedObservations eviction.Observations

func (f fixedObservations) Observe(_ context.Context, pods []*v1.Pod) (eviction.Observations, []eviction.PodStats, error) {
	stats := make([]eviction.PodStats, 0, len(pods))
	for _, p := range pods {
		stats = append(stats, eviction.PodStats{Pod: p, Memory: map[string]int64{}})
	}
	return eviction.Observations(f), stats, nil
}

// TestAllocatableMemoryPressure: with "pods" enforced (the default) the
// hard memory.available threshold is copied to allocatableMemory.available
// (upstream's ParseThresholdConfig), whose observation below it raises
// MemoryPressure though the node's memory.available is plenty; with
// --enforce-node-allocatable=none it is not.
func TestAllocatableMemoryPressure(t *testing.T) {
	obs := fixedObservations{
		eviction.SignalMemoryAvailable:            {Available: 3 << 30, Capacity: 4 << 30},
		eviction.SignalAllocatableMemoryAvailable: {Available: 50 << 20, Capacity: 3 << 30},
	}
	for _, tc := range []struct {
		name    string
		enforce []string
		want    []v1.NodeConditionType
	}{
		{name: "pods enforced", want: []v1.NodeConditionType{v1.NodeMemoryPressure}},
		{name: "none", enforce: []string{EnforceNone}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := newHarness(t, func(c *Config) {
				c.EvictionProvider = obs
				c.EnforceNodeAllocatable = tc.enforce
			})
			h.k.evictionTick(h.ctx)
			if got := h.k.evictions.Conditions(); !slices.Equal(got, tc.want) {
				t.Errorf("conditions %v, want %v", got, tc.want)
			}
		})
	}
}
