package eviction

import (
	"slices"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

const mi = 1 << 20

func mustConfig(t *testing.T, f Flags) Config {
	t.Helper()
	cfg, err := ParseConfig(f)
	if err != nil {
		t.Fatal(err)
	}
	return cfg
}

// pod has one container "app" requesting memReq bytes (0: none), at prio.
func pod(name string, memReq int64, prio int32) *v1.Pod {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default"},
		Spec: v1.PodSpec{Priority: ptr.To(prio), Containers: []v1.Container{{Name: "app"}}}}
	if memReq > 0 {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: *resource.NewQuantity(memReq, resource.BinarySI)}
	}
	return p
}

func memStats(p *v1.Pod, used int64) PodStats {
	return PodStats{Pod: p, Memory: map[string]int64{"app": used}}
}

func memObs(avail int64) Observations {
	return Observations{SignalMemoryAvailable: {Available: avail, Capacity: 1024 * mi}}
}

func TestRankingMemory(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "memory.available<100Mi", HardSet: true})
	within := pod("within-low-prio", 500*mi, -10)          // under its request
	overSmall := pod("over-by-10-high-prio", 100*mi, 1000) // over by 10Mi
	overBig := pod("over-by-200-high-prio", 100*mi, 1000)  // over by 200Mi
	overLowPrio := pod("over-by-5-low-prio", 100*mi, 0)    // over by 5Mi
	critical := pod("critical", 0, 2000000000)             // over (no request), critical
	static := pod("static", 0, 0)                          // mirror pod
	static.Annotations = map[string]string{v1.MirrorPodAnnotationKey: "x"}
	stats := []PodStats{
		memStats(within, 100*mi), memStats(overSmall, 110*mi), memStats(overBig, 300*mi),
		memStats(overLowPrio, 105*mi), memStats(critical, 900*mi), memStats(static, 900*mi),
	}
	for _, tc := range []struct {
		name string
		pods []PodStats
		want string
	}{
		{"usage above request beats priority", stats, "over-by-5-low-prio"},
		{"same priority: larger excess first", []PodStats{stats[0], stats[1], stats[2], stats[4]}, "over-by-200-high-prio"},
		{"only pods within requests: lowest priority", []PodStats{memStats(pod("a", 500*mi, 5), 10*mi), memStats(pod("b", 500*mi, 1), 10*mi)}, "b"},
		{"critical and static never", []PodStats{stats[4], stats[5]}, ""},
	} {
		d := Decide(Input{Config: cfg, Observations: memObs(50 * mi), Pods: tc.pods, Now: t0})
		got := ""
		if d.Evict != nil {
			got = d.Evict.Pod.Name
		}
		if got != tc.want {
			t.Errorf("%s: evicted %q, want %q", tc.name, got, tc.want)
		}
		if !slices.Equal(d.Conditions, []v1.NodeConditionType{v1.NodeMemoryPressure}) {
			t.Errorf("%s: conditions %v", tc.name, d.Conditions)
		}
	}
}

func TestRankingDiskAndPID(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "nodefs.available<10%,pid.available<100,nodefs.inodesFree<5%,imagefs.inodesFree<5%", HardSet: true})
	a, b, c := pod("a", 0, 0), pod("b", 0, 0), pod("c", 0, 10)
	stats := []PodStats{{Pod: a, Disk: 10 * mi, PIDs: 5, Inodes: 10}, {Pod: b, Disk: 90 * mi, PIDs: 50, Inodes: 1}, {Pod: c, Disk: 500 * mi, PIDs: 500, Inodes: 1000}}
	for _, tc := range []struct {
		name string
		obs  Observations
		want string
		cond v1.NodeConditionType
	}{
		{"disk: larger use first among equal priority", Observations{SignalNodeFsAvailable: {Available: 5, Capacity: 100}}, "b", v1.NodeDiskPressure},
		{"inodes: most inodes among equal priority", Observations{SignalNodeFsInodesFree: {Available: 1, Capacity: 100}}, "a", v1.NodeDiskPressure},
		{"image fs inodes: likewise", Observations{SignalImageFsInodesFree: {Available: 1, Capacity: 100}}, "a", v1.NodeDiskPressure},
		{"pids: lower priority, then more processes", Observations{SignalPIDAvailable: {Available: 50, Capacity: 32768}}, "b", v1.NodePIDPressure},
	} {
		d := Decide(Input{Config: cfg, Observations: tc.obs, Pods: stats, Now: t0})
		if d.Evict == nil || d.Evict.Pod.Name != tc.want {
			t.Errorf("%s: evicted %+v, want %s", tc.name, d.Evict, tc.want)
		}
		if !slices.Equal(d.Conditions, []v1.NodeConditionType{tc.cond}) {
			t.Errorf("%s: conditions %v", tc.name, d.Conditions)
		}
	}
}

