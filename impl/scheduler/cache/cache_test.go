package cache

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

type fakeClock struct{ t time.Time }

func (c *fakeClock) Now() time.Time { return c.t }

func requestedCPU(t *testing.T, s *Snapshot, node string) int64 {
	t.Helper()
	ni, err := s.Get(node)
	if err != nil {
		t.Fatal(err)
	}
	return ni.Requested.MilliCPU
}

func update(t *testing.T, c *Cache, s *Snapshot) {
	t.Helper()
	if err := c.UpdateSnapshot(s); err != nil {
		t.Fatal(err)
	}
}

func TestAssumedPodIsSeenByTheNextSnapshot(t *testing.T) {
	c := New(time.Minute, nil)
	c.AddNode(tu.Node("n1").Capacity("cpu", "4").Obj())
	snap := NewEmptySnapshot()
	update(t, c, snap)
	pod := tu.Pod("p").Req("cpu", "1").Node("n1").Obj()
	if err := c.AssumePod(pod); err != nil {
		t.Fatal(err)
	}
	update(t, c, snap)
	if got := requestedCPU(t, snap, "n1"); got != 1000 {
		t.Fatalf("requested cpu after assume = %dm, want 1000m", got)
	}
	if !c.IsAssumedPod(pod) {
		t.Fatal("pod not assumed")
	}
	// The informer confirms the binding.
	if err := c.AddPod(pod); err != nil {
		t.Fatal(err)
	}
	if c.IsAssumedPod(pod) {
		t.Fatal("pod still assumed after confirmation")
	}
	update(t, c, snap)
	if got := requestedCPU(t, snap, "n1"); got != 1000 {
		t.Fatalf("requested cpu after confirm = %dm, want 1000m (counted once)", got)
	}
}

func TestForgetPodReleasesCapacity(t *testing.T) {
	c := New(time.Minute, nil)
	c.AddNode(tu.Node("n1").Capacity("cpu", "4").Obj())
	pod := tu.Pod("p").Req("cpu", "1").Node("n1").Obj()
	if err := c.AssumePod(pod); err != nil {
		t.Fatal(err)
	}
	if err := c.ForgetPod(pod); err != nil {
		t.Fatal(err)
	}
	snap := NewEmptySnapshot()
	update(t, c, snap)
	if got := requestedCPU(t, snap, "n1"); got != 0 {
		t.Fatalf("requested cpu after forget = %dm, want 0", got)
	}
	if c.PodCount() != 0 {
		t.Fatalf("pod count %d", c.PodCount())
	}
}

func TestConfirmationOnAnotherNodeMovesThePod(t *testing.T) {
	c := New(time.Minute, nil)
	c.AddNode(tu.Node("n1").Capacity("cpu", "4").Obj())
	c.AddNode(tu.Node("n2").Capacity("cpu", "4").Obj())
	if err := c.AssumePod(tu.Pod("p").Req("cpu", "1").Node("n1").Obj()); err != nil {
		t.Fatal(err)
	}
	if err := c.AddPod(tu.Pod("p").Req("cpu", "1").Node("n2").Obj()); err != nil {
		t.Fatal(err)
	}
	snap := NewEmptySnapshot()
	update(t, c, snap)
	if requestedCPU(t, snap, "n1") != 0 || requestedCPU(t, snap, "n2") != 1000 {
		t.Fatal("pod not moved to the node it was bound to")
	}
}

func TestExpiredAssumptionIsDropped(t *testing.T) {
	clock := &fakeClock{t: time.Unix(0, 0)}
	c := New(30*time.Second, clock)
	c.AddNode(tu.Node("n1").Capacity("cpu", "4").Obj())
	pod := tu.Pod("p").Req("cpu", "1").Node("n1").Obj()
	if err := c.AssumePod(pod); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(time.Hour)
	c.CleanupExpiredAssumedPods()
	if !c.IsAssumedPod(pod) {
		t.Fatal("assumption expired before its binding finished")
	}
	if err := c.FinishBinding(pod); err != nil {
		t.Fatal(err)
	}
	clock.t = clock.t.Add(29 * time.Second)
	c.CleanupExpiredAssumedPods()
	if !c.IsAssumedPod(pod) {
		t.Fatal("expired before the TTL")
	}
	clock.t = clock.t.Add(2 * time.Second)
	c.CleanupExpiredAssumedPods()
	if c.IsAssumedPod(pod) || c.PodCount() != 0 {
		t.Fatal("assumption not expired after the TTL")
	}
}

