package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
)

// withMemory gives the pod's container a memory request and the
// simulated usage.
func withMemory(request, usage string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceMemory: resource.MustParse(request)}
		p.Annotations[eviction.AnnotationMemoryUsage] = usage
		p.Status.QOSClass = v1.PodQOSBurstable
	}
}

// Under memory pressure the eviction manager evicts, one per interval,
// the pod using most above its request (critical pods never), reports
// MemoryPressure, and clears it a transition period after recovery.
func TestEvictionUnderMemoryPressure(t *testing.T) {
	ecfg, err := eviction.ParseConfig(eviction.Flags{Hard: "memory.available<100Mi", HardSet: true, PressureTransitionPeriod: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Eviction = &ecfg; c.Memory = resource.MustParse("4Gi") })
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	hog := h.sync(h.create(h.pod("hog", withMemory("64Mi", "512Mi"))))
	modest := h.sync(h.create(h.pod("modest", withMemory("256Mi", "128Mi"))))
	critical := h.sync(h.create(h.pod("critical", func(p *v1.Pod) {
		withMemory("1Mi", "1Gi")(p)
		p.Spec.Priority = ptr.To(int32(2000001000))
	})))
	for _, p := range []*v1.Pod{hog, modest, critical} {
		if p.Status.Phase != v1.PodRunning {
			t.Fatalf("%s: %s", p.Name, p.Status.Phase)
		}
	}
	h.k.evictionTick(h.ctx)
	if p := h.k.Pressure(); p.Memory {
		t.Fatalf("pressure with 4Gi and ~1.6Gi used: %+v", p)
	}

	q := resource.MustParse("50Mi")
	if err := h.k.SetAvailable(eviction.SignalMemoryAvailable, &q); err != nil {
		t.Fatal(err)
	}
	h.k.evictionTick(h.ctx)
	n, _ := h.client.CoreV1().Nodes().Get(h.ctx, "node-7", metav1.GetOptions{})
	if c := nodeCondition(n, v1.NodeMemoryPressure); c.Status != v1.ConditionTrue || c.Reason != "KubeletHasInsufficientMemory" {
		t.Fatalf("MemoryPressure = %+v", c)
	}
	// The pod worker carries the eviction out.
	if err := h.k.evictPod(h.ctx, hog.UID); err != nil {
		t.Fatal(err)
	}
	got := h.sync(hog)
	want := "The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container app was using 512Mi, request is 64Mi, has larger consumption of memory. "
	if got.Status.Phase != v1.PodFailed || got.Status.Reason != "Evicted" || got.Status.Message != want {
		t.Fatalf("hog: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if c := cond(got, v1.DisruptionTarget); c.Status != v1.ConditionTrue || c.Reason != "TerminationByKubelet" || c.Message != want {
		t.Fatalf("DisruptionTarget = %+v", c)
	}
	if s := cstatus(got, "app"); s.State.Terminated == nil {
		t.Fatalf("app not terminated: %+v", s.State)
	}
	if rs, err := h.k.podRuntimeState(h.ctx, hog.UID); err != nil || !rs.Stopped() {
		t.Fatalf("hog still runs after eviction: %+v %v", rs, err)
	}
	// It stays Failed on later syncs; nothing is restarted.
	h.step(time.Second)
	if got = h.sync(hog); got.Status.Phase != v1.PodFailed || cond(got, v1.DisruptionTarget).Status != v1.ConditionTrue {
		t.Fatalf("hog after resync: %s %+v", got.Status.Phase, got.Status.Conditions)
	}
	// Next interval: modest (within its request) goes, critical never.
	h.step(10 * time.Second)
	h.k.evictionTick(h.ctx)
	if err := h.k.evictPod(h.ctx, modest.UID); err != nil {
		t.Fatal(err)
	}
	if got := h.sync(modest); got.Status.Phase != v1.PodFailed || got.Status.Reason != "Evicted" {
		t.Fatalf("modest: %s %q", got.Status.Phase, got.Status.Reason)
	}
	h.step(10 * time.Second)
	h.k.evictionTick(h.ctx)
	if rec := h.k.pods[critical.UID]; rec.eviction != nil || rec.evicted {
		t.Fatal("critical pod chosen for eviction")
	}
	if got := h.sync(critical); got.Status.Phase != v1.PodRunning {
		t.Fatalf("critical: %s", got.Status.Phase)
	}
	// A BestEffort pod is refused while under memory pressure.
	if got := h.sync(h.create(h.pod("late", nil))); got.Status.Phase != v1.PodFailed || got.Status.Reason != "Evicted" {
		t.Fatalf("best-effort pod under memory pressure: %s %q", got.Status.Phase, got.Status.Reason)
	}

	// Recovery: MemoryPressure stays for the transition period, then clears.
	if err := h.k.SetAvailable(eviction.SignalMemoryAvailable, nil); err != nil {
		t.Fatal(err)
	}
	h.step(10 * time.Second)
	h.k.evictionTick(h.ctx)
	if !h.k.Pressure().Memory {
		t.Fatal("MemoryPressure cleared within the transition period")
	}
	h.step(30 * time.Second)
	h.k.evictionTick(h.ctx)
	n, _ = h.client.CoreV1().Nodes().Get(h.ctx, "node-7", metav1.GetOptions{})
	if c := nodeCondition(n, v1.NodeMemoryPressure); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(h.clock.Now()) {
		t.Fatalf("MemoryPressure after recovery = %+v", c)
	}
}

// A soft threshold's eviction gives the pod min(its grace, the max pod
// grace period): the preStop hook's time is bounded by it.
func TestSoftEvictionGracePeriod(t *testing.T) {
	ecfg, err := eviction.ParseConfig(eviction.Flags{HardSet: true, Soft: "memory.available<1Gi", SoftGracePeriod: "memory.available=20s", MaxPodGracePeriod: 5})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Eviction = &ecfg })
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	p := h.sync(h.create(h.pod("web", func(p *v1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr.To(int64(60)) })))
	q := resource.MustParse("500Mi")
	if err := h.k.SetAvailable(eviction.SignalMemoryAvailable, &q); err != nil {
		t.Fatal(err)
	}
	h.k.evictionTick(h.ctx)
	if h.k.pods[p.UID].eviction != nil {
		t.Fatal("evicted before the soft grace period")
	}
	h.step(20 * time.Second)
	h.k.evictionTick(h.ctx)
	ev := h.k.pods[p.UID].eviction
	if ev == nil || ev.GracePeriodSeconds != 5 {
		t.Fatalf("soft eviction %+v", ev)
	}
	if err := h.k.evictPod(h.ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	if got := h.get(p); got.Status.Phase != v1.PodFailed || got.Status.Reason != "Evicted" {
		t.Fatalf("web: %s %q", got.Status.Phase, got.Status.Reason)
	}
}

func TestSetAvailableOnlyOnSimulatedNodes(t *testing.T) {
	h := newHarness(t, func(c *Config) {
		c.EvictionProvider = eviction.HostProvider{RootDir: "/"}
	})
	q := resource.MustParse("1Mi")
	if err := h.k.SetAvailable(eviction.SignalMemoryAvailable, &q); err == nil {
		t.Fatal("SetAvailable accepted on a host-observed node")
	}
}
