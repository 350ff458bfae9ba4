package nodelifecycle

import (
	"context"
	"fmt"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

const (
	T = corev1.ConditionTrue
	F = corev1.ConditionFalse
	U = corev1.ConditionUnknown
)

func TestZoneKey(t *testing.T) {
	cases := []struct {
		labels map[string]string
		want   string
	}{
		{nil, ""},
		{map[string]string{LabelZone: "a"}, ":\x00:a"},
		{map[string]string{LabelRegion: "r", LabelZone: "a"}, "r:\x00:a"},
		{map[string]string{labelRegionBeta: "r", labelZoneBeta: "b"}, "r:\x00:b"},
		{map[string]string{LabelRegion: "r", LabelZone: "a", labelZoneBeta: "old"}, "r:\x00:a"},
	}
	for _, tc := range cases {
		if got := ZoneKey(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: tc.labels}}); got != tc.want {
			t.Errorf("ZoneKey(%v) = %q, want %q", tc.labels, got, tc.want)
		}
	}
}

func TestComputeZoneState(t *testing.T) {
	cases := []struct {
		ready        []corev1.ConditionStatus
		wantNotReady int
		want         ZoneState
	}{
		{[]corev1.ConditionStatus{T, T, T}, 0, ZoneNormal},
		{[]corev1.ConditionStatus{U}, 1, ZoneFullDisruption},
		{[]corev1.ConditionStatus{F, U, ""}, 3, ZoneFullDisruption},
		{[]corev1.ConditionStatus{T, U, U}, 2, ZoneNormal},                  // two not ready is never partial
		{[]corev1.ConditionStatus{T, T, U, U, U}, 3, ZonePartialDisruption}, // 60% >= 55%
		{[]corev1.ConditionStatus{T, T, T, U, U, U}, 3, ZoneNormal},         // 50% < 55%
		{nil, 0, ZoneNormal},
	}
	for _, tc := range cases {
		n, s := ComputeZoneState(tc.ready, 0.55)
		if n != tc.wantNotReady || s != tc.want {
			t.Errorf("ComputeZoneState(%v) = %d, %s; want %d, %s", tc.ready, n, s, tc.wantNotReady, tc.want)
		}
	}
}

func TestZoneRate(t *testing.T) {
	r := DefaultEvictionRates()
	cases := []struct {
		state ZoneState
		size  int
		want  float32
	}{
		{ZoneNormal, 3, 0.1},
		{ZoneFullDisruption, 3, 0.1},
		{ZonePartialDisruption, 50, 0},    // small zone: stop
		{ZonePartialDisruption, 51, 0.01}, // large zone: secondary rate
	}
	for _, tc := range cases {
		if got := r.ZoneRate(tc.state, tc.size); got != tc.want {
			t.Errorf("ZoneRate(%s, %d) = %v, want %v", tc.state, tc.size, got, tc.want)
		}
	}
}

func statuses(s ...corev1.ConditionStatus) []corev1.ConditionStatus { return s }

