package eviction

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// TestEvictionKillTimeout: the eviction manager awaits a pod's kill 1.5 ×
// the grace period it asks the pod workers for, at least 10 s (upstream's
// killPodNow): for a soft threshold MaxPodGracePeriodSeconds capped by the
// pod's own, so with MaxPodGracePeriodSeconds 0 (the default) 10 s, the
// kill itself given the pod's own grace period (a grace period of 0 asked
// for is none); 1 s for a hard threshold or a local storage limit.
func TestEvictionKillTimeout(t *testing.T) {
	for _, c := range []struct {
		maxGrace, podGrace int64
		wantGrace          int64
		wantTimeout        time.Duration
	}{
		{0, 30, 30, 10 * time.Second},
		{20, 30, 20, 30 * time.Second},
		{60, 30, 30, 45 * time.Second},
		{60, 4, 4, 10 * time.Second},
	} {
		cfg := mustConfig(t, Flags{Soft: "memory.available<200Mi", SoftGracePeriod: "memory.available=1s", MaxPodGracePeriod: c.maxGrace})
		p := pod("web", 0, 0)
		p.Spec.TerminationGracePeriodSeconds = ptr.To(c.podGrace)
		in := Input{Config: cfg, Observations: memObs(100 * mi), Pods: []PodStats{memStats(p, 50*mi)}, Now: t0}
		in.State = Decide(in).State
		in.Now = t0.Add(time.Second)
		d := Decide(in)
		if d.Evict == nil {
			t.Fatalf("max %d, pod %d: no eviction", c.maxGrace, c.podGrace)
		}
		if d.Evict.GracePeriodSeconds != c.wantGrace || d.Evict.KillTimeout != c.wantTimeout {
			t.Errorf("max %d, pod %d: grace %d, kill awaited %v; want %d, %v", c.maxGrace, c.podGrace,
				d.Evict.GracePeriodSeconds, d.Evict.KillTimeout, c.wantGrace, c.wantTimeout)
		}
	}
	cfg := mustConfig(t, Flags{Hard: "memory.available<200Mi", HardSet: true})
	p := pod("web", 0, 0)
	p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](600)
	if d := Decide(Input{Config: cfg, Observations: memObs(100 * mi), Pods: []PodStats{memStats(p, 50*mi)}, Now: t0}); d.Evict == nil || d.Evict.KillTimeout != 10*time.Second {
		t.Errorf("hard threshold: evicted %v, want the kill awaited 10 s", d.Evict != nil)
	}
	limit := resource.MustParse("1Mi")
	p.Spec.Containers[0].Resources.Limits = v1.ResourceList{v1.ResourceEphemeralStorage: limit}
	evs := LocalStorageEvictions([]PodStats{{Pod: p, Storage: &LocalStorage{Rootfs: map[string]int64{"app": 2 << 20}}}}, false)
	if len(evs) != 1 || evs[0].KillTimeout != 10*time.Second {
		t.Errorf("local storage limit: %d evictions, want one whose kill is awaited 10 s", len(evs))
	}
}
