package podsync

import (
	"reflect"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func pod(policy v1.RestartPolicy, inits int, mutate ...func(*v1.Pod)) *v1.Pod {
	p := &v1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", UID: "u"},
		Spec:       v1.PodSpec{RestartPolicy: policy, Containers: []v1.Container{{Name: "a"}, {Name: "b"}}},
	}
	for i := 0; i < inits; i++ {
		p.Spec.InitContainers = append(p.Spec.InitContainers, v1.Container{Name: []string{"i0", "i1"}[i]})
	}
	for _, m := range mutate {
		m(p)
	}
	return p
}

func sandbox(ready bool) podstate.Sandbox {
	return podstate.Sandbox{ID: "s1", Ready: ready, IP: "10.0.0.2"}
}

func running(name string, init bool, attempt uint32) podstate.Container {
	return podstate.Container{ID: name + "-" + string(rune('0'+attempt)), Name: name, Init: init, SandboxID: "s1", Attempt: attempt, State: podstate.ContainerRunning, StartedAt: now.Add(-time.Minute)}
}

func exited(name string, init bool, attempt uint32, code int32, ago time.Duration) podstate.Container {
	c := running(name, init, attempt)
	c.State, c.ExitCode, c.FinishedAt = podstate.ContainerExited, code, now.Add(-ago)
	return c
}

func rs(sbs []podstate.Sandbox, cs ...podstate.Container) *podstate.Pod {
	return &podstate.Pod{UID: "u", Sandboxes: sbs, Containers: cs}
}

func starts(a Actions) []Start { return a.ContainersToStart }

