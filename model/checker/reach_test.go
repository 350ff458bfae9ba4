package checker

import (
	"testing"

	"github.com/kubeproof/kubeproof/model"
)

func TestCanReach(t *testing.T) {
	cfg := small(t, map[string]int{"MaxCrashes": 1})
	m, err := model.New(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	nodes := []model.NodeSnapshot{{Number: 1, Up: true, KubeletUp: true}, {Number: 2, Up: true, KubeletUp: true}}
	dep := model.DeploymentSnapshot{Number: 1, State: model.Live, Replicas: 1, Version: 1}
	rs := model.ReplicaSetSnapshot{Deployment: 1, Version: 1, Replicas: 1}
	empty, err := m.FromSnapshot(model.Snapshot{Nodes: nodes})
	if err != nil {
		t.Fatal(err)
	}
	if empty != m.Init()[0] {
		t.Fatalf("the empty snapshot is not the initial state")
	}
	pending, err := m.FromSnapshot(model.Snapshot{Nodes: nodes, Deployments: []model.DeploymentSnapshot{dep},
		ReplicaSets: []model.ReplicaSetSnapshot{rs},
		Pods:        []model.PodSnapshot{{Deployment: 1, Version: 1, State: model.Live, OwnerVersions: []int{1}}}})
	if err != nil {
		t.Fatal(err)
	}
	running, err := m.FromSnapshot(model.Snapshot{Nodes: nodes, Deployments: []model.DeploymentSnapshot{dep},
		ReplicaSets: []model.ReplicaSetSnapshot{rs},
		Pods: []model.PodSnapshot{{Deployment: 1, Version: 1, State: model.Live, Node: 2, Phase: model.Running,
			OwnerVersions: []int{1}, Sandboxes: 1, SandboxNode: 2, SandboxIP: 1}}})
	if err != nil {
		t.Fatal(err)
	}
	// Stuttering: zero steps.
	if path, ok := CanReach(m, pending, pending, 0); !ok || len(path) != 1 {
		t.Fatalf("stuttering not allowed: %v %v", ok, path)
	}
	// Bind, start, report: three steps, not two.
	if _, ok := CanReach(m, pending, running, 2); ok {
		t.Fatal("reached Running in 2 steps")
	}
	path, ok := CanReach(m, pending, running, 3)
	if !ok || len(path) != 4 || path[1].Action.Kind != model.SchedulerBindPod || path[3].Action.Kind != model.KubeletUpdatePodStatus {
		t.Fatalf("want bind, start, status; got %v %v", ok, path)
	}
	// The model never goes back from Running to Pending.
	if _, ok := CanReach(m, running, pending, 6); ok {
		t.Fatal("went from Running back to unbound Pending")
	}
	// A snapshot the model cannot produce from the empty cluster in 3 steps.
	if _, ok := CanReach(m, empty, running, 3); ok {
		t.Fatal("reached a running pod from nothing in 3 steps")
	}
	// Outside the configuration: an error, not a panic.
	if _, err := m.FromSnapshot(model.Snapshot{Nodes: []model.NodeSnapshot{{Number: 7}}}); err == nil {
		t.Fatal("node 7 accepted in a 2-node configuration")
	}
}

// The props campaign's open finding
// (e2e/props/testdata/open-findings/deployment-controller-acts-on-stale-deployment.*):
// d2 (deployment 2) was marked for foreground deletion; the deployment
// controller, from its lagging cache, then scaled the new ReplicaSet 1→2,
// observed the deletion's generation, and the garbage collector marked both
// ReplicaSets deleting. The observed step is a behaviour of the model once
// the controller's view of the deployment lags (DeploymentLag = 1) and the
// search starts from the views the controller may still hold
// (StaleDeploymentViews); it is not one without.
func TestStaleDeploymentFindingIsAModelBehaviour(t *testing.T) {
	cfg := model.Config{Name: "finding", NumNodes: 3, NumDeployments: 2, Replicas: 4, NumVersions: 2,
		MaxSurge: 1, MaxUnavailable: 1, PodsPerRS: 4, Capacity: 4, IPsPerNode: 7,
		MaxScales: 9, MaxDeletes: 9, MaxCrashes: 9, MaxWatchDrops: 9, MaxNodeFailures: 9, MaxEvictions: 9,
		ReadinessProbes: 1, MaxProbeFailures: 9, DeploymentLag: 1}
	lagging, err := model.New(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg.DeploymentLag = 0
	current, err := model.New(cfg, "")
	if err != nil {
		t.Fatal(err)
	}
	nodes := []model.NodeSnapshot{{Number: 1, Up: true, KubeletUp: true}, {Number: 2, Up: true, KubeletUp: true},
		{Number: 3, Up: true, KubeletUp: true}}
	running := func(v, node int) model.PodSnapshot {
		return model.PodSnapshot{Deployment: 2, Version: v, State: model.Live, Node: node, Phase: model.Running,
			OwnerVersions: []int{v}, Sandboxes: 1, SandboxNode: node, SandboxIP: 1}
	}
	snapshot := func(state uint8, observed, rsDeleting bool, newReplicas int) model.Snapshot {
		return model.Snapshot{Nodes: nodes,
			Deployments: []model.DeploymentSnapshot{{Number: 1, State: model.Gone},
				{Number: 2, State: state, Replicas: 3, Version: 2, Observed: observed}},
			ReplicaSets: []model.ReplicaSetSnapshot{{Deployment: 2, Version: 1, Replicas: 2, Deleting: rsDeleting},
				{Deployment: 2, Version: 2, Replicas: newReplicas, Deleting: rsDeleting}},
			Pods: []model.PodSnapshot{running(1, 2), running(1, 3), running(2, 1)}}
	}
	for _, tc := range []struct {
		m    *model.Model
		want bool
	}{{lagging, true}, {current, false}} {
		state := func(sn model.Snapshot) model.State {
			s, err := tc.m.FromSnapshot(sn)
			if err != nil {
				t.Fatal(err)
			}
			return s
		}
		beforeDelete := state(snapshot(model.Live, false, false, 1)) // an earlier observation
		prev := state(snapshot(model.Deleting, false, false, 1))
		next := state(snapshot(model.Deleting, true, true, 2))
		starts := tc.m.StaleDeploymentViews(prev, []model.State{beforeDelete})
		path, ok := CanReachAny(tc.m, starts, next, 5)
		if ok != tc.want {
			t.Fatalf("DeploymentLag=%d: reachable %v, want %v; path %v", tc.m.Config().DeploymentLag, ok, tc.want, path)
		}
		if !ok {
			continue
		}
		if path[1].Action.Kind != model.DeploymentScaleUp {
			t.Fatalf("want the stale scale-up first, got %v", path)
		}
		var acts []string
		for _, st := range path[1:] {
			acts = append(acts, st.Action.String())
		}
		t.Logf("explained by %v", acts)
		// From the current view alone the controller sees the deletion and
		// only syncs status: no scale-up.
		if _, ok := CanReach(tc.m, prev, next, 5); ok {
			t.Fatal("reached the stale scale-up from a current view")
		}
	}
}
