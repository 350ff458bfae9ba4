package status

import (
	"testing"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// A terminated pod's status is final as upstream's TerminatePod makes it
// before the pod may be deleted (Final: its volumes torn down, its cgroup
// removed): a pod deleted while Pending is Failed,
// its containers that never ran terminated with ContainerStatusUnknown
// (137) once it has initialized; of its init containers those up to the
// last that started (the first at least); the conditions as generated.
func TestTerminatedPodStatus(t *testing.T) {
	stopped := &podstate.Pod{UID: "u", Sandboxes: []podstate.Sandbox{{ID: "s"}}}
	unknown := func(s v1.ContainerStatus) bool {
		t := s.State.Terminated
		return t != nil && t.ExitCode == 137 && t.Reason == ReasonContainerStatusUnknown && t.Message == messageContainerStatusUnknownAt
	}
	t.Run("pending, image not pulled", func(t *testing.T) {
		p := basePod()
		p.Status.Phase = v1.PodPending
		in := Input{Pod: p, Runtime: stopped, Now: now,
			Waiting: map[string]podstate.Waiting{podsync.BackoffKey("a", false): {Reason: "ErrImagePull", Message: "m"}}}
		if s := GenerateAPIPodStatus(in); s.Phase != v1.PodPending || s.ContainerStatuses[0].State.Waiting == nil {
			t.Fatalf("not terminal yet: %s %+v", s.Phase, s.ContainerStatuses[0].State)
		}
		in.PodIsTerminal = true
		// Terminated, not yet torn down: the plain terminal status, as
		// upstream's SyncTerminatingPod and SyncTerminatedPod write it
		// before TerminatePod.
		if s := GenerateAPIPodStatus(in); s.Phase != v1.PodPending || s.ContainerStatuses[0].State.Waiting == nil {
			t.Fatalf("terminated, not final: %s %+v", s.Phase, s.ContainerStatuses[0].State)
		}
		in.Final = true
		s := GenerateAPIPodStatus(in)
		if s.Phase != v1.PodFailed || !unknown(s.ContainerStatuses[0]) {
			t.Fatalf("terminated: %s %+v", s.Phase, s.ContainerStatuses[0].State)
		}
		if c := find2(s, v1.ContainersReady); c.Status != v1.ConditionFalse || c.Reason != ReasonContainersNotReady {
			t.Errorf("ContainersReady %+v, want as generated (ContainersNotReady)", c)
		}
	})
	t.Run("init containers", func(t *testing.T) {
		for _, tc := range []struct {
			name       string
			inits      []podstate.Container
			wantInit   []bool // reported ContainerStatusUnknown
			appUnknown bool
		}{
			// None started: the first is taken for failed.
			{"none started", nil, []bool{true, false, false}, false},
			// i1 completed, i2 reported running (the runtime lost it), i3
			// never started.
			{"second started", []podstate.Container{
				{ID: "i1", Name: "i1", Init: true, SandboxID: "s", State: podstate.ContainerExited},
				{ID: "i2", Name: "i2", Init: true, SandboxID: "s", State: podstate.ContainerRunning},
			}, []bool{false, true, false}, false},
			// All completed: initialized, the app container that never
			// started is unknown.
			{"initialized", []podstate.Container{
				{ID: "i1", Name: "i1", Init: true, SandboxID: "s", State: podstate.ContainerExited},
				{ID: "i2", Name: "i2", Init: true, SandboxID: "s", State: podstate.ContainerExited},
				{ID: "i3", Name: "i3", Init: true, SandboxID: "s", State: podstate.ContainerExited},
			}, []bool{false, false, false}, true},
		} {
			t.Run(tc.name, func(t *testing.T) {
				p := basePod()
				p.Spec.InitContainers = []v1.Container{{Name: "i1", Image: "img"}, {Name: "i2", Image: "img"}, {Name: "i3", Image: "img"}}
				// The status last reported: as the runtime has it.
				rs := &podstate.Pod{UID: "u", Sandboxes: stopped.Sandboxes, Containers: tc.inits}
				p.Status = GenerateAPIPodStatus(Input{Pod: p, Runtime: rs, Now: now})
				s := GenerateAPIPodStatus(Input{Pod: p, Runtime: rs, Now: now, PodIsTerminal: true, Final: true})
				if s.Phase != v1.PodFailed {
					t.Errorf("phase %s", s.Phase)
				}
				for i, want := range tc.wantInit {
					if got := unknown(s.InitContainerStatuses[i]); got != want {
						t.Errorf("init %d %+v: unknown %v, want %v", i, s.InitContainerStatuses[i].State, got, want)
					}
				}
				if got := unknown(s.ContainerStatuses[0]); got != tc.appUnknown {
					t.Errorf("app %+v: unknown %v, want %v", s.ContainerStatuses[0].State, got, tc.appUnknown)
				}
			})
		}
	})
	// The last init container a sidecar that had started: initialized,
	// the app container that never started is unknown, as upstream's
	// hasPodInitialized for a restartable init container.
	t.Run("sidecar last", func(t *testing.T) {
		p := basePod()
		always := v1.ContainerRestartPolicyAlways
		p.Spec.InitContainers = []v1.Container{{Name: "side", Image: "img", RestartPolicy: &always}}
		side := podstate.Container{ID: "i1", Name: "side", Init: true, SandboxID: "s", State: podstate.ContainerRunning}
		p.Status = GenerateAPIPodStatus(Input{Pod: p, Runtime: runtimeWith(side), Now: now})
		if st := p.Status.InitContainerStatuses[0]; st.State.Running == nil || st.Started == nil || !*st.Started {
			t.Fatalf("sidecar %+v", st)
		}
		side.State, side.ExitCode = podstate.ContainerExited, 137
		rs := &podstate.Pod{UID: "u", Sandboxes: stopped.Sandboxes, Containers: []podstate.Container{side}}
		s := GenerateAPIPodStatus(Input{Pod: p, Runtime: rs, Now: now, PodIsTerminal: true, Final: true})
		if s.Phase != v1.PodFailed || !unknown(s.ContainerStatuses[0]) {
			t.Fatalf("%s, app %+v", s.Phase, s.ContainerStatuses[0].State)
		}
	})
	t.Run("already terminal", func(t *testing.T) {
		p := basePod()
		p.Spec.RestartPolicy = v1.RestartPolicyNever
		exited := podstate.Container{ID: "c1", Name: "a", SandboxID: "s", State: podstate.ContainerExited}
		rs := &podstate.Pod{UID: "u", Sandboxes: stopped.Sandboxes, Containers: []podstate.Container{exited}}
		if s := GenerateAPIPodStatus(Input{Pod: p, Runtime: rs, Now: now, PodIsTerminal: true, Final: true}); s.Phase != v1.PodSucceeded || s.ContainerStatuses[0].State.Terminated.Reason != ReasonCompleted {
			t.Fatalf("%s %+v", s.Phase, s.ContainerStatuses[0].State)
		}
	})
}