func TestDecideDisruption(t *testing.T) {
	r := DefaultEvictionRates()
	cases := []struct {
		name       string
		prev       map[string]ZoneState
		zones      map[string][]corev1.ConditionStatus
		wantStates map[string]ZoneState
		wantRates  map[string]float32
		enter      bool
		exit       bool
	}{
		{"new zones get their rate", nil,
			map[string][]corev1.ConditionStatus{"a": statuses(T, T), "b": statuses(T)},
			map[string]ZoneState{"a": ZoneNormal, "b": ZoneNormal}, map[string]float32{"a": 0.1, "b": 0.1}, false, false},
		{"unchanged: nothing to do", map[string]ZoneState{"a": ZoneNormal},
			map[string][]corev1.ConditionStatus{"a": statuses(T, U)},
			map[string]ZoneState{"a": ZoneNormal}, map[string]float32{}, false, false},
		{"one zone down, another up: normal rate in the full one", map[string]ZoneState{"a": ZoneNormal, "b": ZoneNormal},
			map[string][]corev1.ConditionStatus{"a": statuses(U, U), "b": statuses(T)},
			map[string]ZoneState{"a": ZoneFullDisruption, "b": ZoneNormal}, map[string]float32{"a": 0.1}, false, false},
		{"small zone partially disrupted stops", map[string]ZoneState{"a": ZoneNormal, "b": ZoneNormal},
			map[string][]corev1.ConditionStatus{"a": statuses(T, U, U, U), "b": statuses(T)},
			map[string]ZoneState{"a": ZonePartialDisruption, "b": ZoneNormal}, map[string]float32{"a": 0}, false, false},
		{"every zone down: enter full disruption", map[string]ZoneState{"a": ZoneNormal, "b": ZoneFullDisruption},
			map[string][]corev1.ConditionStatus{"a": statuses(U), "b": statuses(U, F)},
			map[string]ZoneState{"a": ZoneFullDisruption, "b": ZoneFullDisruption}, map[string]float32{"a": 0, "b": 0}, true, false},
		{"still all down: nothing changes", map[string]ZoneState{"a": ZoneFullDisruption},
			map[string][]corev1.ConditionStatus{"a": statuses(U)},
			map[string]ZoneState{"a": ZoneFullDisruption}, map[string]float32{}, false, false},
		{"a node back: exit, every zone at its state's rate", map[string]ZoneState{"a": ZoneFullDisruption, "b": ZoneFullDisruption},
			map[string][]corev1.ConditionStatus{"a": statuses(T, U), "b": statuses(U)},
			map[string]ZoneState{"a": ZoneNormal, "b": ZoneFullDisruption}, map[string]float32{"a": 0.1, "b": 0.1}, false, true},
		{"a vanished zone is dropped", map[string]ZoneState{"a": ZoneNormal, "gone": ZoneNormal},
			map[string][]corev1.ConditionStatus{"a": statuses(T)},
			map[string]ZoneState{"a": ZoneNormal}, map[string]float32{}, false, false},
		{"a single node cluster losing its node enters full disruption", map[string]ZoneState{"": ZoneNormal},
			map[string][]corev1.ConditionStatus{"": statuses(U)},
			map[string]ZoneState{"": ZoneFullDisruption}, map[string]float32{"": 0}, true, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			d := DecideDisruption(tc.prev, tc.zones, r)
			if !maps.Equal(d.States, tc.wantStates) || !maps.Equal(d.Rates, tc.wantRates) || d.EnterFullDisruption != tc.enter || d.ExitFullDisruption != tc.exit {
				t.Fatalf("got states %v rates %v enter %v exit %v; want %v %v %v %v",
					d.States, d.Rates, d.EnterFullDisruption, d.ExitFullDisruption, tc.wantStates, tc.wantRates, tc.enter, tc.exit)
			}
		})
	}
}

func TestTokenBucket(t *testing.T) {
	b := NewTokenBucket(0.1, t0)
	steps := []struct {
		at   time.Duration
		want bool
	}{
		{0, true},                 // starts full
		{0, false},                // burst of one
		{9 * time.Second, false},  // 0.9 tokens
		{10 * time.Second, true},  // one token per 10 s
		{15 * time.Second, false}, // half a token
		{time.Minute, true},       // never more than one saved
		{time.Minute, false},
	}
	for _, s := range steps {
		if got := b.TryAccept(t0.Add(s.at)); got != s.want {
			t.Fatalf("TryAccept at +%v = %v, want %v", s.at, got, s.want)
		}
	}
	// Swapping to 0 stops; back to a rate starts empty (the zero-rate
	// bucket had no token), so the first admission waits 1/QPS.
	now := t0.Add(2 * time.Minute)
	b.Swap(0, now)
	if b.TryAccept(now.Add(time.Hour)) {
		t.Fatal("a zero-rate bucket admitted")
	}
	now = now.Add(time.Hour)
	b.Swap(1, now)
	if b.TryAccept(now) {
		t.Fatal("a bucket swapped from empty admitted at once")
	}
	if !b.TryAccept(now.Add(time.Second)) {
		t.Fatal("no admission after 1/QPS")
	}
	// Swapping a bucket that still has its token starts full.
	full := NewTokenBucket(0.1, t0)
	full.Swap(0.01, t0)
	if !full.TryAccept(t0) {
		t.Fatal("a bucket swapped while full did not admit")
	}
	// The same rate keeps the bucket as it is.
	same := NewTokenBucket(0.1, t0)
	same.TryAccept(t0)
	same.Swap(0.1, t0)
	if same.TryAccept(t0) {
		t.Fatal("swapping to the same rate refilled the bucket")
	}
}

