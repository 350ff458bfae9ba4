package gc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const (
	exited  = runtimeapi.ContainerState_CONTAINER_EXITED
	running = runtimeapi.ContainerState_CONTAINER_RUNNING
	created = runtimeapi.ContainerState_CONTAINER_CREATED
	unknown = runtimeapi.ContainerState_CONTAINER_UNKNOWN
)

// at is ctr created at t0 + seconds.
func at(c *runtimeapi.Container, seconds int) *runtimeapi.Container {
	c.CreatedAt = t0.Add(time.Duration(seconds) * time.Second).UnixNano()
	return c
}

func states(m map[string]PodGCState) func(string) PodGCState {
	return func(uid string) PodGCState { return m[uid] }
}

func TestDeadContainers(t *testing.T) {
	now := t0.Add(time.Hour)
	crashLoop := []*runtimeapi.Container{ // u1/app: attempts 0-2 exited, 3 running
		at(ctr("a0", "u1", "app", 0, exited), 0), at(ctr("a1", "u1", "app", 1, exited), 10),
		at(ctr("a2", "u1", "app", 2, exited), 20), at(ctr("a3", "u1", "app", 3, running), 30),
	}
	for _, tc := range []struct {
		name       string
		containers []*runtimeapi.Container
		policy     ContainerPolicy
		pods       map[string]PodGCState
		terminated bool // EvictTerminated
		now        time.Time
		want       []string
	}{
		{"the newest exited instance of each container stays", append(slices.Clone(crashLoop),
			at(ctr("s0", "u1", "side", 0, exited), 0), at(ctr("s1", "u1", "side", 1, exited), 5),
			at(ctr("b0", "u2", "app", 0, exited), 0),
			at(ctr("x0", "", "app", 0, exited), 0), at(ctr("x1", "", "app", 1, exited), 1), // not the kubelet's
		), DefaultContainerPolicy, nil, false, now, []string{"a0", "a1", "s0"}},
		{"same attempt: the later created stays", []*runtimeapi.Container{
			at(ctr("old", "u1", "app", 0, exited), 0), at(ctr("new", "u1", "app", 0, exited), 9),
		}, DefaultContainerPolicy, nil, false, now, []string{"old"}},
		{"maximum per container 2", crashLoop, ContainerPolicy{MaxPerPodContainer: 2, MaxContainers: -1}, nil, false, now, []string{"a0"}},
		{"no maximum per container", crashLoop, ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: -1}, nil, false, now, nil},
		{"per container 0: all dead instances go", crashLoop, ContainerPolicy{MaxPerPodContainer: 0, MaxContainers: -1}, nil, false, now, []string{"a0", "a1", "a2"}},
		{"minimum age", crashLoop, ContainerPolicy{MinAge: time.Hour - 15*time.Second, MaxPerPodContainer: 0, MaxContainers: -1}, nil, false, now, []string{"a0", "a1"}},
		{"a created newest instance is left to its pod worker, older ones go", []*runtimeapi.Container{
			at(ctr("c0", "u1", "app", 0, created), 0), // never started; attempt 1 replaced it
			at(ctr("e1", "u1", "app", 1, exited), 5),
			at(ctr("c2", "u1", "app", 2, created), 10), // about to start
		}, DefaultContainerPolicy, nil, false, now, []string{"c0"}},
		{"unknown containers are dead instances like exited ones", []*runtimeapi.Container{
			at(ctr("u0", "u1", "app", 0, unknown), 0), at(ctr("e1", "u1", "app", 1, exited), 5), at(ctr("e2", "u1", "app", 2, exited), 6),
		}, DefaultContainerPolicy, nil, false, now, []string{"e1", "u0"}},
		{"an unknown newest instance stays as an exited one would", []*runtimeapi.Container{
			at(ctr("e0", "u1", "app", 0, exited), 0), at(ctr("u1", "u1", "app", 1, unknown), 5),
		}, DefaultContainerPolicy, nil, false, now, []string{"e0"}},
		{"a removable pod loses its unknown containers", []*runtimeapi.Container{
			at(ctr("u0", "u1", "app", 0, unknown), 0), at(ctr("r1", "u1", "side", 0, running), 5),
		}, DefaultContainerPolicy, map[string]PodGCState{"u1": PodRemovable}, false, now, []string{"u0"}},
		{"a removable pod loses every dead container", append(slices.Clone(crashLoop),
			at(ctr("c9", "u1", "app", 9, created), 40)),
			DefaultContainerPolicy, map[string]PodGCState{"u1": PodRemovable}, false, now, []string{"a0", "a1", "a2", "c9"}},
		{"a terminated pod keeps its newest in the periodic collection", crashLoop[:3],
			DefaultContainerPolicy, map[string]PodGCState{"u1": PodTerminated}, false, now, []string{"a0", "a1"}},
		{"and loses it when the eviction manager reclaims", crashLoop[:3],
			DefaultContainerPolicy, map[string]PodGCState{"u1": PodTerminated}, true, now, []string{"a0", "a1", "a2"}},
		{"maximum dead containers: spread over the containers, at least one each", []*runtimeapi.Container{
			at(ctr("a0", "u1", "app", 0, exited), 0), at(ctr("a1", "u1", "app", 1, exited), 1), at(ctr("a2", "u1", "app", 2, exited), 2),
			at(ctr("b0", "u2", "app", 0, exited), 3), at(ctr("b1", "u2", "app", 1, exited), 4),
			at(ctr("c0", "u3", "app", 0, exited), 5),
		}, ContainerPolicy{MaxPerPodContainer: -1, MaxContainers: 4}, nil, false, now, []string{"a0", "a1", "b0"}},
		{"maximum dead containers below the number of containers: the oldest go", []*runtimeapi.Container{
			at(ctr("a0", "u1", "app", 0, exited), 0), at(ctr("b0", "u2", "app", 0, exited), 30), at(ctr("c0", "u3", "app", 0, exited), 20),
		}, ContainerPolicy{MaxPerPodContainer: 1, MaxContainers: 1}, nil, false, now, []string{"a0", "c0"}},
		{"maximum dead containers 0", crashLoop, ContainerPolicy{MaxPerPodContainer: 1, MaxContainers: 0}, nil, false, now, []string{"a0", "a1", "a2"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := DeadContainers(ContainerGCInput{Containers: tc.containers, Policy: tc.policy, PodState: states(tc.pods), EvictTerminated: tc.terminated, Now: tc.now})
			if !slices.Equal(got, tc.want) {
				t.Errorf("DeadContainers = %v, want %v", got, tc.want)
			}
		})
	}
}