func TestComputePodActions(t *testing.T) {
	ready := []podstate.Sandbox{sandbox(true)}
	deleted := func(p *v1.Pod) {
		ts := metav1.NewTime(now)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, ptr(int64(7))
	}
	deadline := func(p *v1.Pod) {
		st := metav1.NewTime(now.Add(-time.Minute))
		p.Status.StartTime, p.Spec.ActiveDeadlineSeconds = &st, ptr(int64(60))
	}
	liveness := func(p *v1.Pod) { p.Spec.Containers[0].LivenessProbe = &v1.Probe{} }
	for _, tc := range []struct {
		name    string
		pod     *v1.Pod
		rs      *podstate.Pod
		probes  map[string]podstate.ContainerProbes
		backoff map[string]BackoffEntry
		check   func(t *testing.T, a Actions)
	}{
		{name: "new pod: sandbox and all containers", pod: pod(v1.RestartPolicyAlways, 0), rs: rs(nil),
			check: func(t *testing.T, a Actions) {
				if !a.CreateSandbox || a.KillPod || !reflect.DeepEqual(starts(a), []Start{{Index: 0}, {Index: 1}}) {
					t.Errorf("%+v", a)
				}
			}},
		{name: "new pod with init: sandbox and first init only", pod: pod(v1.RestartPolicyAlways, 2), rs: rs(nil),
			check: func(t *testing.T, a Actions) {
				if !a.CreateSandbox || !reflect.DeepEqual(starts(a), []Start{{Index: 0, Init: true}}) {
					t.Errorf("%+v", a)
				}
			}},
		{name: "running pod: nothing", pod: pod(v1.RestartPolicyAlways, 0), rs: rs(ready, running("a", false, 0), running("b", false, 0)),
			check: func(t *testing.T, a Actions) {
				if a.CreateSandbox || a.KillPod || len(a.ContainersToStart)+len(a.ContainersToKill) != 0 || a.SandboxID != "s1" {
					t.Errorf("%+v", a)
				}
			}},
		{name: "never a second sandbox while one is ready", pod: pod(v1.RestartPolicyAlways, 0), rs: rs(ready),
			check: func(t *testing.T, a Actions) {
				if a.CreateSandbox || len(a.ContainersToStart) != 2 {
					t.Errorf("%+v", a)
				}
			}},
		{name: "dead sandbox is replaced with attempt+1", pod: pod(v1.RestartPolicyAlways, 0),
			rs: rs([]podstate.Sandbox{{ID: "s1", Ready: false, Attempt: 2}}, exited("a", false, 0, 137, time.Second)),
			check: func(t *testing.T, a Actions) {
				if !a.CreateSandbox || a.SandboxAttempt != 3 || !a.KillPod || len(a.ContainersToStart) != 2 || a.ContainersToStart[0].Attempt != 1 {
					t.Errorf("%+v", a)
				}
			}},
		{name: "second init after first succeeded", pod: pod(v1.RestartPolicyAlways, 2), rs: rs(ready, exited("i0", true, 0, 0, time.Second)),
			check: func(t *testing.T, a Actions) {
				if !reflect.DeepEqual(starts(a), []Start{{Index: 1, Init: true}}) {
					t.Errorf("%+v", a)
				}
			}},
		{name: "init running: wait", pod: pod(v1.RestartPolicyAlways, 2), rs: rs(ready, running("i0", true, 0)),
			check: func(t *testing.T, a Actions) {
				if len(a.ContainersToStart) != 0 || a.KillPod {
					t.Errorf("%+v", a)
				}
			}},
		{name: "inits done: app containers", pod: pod(v1.RestartPolicyAlways, 2), rs: rs(ready, exited("i1", true, 0, 0, time.Second), exited("i0", true, 0, 0, time.Second)),
			check: func(t *testing.T, a Actions) {
				if !reflect.DeepEqual(starts(a), []Start{{Index: 0}, {Index: 1}}) {
					t.Errorf("%+v", a)
				}
			}},
		{name: "failed init, Never: pod killed", pod: pod(v1.RestartPolicyNever, 2), rs: rs(ready, exited("i0", true, 0, 1, time.Second)),
			check: func(t *testing.T, a Actions) {
				if !a.KillPod || len(a.ContainersToStart) != 0 {
					t.Errorf("%+v", a)
				}
			}},
		{name: "failed init, OnFailure: restarted", pod: pod(v1.RestartPolicyOnFailure, 2), rs: rs(ready, exited("i0", true, 0, 1, time.Second)),
			check: func(t *testing.T, a Actions) {
				if !reflect.DeepEqual(starts(a), []Start{{Index: 0, Init: true, Attempt: 1}}) || a.Backoff["init/i0"].Backoff != 10*time.Second {
					t.Errorf("%+v", a)
				}
			}},
		{name: "Always restarts a succeeded container", pod: pod(v1.RestartPolicyAlways, 0), rs: rs(ready, exited("a", false, 0, 0, time.Second), running("b", false, 0)),
			check: func(t *testing.T, a Actions) {
				if !reflect.DeepEqual(starts(a), []Start{{Index: 0, Attempt: 1}}) {
					t.Errorf("%+v", a)
				}
			}},
		{name: "OnFailure does not restart a succeeded container", pod: pod(v1.RestartPolicyOnFailure, 0), rs: rs(ready, exited("a", false, 0, 0, time.Second), running("b", false, 0)),
			check: func(t *testing.T, a Actions) {
				if len(a.ContainersToStart) != 0 || a.KillPod {
					t.Errorf("%+v", a)
				}
			}},
		{name: "OnFailure restarts a failed container", pod: pod(v1.RestartPolicyOnFailure, 0), rs: rs(ready, exited("a", false, 3, 2, time.Second), running("b", false, 0)),
			check: func(t *testing.T, a Actions) {
				if !reflect.DeepEqual(starts(a), []Start{{Index: 0, Attempt: 4}}) {
					t.Errorf("%+v", a)
				}
			}},
		{name: "Never: all exited means done", pod: pod(v1.RestartPolicyNever, 0), rs: rs(ready, exited("a", false, 0, 1, time.Second), exited("b", false, 0, 0, time.Second)),
			check: func(t *testing.T, a Actions) {
				if !a.KillPod || a.CreateSandbox || len(a.ContainersToStart) != 0 {
					t.Errorf("%+v", a)
				}
			}},
		{name: "in back-off: CrashLoopBackOff and requeue at expiry", pod: pod(v1.RestartPolicyAlways, 0),
			rs:      rs(ready, exited("a", false, 2, 1, 3*time.Second), running("b", false, 0)),
			backoff: map[string]BackoffEntry{"a": {Backoff: 20 * time.Second, LastUpdate: now.Add(-10 * time.Second)}},
			check: func(t *testing.T, a Actions) {
				w := a.Waiting["a"]
				if len(a.ContainersToStart) != 0 || w.Reason != ReasonCrashLoopBackOff ||
					w.Message != "back-off 20s restarting failed container=a pod=p_ns(u)" || !a.RequeueAt.Equal(now.Add(17*time.Second)) {
					t.Errorf("%+v", a)
				}
			}},
		{name: "back-off over: restart and double", pod: pod(v1.RestartPolicyAlways, 0),
			rs:      rs(ready, exited("a", false, 2, 1, 21*time.Second), running("b", false, 0)),
			backoff: map[string]BackoffEntry{"a": {Backoff: 20 * time.Second, LastUpdate: now.Add(-30 * time.Second)}},
			check: func(t *testing.T, a Actions) {
				if !reflect.DeepEqual(starts(a), []Start{{Index: 0, Attempt: 3}}) || a.Backoff["a"].Backoff != 40*time.Second {
					t.Errorf("%+v", a)
				}
			}},
		{name: "liveness failure: kill and restart", pod: pod(v1.RestartPolicyAlways, 0, liveness),
			rs:     rs(ready, running("a", false, 0), running("b", false, 0)),
			probes: map[string]podstate.ContainerProbes{"a-0": {Liveness: podstate.ProbeFailure}},
			check: func(t *testing.T, a Actions) {
				if len(a.ContainersToKill) != 1 || a.ContainersToKill[0].Message != "Container a failed liveness probe, will be restarted" ||
					!reflect.DeepEqual(starts(a), []Start{{Index: 0, Attempt: 1}}) {
					t.Errorf("%+v", a)
				}
			}},
		{name: "liveness failure, Never: kill only", pod: pod(v1.RestartPolicyNever, 0, liveness),
			rs:     rs(ready, running("a", false, 0), running("b", false, 0)),
			probes: map[string]podstate.ContainerProbes{"a-0": {Liveness: podstate.ProbeFailure}},
			check: func(t *testing.T, a Actions) {
				if len(a.ContainersToKill) != 1 || len(a.ContainersToStart) != 0 {
					t.Errorf("%+v", a)
				}
			}},
		{name: "deleted: kill with the deletion's grace", pod: pod(v1.RestartPolicyAlways, 0, deleted), rs: rs(ready, running("a", false, 0)),
			check: func(t *testing.T, a Actions) {
				if !a.KillPod || a.GracePeriod != 7 || a.CreateSandbox || len(a.ContainersToStart) != 0 {
					t.Errorf("%+v", a)
				}
			}},
		{name: "terminal phase: never started again", pod: pod(v1.RestartPolicyAlways, 0, func(p *v1.Pod) { p.Status.Phase = v1.PodFailed }), rs: rs(nil),
			check: func(t *testing.T, a Actions) {
				if !a.KillPod || a.CreateSandbox || len(a.ContainersToStart) != 0 {
					t.Errorf("%+v", a)
				}
			}},
		{name: "past active deadline: Failed DeadlineExceeded", pod: pod(v1.RestartPolicyAlways, 0, deadline), rs: rs(ready, running("a", false, 0)),
			check: func(t *testing.T, a Actions) {
				if !a.KillPod || a.Terminal == nil || a.Terminal.Reason != ReasonDeadlineExceeded || a.Terminal.Phase != v1.PodFailed {
					t.Errorf("%+v", a)
				}
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.backoff == nil {
				tc.backoff = map[string]BackoffEntry{}
			}
			tc.check(t, ComputePodActions(Input{Pod: tc.pod, Runtime: tc.rs, Probes: tc.probes, Backoff: tc.backoff, Now: now}))
		})
	}
}