func TestGateNoExecute(t *testing.T) {
	ne := func(key string) corev1.Taint { return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoExecute} }
	ns := func(key string) corev1.Taint { return corev1.Taint{Key: key, Effect: corev1.TaintEffectNoSchedule} }
	user := corev1.Taint{Key: "user", Value: "x", Effect: corev1.TaintEffectNoExecute}
	cases := []struct {
		name             string
		current, desired []corev1.Taint
		want             []corev1.Taint
		queue            bool
	}{
		{"nothing to change", []corev1.Taint{user}, nil, nil, false},
		{"a new NoExecute waits, the NoSchedule goes now", nil,
			[]corev1.Taint{ne(TaintUnreachable), ns(TaintUnreachable)}, []corev1.Taint{ns(TaintUnreachable)}, true},
		{"only the NoExecute is missing: nothing now, queue", []corev1.Taint{ns(TaintUnreachable)},
			[]corev1.Taint{ns(TaintUnreachable), ne(TaintUnreachable)}, nil, true},
		{"swap not-ready for unreachable at once", []corev1.Taint{ne(TaintNotReady), ns(TaintNotReady)},
			[]corev1.Taint{ne(TaintUnreachable), ns(TaintUnreachable)}, []corev1.Taint{ne(TaintUnreachable), ns(TaintUnreachable)}, false},
		{"removal at once", []corev1.Taint{ne(TaintUnreachable), user}, []corev1.Taint{user}, []corev1.Taint{user}, false},
		{"other taints are not gated", nil, []corev1.Taint{ns(TaintUnschedulable)}, []corev1.Taint{ns(TaintUnschedulable)}, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, q := GateNoExecute(tc.current, tc.desired)
			if q != tc.queue || (got == nil) != (tc.want == nil) || !taintsEqual(got, tc.want) {
				t.Fatalf("GateNoExecute = %v, %v; want %v, %v", got, q, tc.want, tc.queue)
			}
		})
	}
}

// zoneNode is node name in zone with the Ready status its kubelet posted
// at heartbeat.
func zoneNode(name, zone string, ready corev1.ConditionStatus, heartbeat time.Time) *corev1.Node {
	n := readyNode(ready, heartbeat)
	n.Name = name
	n.Labels = map[string]string{LabelZone: zone}
	return n
}

