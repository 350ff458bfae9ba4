package kubelet

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clienttesting "k8s.io/client-go/testing"
)

// The patch from a node as read to the node with its new status carries
// only what changed, as upstream's kubelet's two-way strategic merge patch
// (k8s.io/component-helpers/node/util): changed condition fields under
// their type with a $setElementOrder/conditions directive, deleted keys as
// null, never spec or a resourceVersion, and changed addresses as a whole
// list to replace.
func TestNodeStatusPatch(t *testing.T) {
	t1 := metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC))
	t2 := metav1.NewTime(time.Date(2026, 1, 1, 12, 5, 0, 0, time.UTC))
	old := &v1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "41", UID: "u1"},
		Spec:       v1.NodeSpec{PodCIDR: "10.244.1.0/24"},
		Status: v1.NodeStatus{
			Capacity: v1.ResourceList{v1.ResourceCPU: resource.MustParse("4"), v1.ResourcePods: resource.MustParse("110")},
			Conditions: []v1.NodeCondition{
				{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "KubeletHasSufficientMemory", LastHeartbeatTime: t1, LastTransitionTime: t1},
				{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: t1, LastTransitionTime: t1},
			},
			Addresses: []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.168.0.1"}, {Type: v1.NodeHostName, Address: "n1"}},
		},
	}
	for _, c := range []struct {
		name   string
		change func(*v1.Node)
		want   string
	}{
		{"nothing", func(*v1.Node) {}, `{}`},
		{"heartbeats", func(n *v1.Node) {
			for i := range n.Status.Conditions {
				n.Status.Conditions[i].LastHeartbeatTime = t2
			}
		}, `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"Ready"}],` +
			`"conditions":[{"lastHeartbeatTime":"2026-01-01T12:05:00Z","type":"MemoryPressure"},{"lastHeartbeatTime":"2026-01-01T12:05:00Z","type":"Ready"}]}}`},
		{"ready false", func(n *v1.Node) {
			n.Status.Conditions[1] = v1.NodeCondition{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "KubeletNotReady", LastHeartbeatTime: t2, LastTransitionTime: t2}
		}, `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"Ready"}],` +
			`"conditions":[{"lastHeartbeatTime":"2026-01-01T12:05:00Z","lastTransitionTime":"2026-01-01T12:05:00Z","reason":"KubeletNotReady","status":"False","type":"Ready"}]}}`},
		{"a capacity gone, one changed", func(n *v1.Node) {
			n.Status.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse("8")}
		}, `{"status":{"capacity":{"cpu":"8","pods":null}}}`},
		{"spec and resourceVersion are not patched", func(n *v1.Node) {
			n.Spec.Unschedulable = true
			n.ResourceVersion = "42"
		}, `{"metadata":{"resourceVersion":"42"}}`},
		{"addresses replaced whole", func(n *v1.Node) {
			n.Status.Addresses = []v1.NodeAddress{{Type: v1.NodeInternalIP, Address: "192.168.0.1"}, {Type: v1.NodeInternalIP, Address: "fd00::1"}, {Type: v1.NodeHostName, Address: "n1"}}
		}, `{"status":{"addresses":[{"address":"192.168.0.1","type":"InternalIP"},{"address":"fd00::1","type":"InternalIP"},{"address":"n1","type":"Hostname"},{"$patch":"replace"}]}}`},
	} {
		cur := old.DeepCopy()
		c.change(cur)
		before := old.DeepCopy()
		got, err := nodeStatusPatch(old, cur)
		if err != nil {
			t.Errorf("%s: %v", c.name, err)
			continue
		}
		if string(got) != c.want {
			t.Errorf("%s: patch\n%s\nwant\n%s", c.name, got, c.want)
		}
		if !reflect.DeepEqual(old, before) {
			t.Errorf("%s: nodeStatusPatch changed the node as read", c.name)
		}
	}
	// A node read without addresses (a first post) gets them merged in,
	// without an order directive (there was no list to reorder).
	bare := old.DeepCopy()
	bare.Status.Addresses = nil
	got, err := nodeStatusPatch(bare, old)
	if err != nil || string(got) != `{"status":{"addresses":[{"address":"192.168.0.1","type":"InternalIP"},{"address":"n1","type":"Hostname"}]}}` {
		t.Errorf("addresses on a node read without: %s, %v", got, err)
	}
}