func TestBackoffSchedule(t *testing.T) {
	c := BackoffConfig{Base: 10 * time.Second, Max: 5 * time.Minute}
	var e BackoffEntry
	var got []time.Duration
	at := now
	for i := 0; i < 8; i++ {
		e = c.Next(e, at)
		got = append(got, e.Backoff)
		at = at.Add(e.Backoff)
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 300 * time.Second, 300 * time.Second, 300 * time.Second}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("schedule %v, want %v", got, want)
	}
	// Quiet for more than 2×Max: back to Base.
	if e = c.Next(e, at.Add(11*time.Minute)); e.Backoff != 10*time.Second {
		t.Fatalf("after a quiet period: %v", e.Backoff)
	}
}

func ptr[T any](v T) *T { return &v }

func TestIsSidecar(t *testing.T) {
	always, never := v1.ContainerRestartPolicyAlways, v1.ContainerRestartPolicy("Never")
	for _, tc := range []struct {
		policy *v1.ContainerRestartPolicy
		want   bool
	}{{nil, false}, {&always, true}, {&never, false}} {
		if got := IsSidecar(&v1.Container{RestartPolicy: tc.policy}); got != tc.want {
			t.Errorf("IsSidecar(%v) = %v", tc.policy, got)
		}
	}
}

func withEphemeral(names ...string) func(*v1.Pod) {
	return func(p *v1.Pod) {
		for _, n := range names {
			p.Spec.EphemeralContainers = append(p.Spec.EphemeralContainers, v1.EphemeralContainer{
				EphemeralContainerCommon: v1.EphemeralContainerCommon{Name: n}, TargetContainerName: "a"})
		}
	}
}