func TestSnapshotIsIncrementalAndTracksNodeSet(t *testing.T) {
	c := New(0, nil)
	for _, n := range []string{"a", "b", "c"} {
		c.AddNode(tu.Node(n).Capacity("cpu", "4").Obj())
	}
	snap := NewEmptySnapshot()
	update(t, c, snap)
	if snap.NumNodes() != 3 {
		t.Fatalf("nodes %d", snap.NumNodes())
	}
	bBefore, _ := snap.Get("b")
	if err := c.AddPod(tu.Pod("p").Req("cpu", "1").Node("a").Obj()); err != nil {
		t.Fatal(err)
	}
	update(t, c, snap)
	bAfter, _ := snap.Get("b")
	if bBefore != bAfter || bAfter.Generation != bBefore.Generation {
		t.Error("unchanged node b was copied again")
	}
	if requestedCPU(t, snap, "a") != 1000 {
		t.Error("change on node a not in snapshot")
	}
	// Remove one node and add another between two snapshots.
	c.RemoveNode(tu.Node("c").Obj())
	c.AddNode(tu.Node("d").Obj())
	update(t, c, snap)
	list, _ := snap.List()
	var names []string
	for _, ni := range list {
		names = append(names, ni.Name())
	}
	if len(names) != 3 || names[0] != "a" || names[1] != "b" || names[2] != "d" {
		t.Fatalf("nodes after remove+add = %v, want [a b d]", names)
	}
	if _, err := snap.Get("c"); err == nil {
		t.Fatal("removed node still in snapshot")
	}
}

func TestRemovedNodeKeepsItsPodsUntilTheyGo(t *testing.T) {
	c := New(0, nil)
	c.AddNode(tu.Node("a").Capacity("cpu", "4").Obj())
	p := tu.Pod("p").Req("cpu", "1").Node("a").Obj()
	if err := c.AddPod(p); err != nil {
		t.Fatal(err)
	}
	c.RemoveNode(tu.Node("a").Obj())
	snap := NewEmptySnapshot()
	update(t, c, snap)
	if snap.NumNodes() != 0 {
		t.Fatal("deleted node still schedulable")
	}
	// The node comes back (e.g. re-registration): its pod still counts.
	c.AddNode(tu.Node("a").Capacity("cpu", "4").Obj())
	update(t, c, snap)
	if requestedCPU(t, snap, "a") != 1000 {
		t.Fatal("pod of a re-added node lost")
	}
	if err := c.RemovePod(p); err != nil {
		t.Fatal(err)
	}
	update(t, c, snap)
	if requestedCPU(t, snap, "a") != 0 {
		t.Fatal("removed pod still counted")
	}
}

func TestAffinityListsFollowPods(t *testing.T) {
	c := New(0, nil)
	c.AddNode(tu.Node("a").Obj())
	c.AddNode(tu.Node("b").Obj())
	snap := NewEmptySnapshot()
	update(t, c, snap)
	anti := tu.Pod("anti").Node("b").Affinity(&v1.Affinity{PodAntiAffinity: &v1.PodAntiAffinity{
		RequiredDuringSchedulingIgnoredDuringExecution: []v1.PodAffinityTerm{{TopologyKey: v1.LabelHostname}},
	}}).Obj()
	if err := c.AddPod(anti); err != nil {
		t.Fatal(err)
	}
	update(t, c, snap)
	l, _ := snap.HavePodsWithRequiredAntiAffinityList()
	if len(l) != 1 || l[0].Name() != "b" {
		t.Fatalf("anti-affinity list = %d nodes", len(l))
	}
	if err := c.RemovePod(anti); err != nil {
		t.Fatal(err)
	}
	update(t, c, snap)
	l, _ = snap.HavePodsWithRequiredAntiAffinityList()
	if len(l) != 0 {
		t.Fatal("anti-affinity list not emptied")
	}
}

func TestSnapshotCountsNodesPerImageName(t *testing.T) {
	c := New(time.Minute, nil)
	img := func(size int64, names ...string) v1.ContainerImage {
		return v1.ContainerImage{Names: names, SizeBytes: size}
	}
	n1 := tu.Node("n1").Obj()
	n1.Status.Images = []v1.ContainerImage{img(1, "app:v1", "reg/app@sha256:1"), img(2, "db:v1")}
	n2 := tu.Node("n2").Obj()
	n2.Status.Images = []v1.ContainerImage{img(1, "app:v1")}
	c.AddNode(n1)
	c.AddNode(n2)
	snap := NewEmptySnapshot()
	update(t, c, snap)
	check := func(when string, want map[string]int) {
		t.Helper()
		for name, n := range want {
			if got := snap.NumNodesWithImage(name); got != n {
				t.Errorf("%s: %d nodes with %s, want %d", when, got, name, n)
			}
		}
	}
	check("after adding", map[string]int{"app:v1": 2, "reg/app@sha256:1": 1, "db:v1": 1, "nginx:latest": 0})
	n2b := n2.DeepCopy()
	n2b.Status.Images = []v1.ContainerImage{img(2, "db:v1")}
	c.UpdateNode(n2, n2b)
	update(t, c, snap)
	check("after n2 replaced app by db", map[string]int{"app:v1": 1, "db:v1": 2})
	c.RemoveNode(n1)
	update(t, c, snap)
	check("after removing n1", map[string]int{"app:v1": 0, "reg/app@sha256:1": 0, "db:v1": 1})
}