// statusPatches records the kubelet's patches of nodes/NAME/status.
type statusPatches struct {
	bodies []string
	fail   func(try int) error // the answer to the try'th patch (from 0), nil to apply it
}

func (s *statusPatches) react(a clienttesting.Action) (bool, runtime.Object, error) {
	p, ok := a.(clienttesting.PatchAction)
	if !ok || p.GetSubresource() != "status" {
		return false, nil, nil
	}
	try := len(s.bodies)
	s.bodies = append(s.bodies, string(p.GetPatch()))
	if p.GetPatchType() != types.StrategicMergePatchType || p.GetName() != "node-7" {
		return true, nil, apierrors.NewBadRequest("not a strategic merge patch of node-7's status: " + string(p.GetPatchType()))
	}
	if s.fail != nil {
		if err := s.fail(try); err != nil {
			return true, nil, err
		}
	}
	return false, nil, nil
}

// nodeGets are the resourceVersions of the kubelet's reads of its Node.
func nodeGets(h *harness) []string {
	var rvs []string
	for _, a := range h.client.Actions() {
		if g, ok := a.(clienttesting.GetAction); ok && a.GetVerb() == "get" && a.GetResource().Resource == "nodes" {
			rvs = append(rvs, g.(clienttesting.GetActionImpl).GetOptions.ResourceVersion)
		}
	}
	return rvs
}