func ephemeralContainer(c podstate.Container) podstate.Container {
	c.Ephemeral = true
	return c
}

// Ephemeral containers: started once in the running sandbox (during
// initialization too, as upstream's kubelet), joined to the PID namespace
// of the newest container the target names (none: the start fails),
// never restarted whatever the restartPolicy,
// never in a new sandbox, and never started in a pod that is stopping.
func TestComputePodActionsEphemeral(t *testing.T) {
	ready := []podstate.Sandbox{sandbox(true)}
	ephemeralStarts := func(a Actions) []Start {
		var out []Start
		for _, s := range a.ContainersToStart {
			if s.Ephemeral {
				out = append(out, s)
			}
		}
		return out
	}
	deleted := func(p *v1.Pod) { ts := metav1.NewTime(now); p.DeletionTimestamp = &ts }
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		rs   *podstate.Pod
		want []Start
	}{
		{name: "running pod: started, target's PID namespace",
			pod: pod(v1.RestartPolicyAlways, 0, withEphemeral("dbg")), rs: rs(ready, running("a", false, 0), running("b", false, 0)),
			want: []Start{{Index: 0, Ephemeral: true, TargetID: "a-0"}}},
		{name: "target exited: its newest instance is still the target, as upstream",
			pod: pod(v1.RestartPolicyAlways, 0, withEphemeral("dbg")), rs: rs(ready, exited("a", false, 0, 1, time.Hour), running("b", false, 0)),
			want: []Start{{Index: 0, Ephemeral: true, TargetID: "a-0"}}},
		{name: "no container has the target's name: the start is to fail",
			pod: pod(v1.RestartPolicyAlways, 0, withEphemeral("dbg")), rs: rs(ready, running("b", false, 0)),
			want: []Start{{Index: 0, Ephemeral: true, MissingTarget: "a"}}},
		{name: "running: nothing to do",
			pod: pod(v1.RestartPolicyAlways, 0, withEphemeral("dbg")), rs: rs(ready, ephemeralContainer(running("dbg", false, 0)), running("a", false, 0), running("b", false, 0))},
		{name: "exited under restartPolicy Always: not restarted",
			pod: pod(v1.RestartPolicyAlways, 0, withEphemeral("dbg")), rs: rs(ready, ephemeralContainer(exited("dbg", false, 0, 1, time.Hour)), running("a", false, 0), running("b", false, 0))},
		{name: "second one added: only it starts",
			pod: pod(v1.RestartPolicyAlways, 0, withEphemeral("dbg", "dbg2")), rs: rs(ready, ephemeralContainer(exited("dbg", false, 0, 0, time.Hour)), running("a", false, 0), running("b", false, 0)),
			want: []Start{{Index: 1, Ephemeral: true, TargetID: "a-0"}}},
		{name: "during initialization: started beside the init container (its target not there yet)",
			pod: pod(v1.RestartPolicyAlways, 1, withEphemeral("dbg")), rs: rs(ready, running("i0", true, 0)),
			want: []Start{{Index: 0, Ephemeral: true, MissingTarget: "a"}}},
		{name: "no sandbox yet: not started with the new sandbox",
			pod: pod(v1.RestartPolicyAlways, 0, withEphemeral("dbg")), rs: rs(nil)},
		{name: "sandbox died: the new sandbox does not bring back one that ran",
			pod: pod(v1.RestartPolicyAlways, 0, withEphemeral("dbg")), rs: rs([]podstate.Sandbox{sandbox(false)}, ephemeralContainer(exited("dbg", false, 0, 137, time.Minute)))},
		{name: "pod being deleted: not started",
			pod: pod(v1.RestartPolicyAlways, 0, withEphemeral("dbg"), deleted), rs: rs(ready, running("a", false, 0), running("b", false, 0))},
		{name: "pod done under restartPolicy Never: not started, the pod is killed",
			pod: pod(v1.RestartPolicyNever, 0, withEphemeral("dbg")), rs: rs(ready, exited("a", false, 0, 0, time.Minute), exited("b", false, 0, 0, time.Minute))},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ComputePodActions(Input{Pod: tc.pod, Runtime: tc.rs, Now: now})
			if got := ephemeralStarts(a); !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("ephemeral starts %+v, want %+v (actions %+v)", got, tc.want, a)
			}
			for _, k := range a.ContainersToKill {
				if k.Name == "dbg" {
					t.Fatalf("killed the ephemeral container: %+v", a)
				}
			}
		})
	}
}

