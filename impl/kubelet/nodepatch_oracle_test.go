package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	nodeutil "k8s.io/component-helpers/node/util"
	"pgregory.net/rapid"
)

// upstreamStatusPatch is the body k8s.io/component-helpers/node/util's
// PatchNodeStatus (what upstream's kubelet calls) sends for old and cur,
// recorded from a fake clientset holding old.
func upstreamStatusPatch(t *rapid.T, old, cur *v1.Node) string {
	client := fake.NewClientset(old.DeepCopy())
	var body string
	client.PrependReactor("patch", "nodes", func(a clienttesting.Action) (bool, runtime.Object, error) {
		body = string(a.(clienttesting.PatchAction).GetPatch())
		return true, old.DeepCopy(), nil
	})
	if _, _, err := nodeutil.PatchNodeStatus(client.CoreV1(), types.NodeName(old.Name), old, cur); err != nil {
		t.Fatalf("upstream's PatchNodeStatus: %v", err)
	}
	return body
}

// genNodeStatus draws a node status from the pieces the kubelet and other
// writers change: conditions (the kubelet's and a foreign one, in any
// order, with two heartbeat and transition times), addresses (dual-stack
// ones sharing a type among them), capacity (with an extended resource)
// and attached volumes.
func genNodeStatus(t *rapid.T, label string) v1.NodeStatus {
	times := []metav1.Time{
		metav1.NewTime(time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)),
		metav1.NewTime(time.Date(2026, 1, 1, 12, 5, 0, 0, time.UTC)),
	}
	types := []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure, v1.NodeReady, v1.NodeNetworkUnavailable}
	var st v1.NodeStatus
	for _, i := range rapid.Permutation([]int{0, 1, 2, 3, 4}).Draw(t, label+" condition order") {
		if !rapid.Bool().Draw(t, label+" has "+string(types[i])) {
			continue
		}
		st.Conditions = append(st.Conditions, v1.NodeCondition{
			Type:               types[i],
			Status:             rapid.SampledFrom([]v1.ConditionStatus{v1.ConditionTrue, v1.ConditionFalse, v1.ConditionUnknown}).Draw(t, label+" status"),
			Reason:             rapid.SampledFrom([]string{"", "KubeletReady", "NodeStatusUnknown"}).Draw(t, label+" reason"),
			LastHeartbeatTime:  rapid.SampledFrom(times).Draw(t, label+" heartbeat"),
			LastTransitionTime: rapid.SampledFrom(times).Draw(t, label+" transition"),
		})
	}
	addrs := []v1.NodeAddress{
		{Type: v1.NodeInternalIP, Address: "192.168.0.1"},
		{Type: v1.NodeInternalIP, Address: "fd00::1"},
		{Type: v1.NodeInternalIP, Address: "192.168.0.2"},
		{Type: v1.NodeHostName, Address: "n1"},
	}
	for _, i := range rapid.SliceOfNDistinct(rapid.IntRange(0, len(addrs)-1), 0, len(addrs), rapid.ID[int]).Draw(t, label+" addresses") {
		st.Addresses = append(st.Addresses, addrs[i])
	}
	if rapid.Bool().Draw(t, label+" has capacity") {
		st.Capacity = v1.ResourceList{v1.ResourceCPU: resource.MustParse(rapid.SampledFrom([]string{"4", "8"}).Draw(t, label+" cpu"))}
		if rapid.Bool().Draw(t, label+" has dongle") {
			st.Capacity["example.com/dongle"] = resource.MustParse("4")
		}
	}
	if rapid.Bool().Draw(t, label+" has volumes") {
		st.VolumesAttached = []v1.AttachedVolume{{Name: "kubernetes.io/csi/ebs^vol-1", DevicePath: "/dev/xvdba"}}
	}
	return st
}

// nodeStatusPatch sends, for any node as read and any new status, the very
// body upstream's PatchNodeStatus sends: the same two-way strategic merge
// patch, spec reset, and the same $patch: replace of changed addresses.
func TestNodeStatusPatchIsUpstreams(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		old := &v1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n1", ResourceVersion: "41", UID: "u1", Labels: map[string]string{"a": "b"}},
			Spec:       v1.NodeSpec{PodCIDR: "10.244.1.0/24"},
			Status:     genNodeStatus(t, "old"),
		}
		cur := old.DeepCopy()
		cur.Status = genNodeStatus(t, "new")
		if rapid.Bool().Draw(t, "spec changed") {
			cur.Spec.Unschedulable = true
		}
		want := upstreamStatusPatch(t, old, cur)
		got, err := nodeStatusPatch(old, cur)
		if err != nil {
			t.Fatalf("nodeStatusPatch: %v", err)
		}
		if string(got) != want {
			t.Fatalf("patch\n%s\nupstream's\n%s", got, want)
		}
	})
}
