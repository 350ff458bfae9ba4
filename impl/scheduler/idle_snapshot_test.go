package scheduler

import (
	"context"
	"testing"
	"time"
)

// An idle scheduler refreshes its snapshot, so the snapshot does not keep
// alive pod versions its cache has replaced until the next pod arrives.
func TestIdleSchedulerRefreshesItsSnapshot(t *testing.T) {
	old := idleSnapshotRefresh
	idleSnapshotRefresh = 20 * time.Millisecond
	defer func() { idleSnapshotRefresh = old }()

	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	s, err := New(ctx, newFakeCluster(), Config{Configuration: testConfig(), Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	s.cache.AddNode(makeNode("node-0", "4", "16Gi", 110, nil))
	v1 := makePod("default", "web", "1", "1Gi")
	v1.Spec.NodeName, v1.ResourceVersion = "node-0", "1"
	if err := s.cache.AddPod(v1); err != nil {
		t.Fatal(err)
	}
	snapshotPod := func() string {
		ni, err := s.snapshot.Get("node-0")
		if err != nil || len(ni.Pods) != 1 {
			t.Fatalf("snapshot of node-0: %v, %v", ni, err)
		}
		return ni.Pods[0].Pod.ResourceVersion
	}

	s.ScheduleOne(ctx) // nothing queued: returns after idleSnapshotRefresh
	if ctx.Err() != nil {
		t.Fatal("ScheduleOne with nothing queued did not return")
	}
	if rv := snapshotPod(); rv != "1" {
		t.Fatalf("snapshot holds pod version %s, want 1", rv)
	}
	v2 := v1.DeepCopy()
	v2.ResourceVersion = "2"
	if err := s.cache.UpdatePod(v1, v2); err != nil {
		t.Fatal(err)
	}
	s.ScheduleOne(ctx)
	if rv := snapshotPod(); rv != "2" {
		t.Fatalf("after an idle cycle the snapshot holds pod version %s, want the cache's 2", rv)
	}
}