// TestKilledPodIsTerminated: a pod whose kill ended it (Input.Killed) is
// terminated, as upstream's pod worker once SyncTerminatingPod succeeded:
// with nothing of it running its actions are empty (no second kill, no
// StopPodSandbox on every resync), whatever it is (finished by its
// restart policy, Succeeded, deleted, past its deadline) and even if its
// phase as seen is not terminal (a status write that failed), so it is
// never started again; a container or sandbox of it found running is
// killed again.
func TestKilledPodIsTerminated(t *testing.T) {
	stopped := []podstate.Sandbox{sandbox(false)}
	succeeded := func(p *v1.Pod) { p.Status.Phase = v1.PodSucceeded }
	deleted := func(p *v1.Pod) {
		ts := metav1.NewTime(now)
		p.DeletionTimestamp, p.DeletionGracePeriodSeconds = &ts, ptr(int64(7))
	}
	deadline := func(p *v1.Pod) {
		st := metav1.NewTime(now.Add(-time.Hour))
		p.Status.StartTime, p.Spec.ActiveDeadlineSeconds = &st, ptr(int64(60))
	}
	done := rs(stopped, exited("a", false, 0, 0, time.Minute), exited("b", false, 0, 0, time.Minute))
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		rs   *podstate.Pod
		kill bool
	}{
		{"finished by its restart policy", pod(v1.RestartPolicyNever, 0), done, false},
		{"Succeeded", pod(v1.RestartPolicyNever, 0, succeeded), done, false},
		{"deleted", pod(v1.RestartPolicyAlways, 0, deleted), done, false},
		{"past its deadline", pod(v1.RestartPolicyAlways, 0, deadline), done, false},
		// Not terminal as seen, its sandbox down: not re-made.
		{"Always pod seen running", pod(v1.RestartPolicyAlways, 0), done, false},
		{"no sandbox left", pod(v1.RestartPolicyAlways, 0), rs(nil), false},
		{"a container still running", pod(v1.RestartPolicyNever, 0, succeeded), rs(stopped, running("a", false, 0), exited("b", false, 0, 0, time.Minute)), true},
		{"a sandbox still ready", pod(v1.RestartPolicyNever, 0, deleted), rs([]podstate.Sandbox{sandbox(true)}, exited("a", false, 0, 0, time.Minute)), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := ComputePodActions(Input{Pod: tc.pod, Runtime: tc.rs, Now: now, Killed: true})
			if tc.kill {
				if !a.KillPod || a.CreateSandbox || len(a.ContainersToStart) > 0 || a.GracePeriod != GracePeriod(tc.pod) {
					t.Errorf("%+v, want the pod killed again and nothing else", a)
				}
				return
			}
			if !reflect.DeepEqual(a, Actions{}) {
				t.Errorf("%+v, want no actions", a)
			}
			// Not yet killed, the same pod is killed (or, seen running,
			// restarted): Killed is what empties the actions.
			if before := ComputePodActions(Input{Pod: tc.pod, Runtime: tc.rs, Now: now}); reflect.DeepEqual(before, Actions{}) {
				t.Errorf("no actions for the pod not yet killed either")
			}
		})
	}
}