func TestThresholdsAndMessage(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "memory.available<100Mi,nodefs.available<10%", HardSet: true})
	p := pod("web", 64*mi, 0)
	p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(30))
	stats := []PodStats{memStats(p, 80*mi)}
	// Exactly at the threshold is not below it.
	if d := Decide(Input{Config: cfg, Observations: memObs(100 * mi), Pods: stats, Now: t0}); d.Evict != nil || len(d.Conditions) != 0 {
		t.Fatalf("at threshold: %+v", d)
	}
	d := Decide(Input{Config: cfg, Observations: memObs(50 * mi), Pods: stats, Now: t0})
	if d.Evict == nil {
		t.Fatal("no eviction below the threshold")
	}
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 80Mi, request is 64Mi, has larger consumption of memory. "
	if d.Evict.Message != want {
		t.Errorf("message\n%q\nwant\n%q", d.Evict.Message, want)
	}
	if d.Evict.GracePeriodSeconds != ImmediateGracePeriodSeconds || !slices.Equal(d.Evict.OffendingContainers, []string{"app"}) || !slices.Equal(d.Evict.OffendingContainersUsage, []string{"80Mi"}) {
		t.Errorf("eviction %+v", d.Evict)
	}
	// A percentage threshold is reported in the signal's units.
	d = Decide(Input{Config: cfg, Observations: Observations{SignalNodeFsAvailable: {Available: 1 << 30, Capacity: 100 << 30}}, Pods: stats, Now: t0})
	want = "The node was low on resource: ephemeral-storage. Threshold quantity: 10Gi, available: 1Gi. "
	if d.Evict == nil || d.Evict.Message != want {
		t.Errorf("disk eviction %+v, want message %q", d.Evict, want)
	}
	// Memory is reclaimed first when both are met.
	d = Decide(Input{Config: cfg, Observations: Observations{SignalNodeFsAvailable: {Available: 1, Capacity: 100}, SignalMemoryAvailable: {Available: 1, Capacity: 1024 * mi}}, Pods: stats, Now: t0})
	if d.Evict == nil || d.Evict.Threshold.Signal != SignalMemoryAvailable || !slices.Equal(d.Conditions, []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure}) {
		t.Errorf("both met: %+v %v", d.Evict, d.Conditions)
	}
}

func TestSoftGracePeriod(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "memory.available<10Mi", HardSet: true, Soft: "memory.available<200Mi", SoftGracePeriod: "memory.available=30s", MaxPodGracePeriod: 10})
	p := pod("web", 0, 0)
	p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(60))
	short := pod("short", 0, 0)
	short.Spec.TerminationGracePeriodSeconds = ptr.To(int64(3))
	var st State
	step := func(at time.Duration, avail int64, pods ...PodStats) Decision {
		d := Decide(Input{Config: cfg, Observations: memObs(avail), Pods: pods, State: st, Now: t0.Add(at)})
		st = d.State
		return d
	}
	// Met at once: the condition is reported, but no eviction before the grace period.
	if d := step(0, 100*mi, memStats(p, 50*mi)); d.Evict != nil || !slices.Equal(d.Conditions, []v1.NodeConditionType{v1.NodeMemoryPressure}) {
		t.Fatalf("t=0: %+v", d)
	}
	if d := step(20*time.Second, 100*mi, memStats(p, 50*mi)); d.Evict != nil {
		t.Fatalf("t=20s: evicted before the grace period")
	}
	d := step(30*time.Second, 100*mi, memStats(p, 50*mi))
	if d.Evict == nil || d.Evict.GracePeriodSeconds != 10 {
		t.Fatalf("t=30s: %+v (want eviction with grace min(60, 10))", d.Evict)
	}
	if d := step(40*time.Second, 100*mi, memStats(short, 50*mi)); d.Evict == nil || d.Evict.GracePeriodSeconds != 3 {
		t.Fatalf("pod's own shorter grace: %+v", d.Evict)
	}
	// Recovery resets the grace clock.
	step(50*time.Second, 300*mi)
	if d := step(60*time.Second, 100*mi, memStats(p, 50*mi)); d.Evict != nil {
		t.Fatalf("grace period restarted: evicted at once")
	}
	// The hard threshold evicts at once, with grace 0.
	if d := step(61*time.Second, 5*mi, memStats(p, 50*mi)); d.Evict == nil || d.Evict.GracePeriodSeconds != ImmediateGracePeriodSeconds || !d.Evict.Threshold.Hard() {
		t.Fatalf("hard: %+v", d.Evict)
	}
}

