package eviction

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestAllocatableThresholds(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "memory.available<100Mi,nodefs.available<10%", HardSet: true,
		Soft: "memory.available<300Mi", SoftGracePeriod: "memory.available=1m", MinimumReclaim: "memory.available=50Mi"})
	before := slices.Clone(cfg.Thresholds)
	got := AllocatableThresholds(cfg.Thresholds)
	if !slices.EqualFunc(cfg.Thresholds, before, func(a, b Threshold) bool { return a.key() == b.key() }) {
		t.Fatal("AllocatableThresholds changed its input")
	}
	if len(got) != len(before)+1 {
		t.Fatalf("got %d thresholds, want %d (one copy of the hard memory.available): %+v", len(got), len(before)+1, got)
	}
	a := got[len(got)-1]
	if a.Signal != SignalAllocatableMemoryAvailable || !a.Hard() || a.Value.String() != "100Mi" || a.MinReclaim == nil || a.MinReclaim.String() != "50Mi" {
		t.Errorf("allocatable threshold %+v (min reclaim %v)", a, a.MinReclaim)
	}
	// No hard memory.available threshold, no allocatable one.
	if got := AllocatableThresholds(mustConfig(t, Flags{Hard: "nodefs.available<10%", HardSet: true}).Thresholds); len(got) != 1 {
		t.Errorf("without memory.available: %+v", got)
	}
	// The signal is upstream's valid in flags.
	if _, err := ParseConfig(Flags{Hard: "allocatableMemory.available<1Gi", HardSet: true}); err != nil {
		t.Errorf("allocatableMemory.available in --eviction-hard: %v", err)
	}
}

// TestDecideAllocatableMemory: allocatableMemory.available below its
// threshold, the node's memory.available not, raises MemoryPressure and
// evicts as for memory: acted on before a disk threshold configured
// first, the pods ranked by memory use over request.
func TestDecideAllocatableMemory(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "memory.available<100Mi,nodefs.available<10%", HardSet: true})
	cfg.Thresholds = AllocatableThresholds(cfg.Thresholds)
	small := pod("memory-hog", 100*mi, 0) // over its memory request by 400Mi, no disk
	big := pod("disk-hog", 100*mi, 0)     // within its memory request, 900Mi of disk
	stats := []PodStats{
		{Pod: big, Memory: map[string]int64{"app": 50 * mi}, Disk: 900 * mi},
		{Pod: small, Memory: map[string]int64{"app": 500 * mi}},
	}
	obs := Observations{
		SignalMemoryAvailable:            {Available: 2048 * mi, Capacity: 4096 * mi},
		SignalAllocatableMemoryAvailable: {Available: 60 * mi, Capacity: 3072 * mi},
		SignalNodeFsAvailable:            {Available: 1 * mi, Capacity: 100 * 1024 * mi},
	}
	d := Decide(Input{Config: cfg, Observations: obs, Pods: stats, Now: t0})
	if !slices.Equal(d.Conditions, []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure}) {
		t.Errorf("conditions %v", d.Conditions)
	}
	if d.Threshold == nil || d.Threshold.Signal != SignalAllocatableMemoryAvailable {
		t.Fatalf("acted on %+v, want allocatableMemory.available", d.Threshold)
	}
	if d.Evict == nil || d.Evict.Pod != small {
		t.Fatalf("evicted %+v, want memory-hog", d.Evict)
	}
	const want = "The node was low on resource: memory. Threshold quantity: 100Mi, available: 60Mi. Container app was using 500Mi, request is 100Mi, has larger consumption of memory. "
	if d.Evict.Message != want {
		t.Errorf("message %q\nwant %q", d.Evict.Message, want)
	}
	// Allocatable memory alone, above its threshold: no pressure.
	obs[SignalAllocatableMemoryAvailable] = Observation{Available: 200 * mi, Capacity: 3072 * mi}
	delete(obs, SignalNodeFsAvailable)
	if d := Decide(Input{Config: cfg, Observations: obs, Pods: stats, Now: t0}); len(d.Conditions) != 0 || d.Evict != nil {
		t.Errorf("above the threshold: %v %+v", d.Conditions, d.Evict)
	}
}