func sandbox(id, uid string, attempt uint32, ready bool, createdSec int) *runtimeapi.PodSandbox {
	state := runtimeapi.PodSandboxState_SANDBOX_NOTREADY
	if ready {
		state = runtimeapi.PodSandboxState_SANDBOX_READY
	}
	return &runtimeapi.PodSandbox{Id: id, State: state, CreatedAt: t0.Add(time.Duration(createdSec) * time.Second).UnixNano(),
		Metadata: &runtimeapi.PodSandboxMetadata{Name: "p", Namespace: "default", Uid: uid, Attempt: attempt}}
}

func TestDeadSandboxes(t *testing.T) {
	inSandbox := func(c *runtimeapi.Container, sb string) *runtimeapi.Container { c.PodSandboxId = sb; return c }
	sandboxes := []*runtimeapi.PodSandbox{
		// u1: two old dead sandboxes, one holding a container, and a ready one.
		sandbox("u1-0", "u1", 0, false, 0), sandbox("u1-1", "u1", 1, false, 10), sandbox("u1-2", "u1", 2, true, 20),
		// u2: its newest sandbox is dead and empty (the pod finished): it stays.
		sandbox("u2-0", "u2", 0, false, 0), sandbox("u2-1", "u2", 1, false, 5),
		// u3: removable; one dead sandbox still holds a container.
		sandbox("u3-0", "u3", 0, false, 0), sandbox("u3-1", "u3", 1, false, 5),
		// u4: removable, but its sandbox is ready (the kubelet stops it first).
		sandbox("u4-0", "u4", 0, true, 0),
		// not the kubelet's
		sandbox("x", "", 0, false, 0),
	}
	containers := []*runtimeapi.Container{inSandbox(ctr("c", "u1", "app", 0, exited), "u1-1"), inSandbox(ctr("d", "u3", "app", 0, exited), "u3-1")}
	pods := map[string]PodGCState{"u3": PodRemovable, "u4": PodRemovable, "u2": PodTerminated}
	if got, want := DeadSandboxes(sandboxes, containers, states(pods), false), []string{"u1-0", "u2-0", "u3-0"}; !slices.Equal(got, want) {
		t.Errorf("DeadSandboxes = %v, want %v", got, want)
	}
	if got, want := DeadSandboxes(sandboxes, containers, states(pods), true), []string{"u1-0", "u2-0", "u2-1", "u3-0"}; !slices.Equal(got, want) {
		t.Errorf("DeadSandboxes evicting terminated pods = %v, want %v", got, want)
	}
}