// The kubelet writes its node status as a strategic merge patch of
// nodes/NAME/status computed from the Node it read (failed before: it sent
// an update of the whole Node), and never an update.
func TestNodeStatusPostedAsPatch(t *testing.T) {
	h := newHarness(t, nil)
	h.k.testReportRand = func() float64 { return 0.5 } // due every 5 min
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	var sp statusPatches
	h.client.PrependReactor("patch", "nodes", sp.react)
	h.client.ClearActions()
	h.step(DefaultNodeStatusReportFrequency)
	if err := h.k.updateNodeStatus(h.ctx, false); err != nil {
		t.Fatal(err)
	}
	want := `{"status":{"$setElementOrder/conditions":[{"type":"MemoryPressure"},{"type":"DiskPressure"},{"type":"PIDPressure"},{"type":"Ready"}],"conditions":[` +
		`{"lastHeartbeatTime":"2026-01-01T12:05:00Z","type":"MemoryPressure"},{"lastHeartbeatTime":"2026-01-01T12:05:00Z","type":"DiskPressure"},` +
		`{"lastHeartbeatTime":"2026-01-01T12:05:00Z","type":"PIDPressure"},{"lastHeartbeatTime":"2026-01-01T12:05:00Z","type":"Ready"}]}}`
	if len(sp.bodies) != 1 || sp.bodies[0] != want {
		t.Fatalf("status patches %q, want one:\n%s", sp.bodies, want)
	}
	for _, a := range h.client.Actions() {
		if a.GetVerb() == "update" && a.GetResource().Resource == "nodes" {
			t.Errorf("node written with an update: %v", a)
		}
	}
	if got := nodeGets(h); len(got) != 1 || got[0] != "0" {
		t.Errorf("node reads %q, want one from the API server's cache (resourceVersion 0)", got)
	}
	n, err := h.client.CoreV1().Nodes().Get(h.ctx, "node-7", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range n.Status.Conditions {
		if !c.LastHeartbeatTime.Time.Equal(t0.Add(DefaultNodeStatusReportFrequency)) || !c.LastTransitionTime.Time.Equal(t0) {
			t.Errorf("%s after the patch: heartbeat %v, transition %v", c.Type, c.LastHeartbeatTime, c.LastTransitionTime)
		}
	}
}

// A failed node status post is retried at once, whatever the error, up to
// five tries in all, each retry reading the Node from storage rather than
// the API server's cache, as upstream's kubelet (nodeStatusUpdateRetry);
// after the fifth failure updateNodeStatus gives up with upstream's
// message. Failed before: it retried once, and only on a conflict.
func TestNodeStatusRetriedFiveTimes(t *testing.T) {
	for _, c := range []struct {
		name     string
		failures int
		err      error
	}{
		{"500 then success", 1, apierrors.NewInternalError(errors.New("etcdserver: request timed out"))},
		{"timeouts until the last try", 4, apierrors.NewTimeoutError("request did not complete within the allowed duration", 0)},
		{"always 500", 5, apierrors.NewInternalError(errors.New("etcdserver: leader changed"))},
		{"always 429", 5, apierrors.NewTooManyRequests("too many requests", 1)},
	} {
		t.Run(c.name, func(t *testing.T) {
			var logs bytes.Buffer
			h := newHarness(t, func(cfg *Config) {
				cfg.Logger = slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelError}))
			})
			if err := h.k.registerNode(h.ctx); err != nil {
				t.Fatal(err)
			}
			sp := statusPatches{fail: func(try int) error {
				if try < c.failures {
					return c.err
				}
				return nil
			}}
			h.client.PrependReactor("patch", "nodes", sp.react)
			h.client.ClearActions()
			h.step(DefaultNodeStatusUpdateFrequency)
			err := h.k.updateNodeStatus(h.ctx, true)
			tries := min(c.failures+1, nodeStatusUpdateRetry)
			if len(sp.bodies) != tries {
				t.Errorf("%d status patches, want %d", len(sp.bodies), tries)
			}
			wantGets := []string{"0"}
			for range tries - 1 {
				wantGets = append(wantGets, "")
			}
			if got := nodeGets(h); strings.Join(got, ",") != strings.Join(wantGets, ",") {
				t.Errorf("node reads with resourceVersions %q, want %q", got, wantGets)
			}
			if n := strings.Count(logs.String(), `msg="Error updating node status, will retry"`); n != min(c.failures, nodeStatusUpdateRetry) {
				t.Errorf("%d tries logged as failed, want %d:\n%s", n, min(c.failures, nodeStatusUpdateRetry), logs.String())
			}
			if c.failures < nodeStatusUpdateRetry {
				if err != nil {
					t.Fatalf("updateNodeStatus: %v", err)
				}
				return
			}
			if err == nil || !strings.HasPrefix(err.Error(), "update node status exceeds retry count") || !errors.Is(err, c.err) {
				t.Errorf("after %d failures: %v", c.failures, err)
			}
		})
	}
	// A failed read is retried too.
	h := newHarness(t, nil)
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	reads := 0
	h.client.PrependReactor("get", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		reads++
		if reads == 1 {
			return true, nil, apierrors.NewServiceUnavailable("apiserver is shutting down")
		}
		return false, nil, nil
	})
	var sp statusPatches
	h.client.PrependReactor("patch", "nodes", sp.react)
	h.step(DefaultNodeStatusUpdateFrequency)
	if err := h.k.updateNodeStatus(h.ctx, true); err != nil || reads != 2 || len(sp.bodies) != 1 {
		t.Errorf("after a failed read: %v, %d reads, %d patches", err, reads, len(sp.bodies))
	}
}

