package nodelifecycle

import (
	"fmt"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var timing = Timing{MonitorGrace: 40 * time.Second, StartupGrace: time.Minute}

func readyNode(status corev1.ConditionStatus, heartbeat time.Time) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))},
		Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{
			{Type: corev1.NodeReady, Status: status, LastHeartbeatTime: metav1.NewTime(heartbeat), Reason: "KubeletReady"},
			{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse, LastHeartbeatTime: metav1.NewTime(heartbeat)},
		}},
	}
}

func lease(renew time.Time) *coordinationv1.Lease {
	r := metav1.NewMicroTime(renew)
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "n1", Namespace: NodeLeaseNamespace}, Spec: coordinationv1.LeaseSpec{RenewTime: &r}}
}

func taintSet(ts []corev1.Taint) map[string]bool {
	m := map[string]bool{}
	for _, t := range ts {
		m[t.Key+":"+string(t.Effect)] = true
	}
	return m
}

func TestLeaseGracePeriod(t *testing.T) {
	node := readyNode(corev1.ConditionTrue, t0)
	// First pass at t0: healthy, nothing to write.
	d := DecideNode(node, lease(t0), nil, t0, timing)
	if d.Conditions != nil || d.Taints != nil {
		t.Fatalf("healthy node changed: %+v", d)
	}
	h := d.Health
	// The kubelet keeps renewing its lease but stops posting status: healthy.
	for s := 10; s <= 100; s += 10 {
		now := t0.Add(time.Duration(s) * time.Second)
		d = DecideNode(node, lease(now), &h, now, timing)
		h = d.Health
		if d.Conditions != nil {
			t.Fatalf("at +%ds a node renewing its lease was marked unknown", s)
		}
	}
	// Lease renewals stop at +100s: still fine at +140s, Unknown after.
	d = DecideNode(node, lease(t0.Add(100*time.Second)), &h, t0.Add(140*time.Second), timing)
	if d.Conditions != nil {
		t.Fatal("marked unknown exactly at the grace period")
	}
	now := t0.Add(141 * time.Second)
	d = DecideNode(node, lease(t0.Add(100*time.Second)), &d.Health, now, timing)
	if d.Conditions == nil {
		t.Fatal("not marked unknown after the grace period")
	}
	for _, c := range d.Conditions[:2] { // the two the kubelet had posted
		if c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" || c.Message != "Kubelet stopped posting node status." {
			t.Fatalf("condition %+v", c)
		}
		if !c.LastHeartbeatTime.Time.Equal(t0) || !c.LastTransitionTime.Time.Equal(now) {
			t.Fatalf("times of %s: heartbeat %v transition %v", c.Type, c.LastHeartbeatTime, c.LastTransitionTime)
		}
	}
	if c := d.Conditions[2]; c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusNeverUpdated" {
		t.Fatalf("missing conditions must be added as never updated: %+v", c)
	}
	// The NoSchedule taint follows the conditions at once; the NoExecute
	// one the Ready read, Unknown from the next pass on.
	ts := taintSet(d.Taints)
	if !ts[TaintUnreachable+":NoSchedule"] || len(ts) != 1 {
		t.Fatalf("taints %v", ts)
	}
	next := node.DeepCopy()
	next.Status.Conditions, next.Spec.Taints = d.Conditions, d.Taints
	now = now.Add(5 * time.Second)
	d = DecideNode(next, lease(t0.Add(100*time.Second)), &d.Health, now, timing)
	if d.Conditions != nil {
		t.Fatalf("conditions written again: %+v", d.Conditions)
	}
	ts = taintSet(d.Taints)
	if !ts[TaintUnreachable+":NoExecute"] || !ts[TaintUnreachable+":NoSchedule"] || len(ts) != 2 {
		t.Fatalf("taints on the next pass %v", ts)
	}
	for _, tt := range d.Taints {
		if tt.Effect == corev1.TaintEffectNoExecute && (tt.TimeAdded == nil || !tt.TimeAdded.Time.Equal(now)) {
			t.Fatalf("NoExecute taint without timeAdded: %+v", tt)
		}
	}
}

func TestTaintsFollowConditions(t *testing.T) {
	now := t0
	unreachable := []corev1.Taint{{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute}, {Key: TaintUnreachable, Effect: corev1.TaintEffectNoSchedule}, {Key: "user", Value: "x", Effect: corev1.TaintEffectNoSchedule}}
	tests := []struct {
		name    string
		node    func() *corev1.Node
		want    []string
		changed bool
	}{
		{"kubelet reports NotReady", func() *corev1.Node { return readyNode(corev1.ConditionFalse, now) },
			[]string{TaintNotReady + ":NoExecute", TaintNotReady + ":NoSchedule"}, true},
		{"recovered node loses unreachable taints, keeps the user's", func() *corev1.Node {
			n := readyNode(corev1.ConditionTrue, now)
			n.Spec.Taints = unreachable
			return n
		}, []string{"user:NoSchedule"}, true},
		{"memory pressure", func() *corev1.Node {
			n := readyNode(corev1.ConditionTrue, now)
			n.Status.Conditions[1].Status = corev1.ConditionTrue
			return n
		}, []string{TaintMemoryPressure + ":NoSchedule"}, true},
		{"cordoned", func() *corev1.Node {
			n := readyNode(corev1.ConditionTrue, now)
			n.Spec.Unschedulable = true
			return n
		}, []string{TaintUnschedulable + ":NoSchedule"}, true},
		{"healthy, untainted", func() *corev1.Node { return readyNode(corev1.ConditionTrue, now) }, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := DecideNode(tt.node(), nil, nil, now, timing)
			if (d.Taints != nil) != tt.changed {
				t.Fatalf("changed=%v, want %v", d.Taints != nil, tt.changed)
			}
			got := taintSet(d.Taints)
			if len(got) != len(tt.want) {
				t.Fatalf("taints %v, want %v", got, tt.want)
			}
			for _, w := range tt.want {
				if !got[w] {
					t.Fatalf("taints %v lack %s", got, w)
				}
			}
		})
	}
}