func TestHostProviderAllocatableMemory(t *testing.T) {
	v1Root := map[string]string{"memory/memory.usage_in_bytes": "4096\n", "memory/memory.stat": "total_inactive_file 1024\n"}
	v2Root := map[string]string{"cgroup.controllers": "cpu memory\n", "memory.stat": "anon 2048\nfile 2048\ninactive_file 512\n"}
	with := func(base map[string]string, extra map[string]string) map[string]string {
		out := map[string]string{}
		for k, v := range base {
			out[k] = v
		}
		for k, v := range extra {
			out[k] = v
		}
		return out
	}
	for _, tc := range []struct {
		name   string
		files  map[string]string
		want   Observation
		wantOK bool
	}{
		{name: "cgroup v1", files: with(v1Root, map[string]string{"memory/kubepods/memory.limit_in_bytes": "8192\n",
			"memory/kubepods/memory.usage_in_bytes": "3000\n", "memory/kubepods/memory.stat": "total_inactive_file 1000\n"}),
			want: Observation{Available: 8192 - 2000, Capacity: 8192}, wantOK: true},
		{name: "cgroup v1 unlimited", files: with(v1Root, map[string]string{"memory/kubepods/memory.limit_in_bytes": "9223372036854771712\n",
			"memory/kubepods/memory.usage_in_bytes": "3000\n", "memory/kubepods/memory.stat": "total_inactive_file 1000\n"})},
		{name: "cgroup v2", files: with(v2Root, map[string]string{"kubepods/memory.max": "8192\n",
			"kubepods/memory.current": "3000\n", "kubepods/memory.stat": "anon 1000\nfile 2000\ninactive_file 500\n"}),
			want: Observation{Available: 8192 - 2500, Capacity: 8192}, wantOK: true},
		{name: "cgroup v2 max", files: with(v2Root, map[string]string{"kubepods/memory.max": "max\n",
			"kubepods/memory.current": "3000\n", "kubepods/memory.stat": "inactive_file 500\n"})},
		{name: "no kubepods yet", files: v1Root},
	} {
		t.Run(tc.name, func(t *testing.T) {
			h := HostProvider{RootDir: t.TempDir(), ProcDir: fakeProc(t), CgroupDir: fakeCgroupfs(t, tc.files), PodsCgroup: "/kubepods"}
			obs, _, err := h.Observe(t.Context(), nil)
			if err != nil {
				t.Fatal(err)
			}
			got, ok := obs[SignalAllocatableMemoryAvailable]
			if ok != tc.wantOK || got != tc.want {
				t.Errorf("allocatableMemory.available %+v (%v), want %+v (%v)", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}

// A simulated node observes allocatableMemory.available only when it is
// set (`kubeproof node pressure` accepts the signal, as upstream's flags
// do), so that setting it drives MemoryPressure there too.
func TestSimProviderAllocatableMemory(t *testing.T) {
	p := NewSimProvider(resource.MustParse("1Gi"), resource.MustParse("10Gi"))
	obs, _, err := p.Observe(t.Context(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if o, ok := obs[SignalAllocatableMemoryAvailable]; ok {
		t.Errorf("observed unset: %+v", o)
	}
	set, err := ParseAvailable("allocatableMemory.available=50Mi")
	if err != nil {
		t.Fatal(err)
	}
	q := set[SignalAllocatableMemoryAvailable]
	p.SetAvailable(SignalAllocatableMemoryAvailable, &q)
	obs, _, _ = p.Observe(t.Context(), nil)
	if got, want := obs[SignalAllocatableMemoryAvailable], (Observation{Available: 50 * mi, Capacity: 1024 * mi}); got != want {
		t.Errorf("set: %+v, want %+v", got, want)
	}
	cfg := mustConfig(t, Flags{})
	cfg.Thresholds = AllocatableThresholds(cfg.Thresholds)
	if d := Decide(Input{Config: cfg, Observations: obs, Now: t0}); !slices.Equal(d.Conditions, []v1.NodeConditionType{v1.NodeMemoryPressure}) {
		t.Errorf("conditions %v", d.Conditions)
	}
	p.SetAvailable(SignalAllocatableMemoryAvailable, nil)
	if obs, _, _ = p.Observe(t.Context(), nil); len(obs) != 6 {
		t.Errorf("cleared: %v", obs)
	}
}
