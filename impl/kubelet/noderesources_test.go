package kubelet

import (
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// A resource another writer advertised in the node's capacity (the
// "Advertise Extended Resources for a Node" task: a PATCH of
// nodes/NAME/status adding example.com/dongle) stays in the capacity the
// kubelet posts and is allocatable in full, as upstream's MachineInfo
// setter, which never removes a capacity; an extended resource left in the
// allocatable without a capacity is dropped. Failed before: the kubelet's
// status was its own capacity only, so its patch deleted the dongles.
func TestNodeStatusKeepsAdvertisedResources(t *testing.T) {
	dongles := resource.MustParse("4")
	cfg := Config{NodeName: "n1", NodeIP: "192.168.0.1", CPU: resource.MustParse("2"), Memory: resource.MustParse("4Gi"), MaxPods: 110}
	old := &v1.NodeStatus{
		Capacity:    v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), "example.com/dongle": dongles},
		Allocatable: v1.ResourceList{v1.ResourceCPU: resource.MustParse("8"), "example.com/gone": resource.MustParse("1")},
	}
	st := NodeStatus(&cfg, old, Pressure{}, "sim://1", nil, t0)
	wantCapacity := cfg.capacity()
	wantCapacity["example.com/dongle"] = dongles
	wantAllocatable := cfg.allocatable()
	wantAllocatable["example.com/dongle"] = dongles
	if !apiequality.Semantic.DeepEqual(st.Capacity, wantCapacity) || !apiequality.Semantic.DeepEqual(st.Allocatable, wantAllocatable) {
		t.Errorf("capacity %v, allocatable %v; want %v, %v", st.Capacity, st.Allocatable, wantCapacity, wantAllocatable)
	}
	if st := NodeStatus(&cfg, nil, Pressure{}, "sim://1", nil, t0); !apiequality.Semantic.DeepEqual(st.Capacity, cfg.capacity()) || !apiequality.Semantic.DeepEqual(st.Allocatable, cfg.allocatable()) {
		t.Errorf("registration: capacity %v, allocatable %v; want the config's", st.Capacity, st.Allocatable)
	}

	// Through the kubelet: the dongles patched in stay after its post.
	h := newHarness(t, nil)
	h.k.testReportRand = func() float64 { return 0.5 }
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	nodes := h.client.CoreV1().Nodes()
	if _, err := nodes.Patch(h.ctx, "node-7", types.StrategicMergePatchType,
		[]byte(`{"status":{"capacity":{"example.com/dongle":"4"}}}`), metav1.PatchOptions{}, "status"); err != nil {
		t.Fatal(err)
	}
	var sp statusPatches
	h.client.PrependReactor("patch", "nodes", sp.react)
	h.step(DefaultNodeStatusReportFrequency)
	if err := h.k.updateNodeStatus(h.ctx, false); err != nil {
		t.Fatal(err)
	}
	if len(sp.bodies) != 1 || strings.Contains(sp.bodies[0], `"example.com/dongle":null`) {
		t.Errorf("status patches %q, want one keeping the dongles", sp.bodies)
	}
	n, err := nodes.Get(h.ctx, "node-7", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if c, a := n.Status.Capacity["example.com/dongle"], n.Status.Allocatable["example.com/dongle"]; c.Cmp(dongles) != 0 || a.Cmp(dongles) != 0 {
		t.Errorf("node after the kubelet's post: dongle capacity %v, allocatable %v, want 4 and 4", &c, &a)
	}
}