// TestNoExecuteTaintingIsRateLimitedPerZone drives the controller with a
// fake clock over nodes whose kubelets post Ready=False: zone a (10 nodes,
// 2 not ready: Normal) taints one node now and the next after 1/rate;
// zone b (4 nodes, 3 not ready: PartialDisruption, small) taints none;
// zone c (1 node, not ready: FullDisruption while others are not) taints
// at the normal rate.
func TestNoExecuteTaintingIsRateLimitedPerZone(t *testing.T) {
	clk := clocktesting.NewFakeClock(t0)
	var objs []runtime.Object
	for i := range 10 {
		st := T
		if i < 2 {
			st = F
		}
		objs = append(objs, zoneNode(fmt.Sprintf("a%d", i), "a", st, t0))
	}
	for i := range 4 {
		st := F
		if i == 3 {
			st = T
		}
		objs = append(objs, zoneNode(fmt.Sprintf("b%d", i), "b", st, t0))
	}
	objs = append(objs, zoneNode("c0", "c", F, t0))
	client := fake.NewClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	cfg := DefaultConfig()
	cfg.Defaults = DefaultTolerations{NotReadySeconds: -1, UnreachableSeconds: -1}
	c, err := New(client, factory.Core().V1().Nodes(), factory.Coordination().V1().Leases(), factory.Core().V1().Pods(), record.NewFakeRecorder(100), clk, cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); factory.Shutdown() }()
	startInformers(t, ctx, client, factory)

	noExecute := func() map[string]bool {
		out := map[string]bool{}
		nodes, _ := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
		for _, n := range nodes.Items {
			if taintSet(n.Spec.Taints)[TaintNotReady+":NoExecute"] {
				out[n.Name] = true
			}
		}
		return out
	}
	// settle waits until the controller's cache shows every write (the
	// fake clientset neither versions objects nor refuses stale writes).
	settle := func() {
		waitFor(t, "the node cache to catch up", func() bool {
			nodes, _ := client.CoreV1().Nodes().List(ctx, metav1.ListOptions{})
			for _, n := range nodes.Items {
				cached, err := c.nodeLister.Get(n.Name)
				if err != nil || !equality.Semantic.DeepEqual(cached.Spec, n.Spec) || !equality.Semantic.DeepEqual(cached.Status, n.Status) {
					return false
				}
			}
			return true
		})
	}
	pass := func() {
		c.MonitorNodes(ctx)
		c.TaintingPass(ctx)
		settle()
	}
	pass()
	if s := c.ZoneStates(); s[":\x00:a"] != ZoneNormal || s[":\x00:b"] != ZonePartialDisruption || s[":\x00:c"] != ZoneFullDisruption {
		t.Fatalf("zone states %v", s)
	}
	got := noExecute()
	if len(got) != 2 || !got["c0"] || (!got["a0"] && !got["a1"]) {
		t.Fatalf("first pass tainted %v, want c0 and one of a0/a1", got)
	}
	reg := prometheus.NewPedanticRegistry()
	reg.MustRegister(c)
	families, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	gathered := map[string]float64{}
	for _, f := range families {
		for _, m := range f.GetMetric() {
			v := m.GetGauge().GetValue() + m.GetCounter().GetValue()
			gathered[f.GetName()+"{"+strings.TrimPrefix(m.GetLabel()[0].GetValue(), ":\x00:")+"}"] = v
		}
	}
	want := map[string]float64{
		"node_collector_evictions_total{a}": 1, "node_collector_evictions_total{c}": 1,
		"node_collector_unhealthy_nodes_in_zone{a}": 2, "node_collector_unhealthy_nodes_in_zone{b}": 3, "node_collector_unhealthy_nodes_in_zone{c}": 1,
		"node_collector_zone_health{a}": 80, "node_collector_zone_health{b}": 25, "node_collector_zone_health{c}": 0,
		"node_collector_zone_size{a}": 10, "node_collector_zone_size{b}": 4, "node_collector_zone_size{c}": 1,
	}
	if !maps.Equal(gathered, want) {
		t.Fatalf("metrics %v, want %v", gathered, want)
	}
	// Every not-ready node has its NoSchedule taint at once.
	for _, name := range []string{"a0", "a1", "b0", "b1", "b2", "c0"} {
		n, _ := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if !taintSet(n.Spec.Taints)[TaintNotReady+":NoSchedule"] {
			t.Errorf("%s has no not-ready NoSchedule taint: %v", name, n.Spec.Taints)
		}
	}
	clk.Step(9 * time.Second)
	pass()
	if got := noExecute(); len(got) != 2 {
		t.Fatalf("after 9 s: %v tainted, want still 2 (0.1 nodes/s)", got)
	}
	clk.Step(time.Second)
	c.TaintingPass(ctx)
	settle()
	if got := noExecute(); len(got) != 3 || !got["a0"] || !got["a1"] {
		t.Fatalf("after 10 s: %v tainted, want a0, a1 and c0", got)
	}
	clk.Step(20 * time.Second) // 30 s: within the 40 s grace period
	pass()
	for name := range noExecute() {
		if name[0] == 'b' {
			t.Fatalf("%s in a small partially disrupted zone was tainted", name)
		}
	}
	// Every kubelet falls silent: all zones fully disrupted, so the
	// NoExecute taints are removed and none is added.
	clk.Step(time.Minute)
	pass()
	waitFor(t, "the cache to show every node Unknown", func() bool {
		nodes, _ := c.nodeLister.List(labels.Everything())
		for _, n := range nodes {
			if conditionStatus(n.Status.Conditions, corev1.NodeReady) != U {
				return false
			}
		}
		return true
	})
	clk.Step(time.Minute)
	pass()
	for z, s := range c.ZoneStates() {
		if s != ZoneFullDisruption {
			t.Fatalf("zone %q is %s, want FullDisruption", z, s)
		}
	}
	if got := noExecute(); len(got) != 0 {
		t.Fatalf("in full disruption %v still have NoExecute taints", got)
	}
	for _, name := range []string{"a0", "c0"} {
		n, _ := client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
		if taintSet(n.Spec.Taints)[TaintUnreachable+":NoExecute"] {
			t.Fatalf("%s got an unreachable NoExecute taint in full disruption", name)
		}
	}
}
