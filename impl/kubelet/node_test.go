package kubelet

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clienttesting "k8s.io/client-go/testing"
)

func readyStatus(n *v1.Node) v1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == v1.NodeReady {
			return c.Status
		}
	}
	return ""
}

// A node the node lifecycle controller marked Ready=Unknown while its
// kubelet was cut off is corrected at the kubelet's next status update,
// not only after the report frequency: the kubelet compares against the
// API's Node, not its own last write.
func TestNodeStatusCorrectsExternalUnknown(t *testing.T) {
	h := newHarness(t, nil)
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	nodes := h.client.CoreV1().Nodes()
	n, err := nodes.Get(h.ctx, "node-7", metav1.GetOptions{})
	if err != nil || readyStatus(n) != v1.ConditionTrue {
		t.Fatalf("registered node: Ready=%v, %v", readyStatus(n), err)
	}
	// The node lifecycle controller's write.
	for i := range n.Status.Conditions {
		n.Status.Conditions[i].Status = v1.ConditionUnknown
		n.Status.Conditions[i].Reason = "NodeStatusUnknown"
	}
	if _, err := nodes.UpdateStatus(h.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	h.step(DefaultNodeStatusUpdateFrequency)
	if err := h.k.updateNodeStatus(h.ctx, false); err != nil {
		t.Fatal(err)
	}
	n, _ = nodes.Get(h.ctx, "node-7", metav1.GetOptions{})
	if readyStatus(n) != v1.ConditionTrue {
		t.Fatalf("after the kubelet's status update Ready=%s, want True", readyStatus(n))
	}
	for _, c := range n.Status.Conditions {
		if !c.LastTransitionTime.Time.Equal(h.clock.Now()) {
			t.Errorf("%s: transition time %v, want now (it changed from Unknown)", c.Type, c.LastTransitionTime)
		}
	}
	// Unchanged and not due: no write.
	writes := 0
	h.client.PrependReactor("patch", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		writes++
		return false, nil, nil
	})
	h.step(DefaultNodeStatusUpdateFrequency)
	if err := h.k.updateNodeStatus(h.ctx, false); err != nil {
		t.Fatal(err)
	}
	if writes != 0 {
		t.Errorf("unchanged status was written again (%d writes)", writes)
	}
}

// A node status differing only in heartbeat times has not changed; a
// condition, the capacity's value or the images have; a quantity written
// another way has not.
func TestNodeStatusChanged(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	old := v1.NodeStatus{
		Capacity:   v1.ResourceList{v1.ResourceCPU: resource.MustParse("4")},
		Conditions: []v1.NodeCondition{{Type: v1.NodeReady, Status: v1.ConditionTrue, LastHeartbeatTime: t1, LastTransitionTime: t1}},
		Images:     []v1.ContainerImage{{Names: []string{"nginx:1.27"}, SizeBytes: 1}},
	}
	before := *old.DeepCopy()
	for _, c := range []struct {
		name    string
		change  func(*v1.NodeStatus)
		changed bool
	}{
		{"same", func(*v1.NodeStatus) {}, false},
		{"heartbeat", func(s *v1.NodeStatus) { s.Conditions[0].LastHeartbeatTime = metav1.NewTime(t1.Add(10 * time.Second)) }, false},
		{"quantity written another way", func(s *v1.NodeStatus) { s.Capacity[v1.ResourceCPU] = resource.MustParse("4000m") }, false},
		{"condition", func(s *v1.NodeStatus) { s.Conditions[0].Status = v1.ConditionFalse }, true},
		{"transition time", func(s *v1.NodeStatus) { s.Conditions[0].LastTransitionTime = metav1.NewTime(t1.Add(time.Second)) }, true},
		{"capacity", func(s *v1.NodeStatus) { s.Capacity[v1.ResourceCPU] = resource.MustParse("8") }, true},
		{"images", func(s *v1.NodeStatus) { s.Images = nil }, true},
	} {
		cur := old.DeepCopy()
		c.change(cur)
		if got := nodeStatusChanged(&old, cur); got != c.changed {
			t.Errorf("%s: changed %v, want %v", c.name, got, c.changed)
		}
	}
	if !reflect.DeepEqual(old, before) {
		t.Error("nodeStatusChanged changed its argument")
	}
}

// After a post of a changed status (or the first since the kubelet
// started) the next unchanged post is moved once by a uniform draw from
// [-every/2, +every/2); after a post that was only due, it is not moved.
func TestNextReportDelay(t *testing.T) {
	const every = 5 * time.Minute
	for _, c := range []struct {
		changed bool
		every   time.Duration
		r       float64
		want    time.Duration
	}{
		{true, every, 0, -every / 2},
		{true, every, 0.5, 0},
		{true, every, 0.75, every / 4},
		{true, every, 0.9999, every/2 - every/10000},
		{false, every, 0.1, 0},
		{true, 0, 0.1, 0},
	} {
		if got := NextReportDelay(c.changed, c.every, c.r); got != c.want {
			t.Errorf("NextReportDelay(%v, %v, %v) = %v, want %v", c.changed, c.every, c.r, got, c.want)
		}
	}
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		now, last time.Time
		delay     time.Duration
		want      bool
	}{
		{t0, time.Time{}, 0, true},
		{t0.Add(every - time.Second), t0, 0, false},
		{t0.Add(every), t0, 0, true},
		{t0.Add(every / 2), t0, -every / 2, true},
		{t0.Add(every/2 - time.Second), t0, -every / 2, false},
		{t0.Add(every), t0, every / 4, false},
		{t0.Add(every + every/4), t0, every / 4, true},
	} {
		if got := nodeReportDue(c.now, c.last, every, c.delay); got != c.want {
			t.Errorf("nodeReportDue(last+%v, delay %v) = %v, want %v", c.now.Sub(c.last), c.delay, got, c.want)
		}
	}
}

// A kubelet posts its unchanged node status first at the report frequency
// moved by the draw made when it registered, then every report frequency:
// kubelets started together do not post together.
func TestUnchangedNodeStatusPostedAtTheDrawnDelay(t *testing.T) {
	for _, c := range []struct {
		r     float64
		first time.Duration // after registering
	}{
		{0.1, 3 * time.Minute}, // 5 min - 2 min
		{0.9, 7 * time.Minute}, // 5 min + 2 min
		{0.5, 5 * time.Minute}, // no offset
	} {
		h := newHarness(t, nil)
		h.k.testReportRand = func() float64 { return c.r }
		if err := h.k.registerNode(h.ctx); err != nil {
			t.Fatal(err)
		}
		var posts []time.Duration
		start := h.clock.Now()
		h.client.PrependReactor("patch", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
			posts = append(posts, h.clock.Now().Sub(start))
			return false, nil, nil
		})
		// Every node status update period for 13 minutes.
		for h.clock.Now().Sub(start) < 13*time.Minute {
			h.step(DefaultNodeStatusUpdateFrequency)
			if err := h.k.updateNodeStatus(h.ctx, false); err != nil {
				t.Fatal(err)
			}
		}
		want := []time.Duration{c.first, c.first + DefaultNodeStatusReportFrequency}
		if c.first+2*DefaultNodeStatusReportFrequency <= 13*time.Minute {
			want = append(want, c.first+2*DefaultNodeStatusReportFrequency)
		}
		if !reflect.DeepEqual(posts, want) {
			t.Errorf("r=%v: unchanged status posted at %v after registering, want %v", c.r, posts, want)
		}
	}
}