// What other writers put in the node's status — a route controller's
// NetworkUnavailable condition, the attach/detach controller's attached
// volumes — survives the kubelet's status posts, as upstream's status
// setters change the Node as read in place: the kubelet's conditions
// replace their namesakes where they stand, and those missing are appended.
// Failed before: the kubelet's status was built afresh, so its patch
// deleted them.
func TestNodeStatusKeepsOtherWritersFields(t *testing.T) {
	t1 := metav1.NewTime(t0.Add(-time.Hour))
	old := &v1.NodeStatus{
		Conditions: []v1.NodeCondition{
			{Type: v1.NodeNetworkUnavailable, Status: v1.ConditionFalse, Reason: "RouteCreated", Message: "RouteController created a route", LastTransitionTime: t1},
			{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", LastHeartbeatTime: t1, LastTransitionTime: t1},
			{Type: v1.NodeMemoryPressure, Status: v1.ConditionTrue, Reason: "KubeletHasInsufficientMemory", LastHeartbeatTime: t1, LastTransitionTime: t1},
		},
		VolumesAttached: []v1.AttachedVolume{{Name: "kubernetes.io/csi/ebs^vol-1", DevicePath: "/dev/xvdba"}},
	}
	cfg := Config{NodeName: "n1", NodeIP: "192.168.0.1"}
	st := NodeStatus(&cfg, old, Pressure{}, "sim://1", nil, t0)
	var got []string
	for _, c := range st.Conditions {
		got = append(got, fmt.Sprintf("%s=%s@%s", c.Type, c.Status, c.LastTransitionTime.UTC().Format(time.TimeOnly)))
	}
	want := []string{"NetworkUnavailable=False@11:00:00", "Ready=True@11:00:00", "MemoryPressure=False@12:00:00", "DiskPressure=False@12:00:00", "PIDPressure=False@12:00:00"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("conditions %v, want %v", got, want)
	}
	if !reflect.DeepEqual(st.VolumesAttached, old.VolumesAttached) {
		t.Errorf("volumes attached %v, want %v", st.VolumesAttached, old.VolumesAttached)
	}

	// Through the kubelet: another writer's condition and volumes are in
	// the node it reads, and still there after it posted.
	h := newHarness(t, nil)
	h.k.testReportRand = func() float64 { return 0.5 }
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	nodes := h.client.CoreV1().Nodes()
	n, err := nodes.Get(h.ctx, "node-7", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	n.Status.Conditions = append([]v1.NodeCondition{old.Conditions[0]}, n.Status.Conditions...)
	n.Status.VolumesAttached = old.VolumesAttached
	if _, err := nodes.UpdateStatus(h.ctx, n, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	var sp statusPatches
	h.client.PrependReactor("patch", "nodes", sp.react)
	h.step(DefaultNodeStatusReportFrequency)
	if err := h.k.updateNodeStatus(h.ctx, false); err != nil {
		t.Fatal(err)
	}
	if len(sp.bodies) != 1 || strings.Contains(sp.bodies[0], "$patch") || strings.Contains(sp.bodies[0], "volumesAttached") {
		t.Errorf("status patches %q, want one touching only the kubelet's conditions", sp.bodies)
	}
	n, err = nodes.Get(h.ctx, "node-7", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(n.Status.Conditions) != 5 || n.Status.Conditions[0].Type != v1.NodeNetworkUnavailable || len(n.Status.VolumesAttached) != 1 {
		t.Errorf("node after the kubelet's post: conditions %+v, volumes attached %+v", n.Status.Conditions, n.Status.VolumesAttached)
	}
}

// A pressure condition whose status holds keeps what the node as read has
// in it but its heartbeat, as upstream's MemoryPressureCondition,
// DiskPressureCondition and PIDPressureCondition setters, which update the
// last condition of their type in place and write their own reason and
// message only on a transition (or to a condition they add). The Ready
// setter replaces the first Ready condition whole. The deprecated phase,
// which no setter touches, is kept as read. Failed before: a holding
// pressure condition got the kubelet's reason and message, the first
// namesake was updated, and the phase was cleared (its patch sent
// "phase": null).
func TestNodeStatusPressureConditionsAsUpstreams(t *testing.T) {
	t1 := metav1.NewTime(t0.Add(-time.Hour))
	old := &v1.NodeStatus{
		Phase: v1.NodeRunning,
		Conditions: []v1.NodeCondition{
			{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "Custom", Message: "written by another", LastHeartbeatTime: t1, LastTransitionTime: t1},
			{Type: v1.NodeDiskPressure, Status: v1.ConditionUnknown, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.", LastHeartbeatTime: t1, LastTransitionTime: t1},
			{Type: v1.NodePIDPressure, Status: v1.ConditionTrue, Reason: "First", LastHeartbeatTime: t1, LastTransitionTime: t1},
			{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "FirstReady", Message: "m", LastHeartbeatTime: t1, LastTransitionTime: t1},
			{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "Second", Message: "kept", LastHeartbeatTime: t1, LastTransitionTime: t1},
			{Type: v1.NodeReady, Status: v1.ConditionFalse, Reason: "SecondReady", LastHeartbeatTime: t1, LastTransitionTime: t1},
		},
	}
	cfg := Config{NodeName: "n1", NodeIP: "192.168.0.1"}
	st := NodeStatus(&cfg, old, Pressure{}, "sim://1", nil, t0)
	now := metav1.NewTime(t0)
	want := []v1.NodeCondition{
		{Type: v1.NodeMemoryPressure, Status: v1.ConditionFalse, Reason: "Custom", Message: "written by another", LastHeartbeatTime: now, LastTransitionTime: t1},
		{Type: v1.NodeDiskPressure, Status: v1.ConditionFalse, Reason: "KubeletHasNoDiskPressure", Message: "kubelet has no disk pressure", LastHeartbeatTime: now, LastTransitionTime: now},
		old.Conditions[2],
		{Type: v1.NodeReady, Status: v1.ConditionTrue, Reason: "KubeletReady", Message: "kubelet is posting ready status", LastHeartbeatTime: now, LastTransitionTime: t1},
		{Type: v1.NodePIDPressure, Status: v1.ConditionFalse, Reason: "Second", Message: "kept", LastHeartbeatTime: now, LastTransitionTime: t1},
		old.Conditions[5],
	}
	for i := range max(len(st.Conditions), len(want)) {
		var g, w v1.NodeCondition
		if i < len(st.Conditions) {
			g = st.Conditions[i]
		}
		if i < len(want) {
			w = want[i]
		}
		if !reflect.DeepEqual(g, w) {
			t.Errorf("condition %d: %+v, want %+v", i, g, w)
		}
	}
	if st.Phase != v1.NodeRunning {
		t.Errorf("phase %q, want %q as read", st.Phase, v1.NodeRunning)
	}

	// A transition writes the kubelet's reason and message to the last
	// namesake.
	st = NodeStatus(&cfg, old, Pressure{Memory: true, PID: true}, "sim://1", nil, t0)
	if c := st.Conditions[0]; c.Status != v1.ConditionTrue || c.Reason != "KubeletHasInsufficientMemory" || c.Message != "kubelet has insufficient memory available" || !c.LastTransitionTime.Equal(&now) {
		t.Errorf("memory pressure after a transition: %+v", c)
	}
	if c := st.Conditions[4]; c.Status != v1.ConditionTrue || c.Reason != "KubeletHasInsufficientPID" || c.Message != "kubelet has insufficient PID available" || !c.LastTransitionTime.Equal(&now) {
		t.Errorf("PID pressure after a transition: %+v", c)
	}
	if !reflect.DeepEqual(st.Conditions[2], old.Conditions[2]) {
		t.Errorf("first PID pressure condition %+v, want it untouched", st.Conditions[2])
	}

	// The patch leaves the phase alone.
	n := &v1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Status: *old}
	next := n.DeepCopy()
	next.Status = st
	patch, err := nodeStatusPatch(n, next)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(patch), `"phase"`) {
		t.Errorf("patch %s touches the phase", patch)
	}
}
