package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
)

func TestNodeStatusPressureConditions(t *testing.T) {
	cfg := Config{NodeName: "n"}
	if err := cfg.setDefaults(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		p      Pressure
		typ    v1.NodeConditionType
		status v1.ConditionStatus
		reason string
	}{
		{Pressure{}, v1.NodeMemoryPressure, v1.ConditionFalse, "KubeletHasSufficientMemory"},
		{Pressure{}, v1.NodeDiskPressure, v1.ConditionFalse, "KubeletHasNoDiskPressure"},
		{Pressure{}, v1.NodePIDPressure, v1.ConditionFalse, "KubeletHasSufficientPID"},
		{Pressure{Memory: true}, v1.NodeMemoryPressure, v1.ConditionTrue, "KubeletHasInsufficientMemory"},
		{Pressure{Disk: true}, v1.NodeDiskPressure, v1.ConditionTrue, "KubeletHasDiskPressure"},
		{Pressure{PID: true}, v1.NodePIDPressure, v1.ConditionTrue, "KubeletHasInsufficientPID"},
		{Pressure{Memory: true, Disk: true, PID: true}, v1.NodeReady, v1.ConditionTrue, "KubeletReady"},
	} {
		st := NodeStatus(&cfg, nil, tc.p, "sim://1", nil, t0)
		c := nodeCondition(&v1.Node{Status: st}, tc.typ)
		if c.Status != tc.status || c.Reason != tc.reason || !c.LastHeartbeatTime.Time.Equal(t0) {
			t.Errorf("%+v: %s = %+v", tc.p, tc.typ, c)
		}
	}
}

func TestAdmitUnderPressure(t *testing.T) {
	bestEffort := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a"}}}}
	burstable := &v1.Pod{Spec: v1.PodSpec{Containers: []v1.Container{{Name: "a", Resources: v1.ResourceRequirements{
		Requests: v1.ResourceList{v1.ResourceMemory: resourceMust("64Mi")}}}}}}
	tolerating := bestEffort.DeepCopy()
	tolerating.Spec.Tolerations = []v1.Toleration{{Key: v1.TaintNodeMemoryPressure, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoSchedule}}
	// Pod-level requests alone make the pod Burstable (upstream's
	// GetPodQOS).
	podLevel := bestEffort.DeepCopy()
	podLevel.Spec.Resources = &v1.ResourceRequirements{Requests: v1.ResourceList{v1.ResourceMemory: resourceMust("64Mi")}}
	critical := bestEffort.DeepCopy()
	critical.Spec.Priority = ptr.To(int32(2000001000))
	for _, tc := range []struct {
		name string
		p    Pressure
		pod  *v1.Pod
		ok   bool
		msg  string
	}{
		{"no pressure", Pressure{}, bestEffort, true, ""},
		{"memory, best effort", Pressure{Memory: true}, bestEffort, false, "The node had condition: [MemoryPressure]. "},
		{"memory, burstable", Pressure{Memory: true}, burstable, true, ""},
		{"memory, burstable by pod-level requests", Pressure{Memory: true}, podLevel, true, ""},
		{"memory, tolerates the taint", Pressure{Memory: true}, tolerating, true, ""},
		{"disk refuses all", Pressure{Disk: true}, burstable, false, "The node had condition: [DiskPressure]. "},
		{"memory and pid", Pressure{Memory: true, PID: true}, burstable, false, "The node had condition: [MemoryPressure PIDPressure]. "},
		{"critical always", Pressure{Disk: true}, critical, true, ""},
	} {
		ok, reason, msg := AdmitUnderPressure(tc.p, tc.pod)
		if ok != tc.ok || msg != tc.msg || (!ok && reason != "Evicted") {
			t.Errorf("%s: %v %q %q", tc.name, ok, reason, msg)
		}
	}
}

// A kubelet under disk pressure reports it and fails new pods with
// reason Evicted; once the pressure is gone and the transition period has
// passed, DiskPressure turns False and new pods run.
func TestPressureReportedAndEnforced(t *testing.T) {
	ecfg, err := eviction.ParseConfig(eviction.Flags{PressureTransitionPeriod: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	h := newHarness(t, func(c *Config) { c.Pressure = Pressure{Disk: true}; c.Eviction = &ecfg })
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	n, err := h.client.CoreV1().Nodes().Get(h.ctx, "node-7", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c := nodeCondition(n, v1.NodeDiskPressure); c.Status != v1.ConditionTrue {
		t.Fatalf("DiskPressure = %+v", c)
	}
	got := h.sync(h.create(h.pod("refused", nil)))
	if got.Status.Phase != v1.PodFailed || got.Status.Reason != "Evicted" || got.Status.Message != "Pod was rejected: The node had condition: [DiskPressure]. " {
		t.Fatalf("status under disk pressure: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	h.k.SetPressure(Pressure{})
	h.step(10 * time.Second)
	h.k.evictionTick(h.ctx)
	if p := h.k.Pressure(); !p.Disk {
		t.Fatalf("pressure cleared within the transition period: %+v", p)
	}
	h.step(20 * time.Second)
	h.k.evictionTick(h.ctx)
	if err := h.k.updateNodeStatus(h.ctx, false); err != nil {
		t.Fatal(err)
	}
	n, _ = h.client.CoreV1().Nodes().Get(h.ctx, "node-7", metav1.GetOptions{})
	if c := nodeCondition(n, v1.NodeDiskPressure); c.Status != v1.ConditionFalse || !c.LastTransitionTime.Time.Equal(h.clock.Now()) {
		t.Fatalf("DiskPressure after relief = %+v", c)
	}
	if got := h.sync(h.create(h.pod("accepted", nil))); got.Status.Phase != v1.PodRunning {
		t.Fatalf("pod after relief: %s", got.Status.Phase)
	}
}