// TestFoundTerminated: a pod first synced in a terminal phase with nothing
// of it running was terminated before (upstream's UpdatePod with
// isPodStatusCacheTerminal); running containers, a ready sandbox or a
// phase that is not terminal leave it to be killed.
func TestFoundTerminated(t *testing.T) {
	stopped, ready := []podstate.Sandbox{sandbox(false)}, []podstate.Sandbox{sandbox(true)}
	phase := func(ph v1.PodPhase) func(*v1.Pod) { return func(p *v1.Pod) { p.Status.Phase = ph } }
	deleted := func(p *v1.Pod) {
		ts := metav1.NewTime(now)
		p.DeletionTimestamp = &ts
	}
	created := running("b", false, 0)
	created.State = podstate.ContainerCreated
	done := rs(stopped, exited("a", false, 0, 0, time.Minute), exited("b", false, 0, 1, time.Minute))
	for _, tc := range []struct {
		name string
		pod  *v1.Pod
		rs   *podstate.Pod
		want bool
	}{
		{"Succeeded, stopped", pod(v1.RestartPolicyNever, 0, phase(v1.PodSucceeded)), done, true},
		{"Failed, stopped", pod(v1.RestartPolicyNever, 0, phase(v1.PodFailed)), done, true},
		{"Failed, nothing in the runtime", pod(v1.RestartPolicyAlways, 0, phase(v1.PodFailed)), rs(nil), true},
		{"Running, stopped", pod(v1.RestartPolicyNever, 0, phase(v1.PodRunning)), done, false},
		{"deleted Running, stopped", pod(v1.RestartPolicyAlways, 0, phase(v1.PodRunning), deleted), done, false},
		{"Succeeded, a sandbox ready", pod(v1.RestartPolicyNever, 0, phase(v1.PodSucceeded)), rs(ready, exited("a", false, 0, 0, time.Minute)), false},
		{"Failed, a container running", pod(v1.RestartPolicyNever, 0, phase(v1.PodFailed)), rs(stopped, running("a", false, 0)), false},
		{"Failed, a container created", pod(v1.RestartPolicyNever, 0, phase(v1.PodFailed)), rs(stopped, created), false},
	} {
		if got := FoundTerminated(tc.pod, tc.rs); got != tc.want {
			t.Errorf("%s: FoundTerminated = %v, want %v", tc.name, got, tc.want)
		}
	}
}