func TestPodLogDirsToRemove(t *testing.T) {
	got := PodLogDirsToRemove([]string{"default_web-1_u1", "default_web_2_u2", "kube-system_dns_u3", "junk", "trailing_"},
		states(map[string]PodGCState{"u1": PodRemovable, "u2": PodRemovable, "u3": PodActive, "junk": PodRemovable}))
	if want := []string{"default_web-1_u1", "default_web_2_u2"}; !slices.Equal(got, want) {
		t.Errorf("PodLogDirsToRemove = %v, want %v", got, want)
	}
}

func TestContainerPolicyValidate(t *testing.T) {
	if err := DefaultContainerPolicy.Validate(); err != nil {
		t.Error(err)
	}
	if err := (ContainerPolicy{MinAge: -time.Second}).Validate(); err == nil {
		t.Error("a negative minimum age accepted")
	}
}

// The periodic collection runs once per ContainerPeriod: dead instances
// beyond the newest go, then sandboxes of gone pods, then their logs.
func TestMaybeCollectContainers(t *testing.T) {
	n := newSimNode(t)
	ctx := t.Context()
	n.pull("app", mi)
	first := n.run("app", "app", 0, true)
	n.clock.Step(time.Second)
	second := n.run("app", "app", 1, true)
	n.clock.Step(time.Second)
	third := n.run("app", "app", 2, false)
	// A gone pod's stopped sandbox and its log directory.
	gone, err := n.rt.RunPodSandbox(ctx, &runtimeapi.PodSandboxConfig{Metadata: &runtimeapi.PodSandboxMetadata{Name: "q", Namespace: "default", Uid: "gone"}}, "")
	if err != nil {
		t.Fatal(err)
	}
	if err := n.rt.StopPodSandbox(ctx, gone); err != nil {
		t.Fatal(err)
	}
	logs := t.TempDir()
	for _, d := range []string{"default_p_u1", "default_q_gone"} {
		if err := os.MkdirAll(filepath.Join(logs, d, "app"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	c := NewCollector(n.rt, DefaultPolicy, nil, nil)
	c.SetContainerGC(DefaultContainerPolicy, states(map[string]PodGCState{"u1": PodActive, "gone": PodRemovable}), logs)
	c.MaybeCollectContainers(ctx, n.clock.Now())
	list, _ := n.rt.ListContainers(ctx, nil)
	var ids []string
	for _, c := range list {
		ids = append(ids, c.Id)
	}
	if slices.Contains(ids, first) || !slices.Contains(ids, second) || !slices.Contains(ids, third) {
		t.Errorf("containers left %v (first %s second %s third %s)", ids, first, second, third)
	}
	sbs, _ := n.rt.ListPodSandbox(ctx, nil)
	if len(sbs) != 1 || sbs[0].Id != n.sb {
		t.Errorf("sandboxes left %v, want only %s", sbs, n.sb)
	}
	if _, err := os.Stat(filepath.Join(logs, "default_q_gone")); !os.IsNotExist(err) {
		t.Errorf("gone pod's logs: %v", err)
	}
	if _, err := os.Stat(filepath.Join(logs, "default_p_u1")); err != nil {
		t.Errorf("running pod's logs: %v", err)
	}
	// Not again within the period.
	n.clock.Step(time.Second)
	if err := n.rt.StopContainer(ctx, third, 0); err != nil {
		t.Fatal(err)
	}
	c.MaybeCollectContainers(ctx, n.clock.Now())
	if list, _ := n.rt.ListContainers(ctx, nil); len(list) != 2 {
		t.Errorf("collected within the period: %d containers left", len(list))
	}
	n.clock.Step(ContainerPeriod)
	c.MaybeCollectContainers(ctx, n.clock.Now())
	if list, _ := n.rt.ListContainers(ctx, nil); len(list) != 1 || list[0].Id != third {
		t.Errorf("after the period: %v, want only %s", list, third)
	}
}

// unknownStates is a runtime reporting the containers named in unknown
// as in the unknown state (the runtime lost track of them: they may
// still run), recording the calls the collection makes on them.
type unknownStates struct {
	Runtime
	unknown map[string]bool
	calls   []string
}

func (u *unknownStates) ListContainers(ctx context.Context, f *runtimeapi.ContainerFilter) ([]*runtimeapi.Container, error) {
	list, err := u.Runtime.ListContainers(ctx, f)
	for _, c := range list {
		if u.unknown[c.Id] {
			c.State = unknown
		}
	}
	return list, err
}

func (u *unknownStates) StopContainer(ctx context.Context, id string, timeout int64) error {
	u.calls = append(u.calls, fmt.Sprintf("stop %s %d", id, timeout))
	return u.Runtime.StopContainer(ctx, id, timeout)
}

func (u *unknownStates) RemoveContainer(ctx context.Context, id string) error {
	u.calls = append(u.calls, "remove "+id)
	return u.Runtime.RemoveContainer(ctx, id)
}

// A container in the unknown state, which may still run, is collected:
// stopped with upstream's minimum grace period, then removed, as
// upstream's removeOldestN; the simulated runtime refuses to remove it
// while it runs.
func TestCollectStopsUnknownContainers(t *testing.T) {
	n := newSimNode(t)
	ctx := t.Context()
	n.pull("app", mi)
	lost := n.run("app", "app", 0, false) // still running, its state unknown
	n.clock.Step(time.Second)
	newest := n.run("app", "app", 1, true)
	rt := &unknownStates{Runtime: n.rt, unknown: map[string]bool{lost: true}}
	c := NewCollector(rt, DefaultPolicy, nil, nil)
	c.SetContainerGC(DefaultContainerPolicy, states(map[string]PodGCState{"u1": PodActive}), "")
	removed, err := c.CollectContainers(ctx, false, n.clock.Now())
	if err != nil || removed != 1 {
		t.Fatalf("CollectContainers = %d, %v; want 1 removed", removed, err)
	}
	if want := []string{fmt.Sprintf("stop %s %d", lost, UnknownStopTimeout), "remove " + lost}; !slices.Equal(rt.calls, want) {
		t.Errorf("calls %v, want %v", rt.calls, want)
	}
	if list, _ := n.rt.ListContainers(ctx, nil); len(list) != 1 || list[0].Id != newest {
		t.Errorf("containers left %v, want only %s", list, newest)
	}
}
