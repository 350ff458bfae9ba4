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
