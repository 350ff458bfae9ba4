package cache

import (
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

// The facts a NodeInfo keeps of its node (name, spec.unschedulable, taints
// by effect, allocatable) are the node's latest version's in the next
// snapshot: an update that cordons, taints or resizes a node, and the one
// that undoes it, are seen by the next cycle, in the NodeInfo the snapshot
// already had for it.
func TestNodeUpdatesReachTheSnapshotsNodeFacts(t *testing.T) {
	c := New(0, nil)
	c.AddNode(tu.Node("a").Capacity("cpu", "4", "pods", "110").Obj())
	c.AddNode(tu.Node("b").Capacity("cpu", "4", "pods", "110").Obj())
	snap := NewEmptySnapshot()
	update(t, c, snap)
	before, _ := snap.Get("b")

	type facts struct {
		name          string
		unschedulable bool
		noSchedule    []string
		prefer        []string
		cpu           int64
		pods          int
	}
	factsOf := func(ni *fw.NodeInfo) facts {
		f := facts{name: ni.Name(), unschedulable: ni.Unschedulable(), cpu: ni.Allocatable.MilliCPU, pods: ni.Allocatable.AllowedPodNumber}
		if nt := ni.Taints(); nt != nil {
			for _, t := range nt.NoScheduleOrNoExecute {
				f.noSchedule = append(f.noSchedule, t.Key+":"+string(t.Effect))
			}
			for _, t := range nt.PreferNoSchedule {
				f.prefer = append(f.prefer, t.Key)
			}
		}
		return f
	}
	equal := func(a, b facts) bool {
		return a.name == b.name && a.unschedulable == b.unschedulable && a.cpu == b.cpu && a.pods == b.pods &&
			slices.Equal(a.noSchedule, b.noSchedule) && slices.Equal(a.prefer, b.prefer)
	}
	for _, tc := range []struct {
		name string
		node *v1.Node
		want facts
	}{
		{"cordoned", tu.Node("b").Capacity("cpu", "4", "pods", "110").Unschedulable().Obj(),
			facts{name: "b", unschedulable: true, cpu: 4000, pods: 110}},
		{"tainted, in the node's order, split by effect", tu.Node("b").Capacity("cpu", "4", "pods", "110").
			Taint("x", "", v1.TaintEffectNoExecute).Taint("p", "", v1.TaintEffectPreferNoSchedule).Taint("y", "1", v1.TaintEffectNoSchedule).Obj(),
			facts{name: "b", noSchedule: []string{"x:NoExecute", "y:NoSchedule"}, prefer: []string{"p"}, cpu: 4000, pods: 110}},
		{"resized", tu.Node("b").Capacity("cpu", "8", "pods", "20").Obj(),
			facts{name: "b", cpu: 8000, pods: 20}},
		{"back as it was", tu.Node("b").Capacity("cpu", "4", "pods", "110").Obj(),
			facts{name: "b", cpu: 4000, pods: 110}},
	} {
		c.UpdateNode(nil, tc.node)
		update(t, c, snap)
		ni, err := snap.Get("b")
		if err != nil {
			t.Fatal(err)
		}
		if ni != before {
			t.Errorf("%s: node b's NodeInfo moved without the node set changing", tc.name)
		}
		if got := factsOf(ni); !equal(got, tc.want) {
			t.Errorf("%s: snapshot's facts of b = %+v, want %+v", tc.name, got, tc.want)
		}
		list, _ := snap.List()
		if got := factsOf(list[1]); !equal(got, tc.want) {
			t.Errorf("%s: the list's facts of b = %+v, want %+v", tc.name, got, tc.want)
		}
	}
	if got := factsOf(mustGet(t, snap, "a")); !equal(got, facts{name: "a", cpu: 4000, pods: 110}) {
		t.Errorf("node a's facts changed with b's updates: %+v", got)
	}
}

// The snapshot's NodeInfos are one array in the list's order, laid out
// again when nodes come and go, with the map and the list pointing at the
// same NodeInfo per node and each holding that node's pods.
func TestSnapshotNodeInfosAreOneArrayInListOrder(t *testing.T) {
	c := New(0, nil)
	for _, n := range []string{"c", "a", "b"} {
		c.AddNode(tu.Node(n).Capacity("cpu", "4", "pods", "110").Obj())
	}
	snap := NewEmptySnapshot()
	update(t, c, snap)
	check := func(when string, want []string, podsOn map[string]int) {
		t.Helper()
		list, _ := snap.List()
		if len(list) != len(want) || len(snap.nodeInfos) != len(want) {
			t.Fatalf("%s: %d nodes listed, %d in the array, want %d", when, len(list), len(snap.nodeInfos), len(want))
		}
		for i, ni := range list {
			if ni != &snap.nodeInfos[i] {
				t.Errorf("%s: list[%d] is not the array's element %d", when, i, i)
			}
			if ni.Name() != want[i] {
				t.Errorf("%s: list[%d] = %q, want %q", when, i, ni.Name(), want[i])
			}
			if got, _ := snap.Get(want[i]); got != ni {
				t.Errorf("%s: Get(%q) is not the list's NodeInfo", when, want[i])
			}
			if len(ni.Pods) != podsOn[want[i]] {
				t.Errorf("%s: %d pods on %q, want %d", when, len(ni.Pods), want[i], podsOn[want[i]])
			}
		}
	}
	check("start", []string{"a", "b", "c"}, nil)
	if err := c.AddPod(tu.Pod("p").Req("cpu", "1").Node("b").Obj()); err != nil {
		t.Fatal(err)
	}
	update(t, c, snap)
	check("pod on b", []string{"a", "b", "c"}, map[string]int{"b": 1})
	c.AddNode(tu.Node("aa").Capacity("cpu", "4").Obj())
	c.RemoveNode(tu.Node("c").Obj())
	update(t, c, snap)
	check("aa added, c removed", []string{"a", "aa", "b"}, map[string]int{"b": 1})
}

func mustGet(t *testing.T, s *Snapshot, name string) *fw.NodeInfo {
	t.Helper()
	ni, err := s.Get(name)
	if err != nil {
		t.Fatal(err)
	}
	return ni
}