func TestPressureTransitionPeriod(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "memory.available<100Mi", HardSet: true, PressureTransitionPeriod: time.Minute})
	var st State
	step := func(at time.Duration, avail int64) Decision {
		d := Decide(Input{Config: cfg, Observations: memObs(avail), State: st, Now: t0.Add(at)})
		st = d.State
		return d
	}
	mem := []v1.NodeConditionType{v1.NodeMemoryPressure}
	for _, tc := range []struct {
		at    time.Duration
		avail int64
		want  []v1.NodeConditionType
	}{
		{0, 50 * mi, mem},
		{10 * time.Second, 500 * mi, mem},  // recovered, but within the period
		{59 * time.Second, 500 * mi, mem},  // 59 s after last observed
		{60 * time.Second, 500 * mi, nil},  // a full minute: cleared
		{80 * time.Second, 50 * mi, mem},   // back at once
		{90 * time.Second, 500 * mi, mem},  //
		{139 * time.Second, 500 * mi, mem}, //
		{140 * time.Second, 500 * mi, nil}, //
	} {
		if d := step(tc.at, tc.avail); !slices.Equal(d.Conditions, tc.want) {
			t.Errorf("t=%v avail=%dMi: conditions %v, want %v", tc.at, tc.avail/mi, d.Conditions, tc.want)
		}
	}
}

func TestMinimumReclaim(t *testing.T) {
	cfg := mustConfig(t, Flags{Hard: "memory.available<100Mi", HardSet: true, MinimumReclaim: "memory.available=50Mi", PressureTransitionPeriod: time.Nanosecond})
	pods := []PodStats{memStats(pod("a", 0, 0), 10*mi)}
	var st State
	step := func(at time.Duration, avail int64) Decision {
		d := Decide(Input{Config: cfg, Observations: memObs(avail), Pods: pods, State: st, Now: t0.Add(at)})
		st = d.State
		return d
	}
	if d := step(0, 120*mi); d.Evict != nil {
		t.Fatal("evicted above the threshold before it was ever met")
	}
	if d := step(time.Second, 90*mi); d.Evict == nil {
		t.Fatal("no eviction below the threshold")
	}
	if d := step(2*time.Second, 120*mi); d.Evict == nil || len(d.Conditions) != 1 {
		t.Fatalf("above the threshold but below threshold+minimum reclaim: %+v %v", d.Evict, d.Conditions)
	}
	if d := step(3*time.Second, 150*mi); d.Evict != nil {
		t.Fatalf("threshold+minimum reclaim reached: still evicting")
	}
	if d := step(4*time.Second, 120*mi); d.Evict != nil {
		t.Fatalf("once resolved, the minimum reclaim no longer applies")
	}
}

func TestSimProvider(t *testing.T) {
	p := NewSimProvider(resource.MustParse("1Gi"), resource.MustParse("10Gi"))
	a := pod("a", 100*mi, 0)
	b := pod("b", 100*mi, 0)
	b.Annotations = map[string]string{AnnotationMemoryUsage: "300Mi"}
	obs, stats, err := p.Observe(t.Context(), []*v1.Pod{a, b})
	if err != nil {
		t.Fatal(err)
	}
	if got := obs[SignalMemoryAvailable]; got.Available != 1024*mi-400*mi || got.Capacity != 1024*mi {
		t.Errorf("memory %+v", got)
	}
	if stats[1].Memory["app"] != 300*mi {
		t.Errorf("annotated usage %+v", stats[1])
	}
	set, err := ParseAvailable("memory.available=50Mi")
	if err != nil {
		t.Fatal(err)
	}
	q := set[SignalMemoryAvailable]
	p.SetAvailable(SignalMemoryAvailable, &q)
	obs, _, _ = p.Observe(t.Context(), nil)
	if obs[SignalMemoryAvailable].Available != 50*mi {
		t.Errorf("set memory %+v", obs[SignalMemoryAvailable])
	}
	p.SetAvailable(SignalMemoryAvailable, nil)
	if obs, _, _ = p.Observe(t.Context(), nil); obs[SignalMemoryAvailable].Available != 1024*mi {
		t.Errorf("cleared memory %+v", obs[SignalMemoryAvailable])
	}
	if _, err := ParseAvailable("memory.available=-1"); err == nil {
		t.Error("negative available accepted")
	}
	if _, err := ParseAvailable("cpu.available=1"); err == nil {
		t.Error("unknown signal accepted")
	}
}

func TestHostProvider(t *testing.T) {
	obs, _, err := HostProvider{RootDir: t.TempDir() + "/not/yet/created"}.Observe(t.Context(), nil)
	if err != nil {
		t.Skipf("no /proc here: %v", err)
	}
	for _, s := range []Signal{SignalMemoryAvailable, SignalNodeFsAvailable, SignalImageFsAvailable, SignalPIDAvailable} {
		o, ok := obs[s]
		if !ok || o.Capacity <= 0 || o.Available < 0 || o.Available > o.Capacity {
			t.Errorf("%s: %+v", s, o)
		}
	}
}