func TestNodeThatNeverPostedStatus(t *testing.T) {
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0)}}
	if d := DecideNode(node, nil, nil, t0.Add(59*time.Second), timing); d.Conditions != nil {
		t.Fatal("marked before the startup grace period")
	}
	d := DecideNode(node, nil, nil, t0.Add(61*time.Second), timing)
	if len(d.Conditions) != 4 || d.Conditions[0].Reason != "NodeStatusNeverUpdated" || d.Conditions[0].Message != "Kubelet never posted node status." {
		t.Fatalf("conditions %+v", d.Conditions)
	}
}

func toleration(key string, seconds *int64) corev1.Toleration {
	return corev1.Toleration{Key: key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: seconds}
}

func secs(s int64) *int64 { return &s }

func TestDecideEviction(t *testing.T) {
	unreachable := []corev1.Taint{{Key: TaintUnreachable, Effect: corev1.TaintEffectNoExecute}}
	custom := []corev1.Taint{{Key: "dedicated", Value: "gpu", Effect: corev1.TaintEffectNoExecute}}
	noSchedule := []corev1.Taint{{Key: "x", Effect: corev1.TaintEffectNoSchedule}}
	defaults := DefaultTolerations{NotReadySeconds: 300, UnreachableSeconds: 300}
	since := t0
	tests := []struct {
		name     string
		tols     []corev1.Toleration
		taints   []corev1.Taint
		defaults DefaultTolerations
		now      time.Time
		want     Eviction
	}{
		{"no taints", nil, nil, defaults, t0, Eviction{Kind: Keep}},
		{"NoSchedule taints do not evict", nil, noSchedule, defaults, t0, Eviction{Kind: Keep}},
		{"untolerated NoExecute: evict now", nil, custom, defaults, t0, Eviction{Kind: EvictNow}},
		{"tolerated by value", []corev1.Toleration{{Key: "dedicated", Operator: corev1.TolerationOpEqual, Value: "gpu", Effect: corev1.TaintEffectNoExecute}}, custom, defaults, t0, Eviction{Kind: Keep}},
		{"wrong value: evict", []corev1.Toleration{{Key: "dedicated", Value: "cpu"}}, custom, defaults, t0, Eviction{Kind: EvictNow}},
		{"default 300s toleration for unreachable", nil, unreachable, defaults, t0, Eviction{Kind: EvictAt, At: since.Add(300 * time.Second)}},
		{"default toleration expired", nil, unreachable, defaults, t0.Add(300 * time.Second), Eviction{Kind: EvictNow}},
		{"no default: evict at once", nil, unreachable, DefaultTolerations{NotReadySeconds: -1, UnreachableSeconds: -1}, t0, Eviction{Kind: EvictNow}},
		{"own tolerationSeconds win over the default", []corev1.Toleration{toleration(TaintUnreachable, secs(10))}, unreachable, defaults, t0, Eviction{Kind: EvictAt, At: since.Add(10 * time.Second)}},
		{"tolerated forever", []corev1.Toleration{toleration(TaintUnreachable, nil)}, unreachable, defaults, t0.Add(time.Hour), Eviction{Kind: Keep}},
		{"smallest of several tolerations", []corev1.Toleration{toleration(TaintUnreachable, secs(60)), {Operator: corev1.TolerationOpExists, TolerationSeconds: secs(20)}},
			unreachable, defaults, t0, Eviction{Kind: EvictAt, At: since.Add(20 * time.Second)}},
		{"one of two taints untolerated", []corev1.Toleration{toleration(TaintUnreachable, nil)}, append(append([]corev1.Taint(nil), unreachable...), custom...), defaults, t0, Eviction{Kind: EvictNow}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns"}, Spec: corev1.PodSpec{NodeName: "n1", Tolerations: tt.tols}}
			if got := DecideEviction(pod, tt.taints, tt.defaults, since, tt.now); got != tt.want {
				t.Fatalf("got %+v, want %+v", got, tt.want)
			}
		})
	}
}

// The pods to mark are those whose Ready condition is not already False,
// terminating and finished ones too (upstream's MarkPodsNotReady).
func TestPodsToMarkNotReady(t *testing.T) {
	withReady := func(name string, status corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: corev1.PodStatus{Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: status}}}}
	}
	ready := withReady("ready", corev1.ConditionTrue)
	unknown := withReady("unknown", corev1.ConditionUnknown)
	notReady := withReady("not-ready", corev1.ConditionFalse)
	noCondition := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "no-condition"}}
	terminating := withReady("terminating", corev1.ConditionTrue)
	terminating.DeletionTimestamp = &metav1.Time{Time: t0}
	succeeded := withReady("succeeded", corev1.ConditionTrue)
	succeeded.Status.Phase = corev1.PodSucceeded
	var names []string
	for _, p := range PodsToMarkNotReady([]*corev1.Pod{ready, unknown, notReady, noCondition, terminating, succeeded}) {
		names = append(names, p.Name)
	}
	if got, want := fmt.Sprint(names), "[ready unknown terminating succeeded]"; got != want {
		t.Fatalf("pods to mark %s, want %s", got, want)
	}
}
