package cri

import (
	"sort"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/e2e/cri/harness"
)

// TestCrashLoopBackOff: a container that exits 1 is restarted, its
// restartCount increments, it waits in CrashLoopBackOff between restarts
// and the wait doubles (harness.Backoff: 2 s, 4 s, 8 s, ...).
//
// The delays between runs carry more than the back-off: the kubelet's
// detection of the exit (its 1-s relist), containerd and runc starting the
// next container, and the status times' one-second precision, together
// several seconds on a loaded machine (a CI run once saw 4 s where 2 s was
// due, another 10 s). So each delay is held only to its back-off as a
// lower bound, over five runs: the fourth restart waiting at least ~8 s is
// what shows the back-off grew (a constant 2-s back-off restarts in 2-4 s
// on a quiet machine).
func TestCrashLoopBackOff(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("crasher", "echo crashing; exit 1")
	createPod(t, ns, p)
	type run struct{ started, finished time.Time }
	runs := map[string]run{} // container id -> its run
	sawBackOff := false
	var last *v1.Pod
	deadline := time.Now().Add(90 * time.Second)
	for {
		pod, err := env.Client.CoreV1().Pods(ns).Get(ctxFor(t, 10*time.Second), p.Name, getOpts)
		if err != nil {
			t.Fatal(err)
		}
		last = pod
		if cs := containerStatus(pod, "main"); cs != nil {
			if w := cs.State.Waiting; w != nil && w.Reason == "CrashLoopBackOff" {
				sawBackOff = true
			}
			for _, term := range []*v1.ContainerStateTerminated{cs.State.Terminated, cs.LastTerminationState.Terminated} {
				if term != nil && term.ContainerID != "" {
					if term.ExitCode != 1 || term.Reason != "Error" {
						t.Fatalf("terminated state: %+v, want exit code 1, reason Error", term)
					}
					runs[term.ContainerID] = run{term.StartedAt.Time, term.FinishedAt.Time}
				}
			}
			if cs.RestartCount >= 5 && len(runs) >= 5 {
				break
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("no 5 restarts within 90s: %s", containerStates(last.Status.ContainerStatuses))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if !sawBackOff {
		t.Error("the container was never seen waiting with reason CrashLoopBackOff")
	}
	if last.Status.Phase != v1.PodRunning && last.Status.Phase != v1.PodPending {
		t.Errorf("phase of a crash-looping pod with restartPolicy Always: %s", last.Status.Phase)
	}
	// The delays between one run's end and the next one's start: the first
	// restart is immediate (as upstream's: the back-off starts with the
	// first crash), then Base, 2*Base, ... up to Max.
	var ordered []run
	for _, r := range runs {
		ordered = append(ordered, r)
	}
	sort.Slice(ordered, func(i, j int) bool { return ordered[i].started.Before(ordered[j].started) })
	var delays []time.Duration
	for i := 1; i < len(ordered); i++ {
		delays = append(delays, ordered[i].started.Sub(ordered[i-1].finished))
	}
	t.Logf("delays between runs: %v", delays)
	for i, d := range delays {
		var want time.Duration
		if i > 0 {
			want = min(harness.Backoff.Base<<(i-1), harness.Backoff.Max)
		}
		// Status times have one-second precision: allow a second.
		if d < want-time.Second {
			t.Errorf("restart %d came %s after the previous run ended, before its back-off of %s", i+1, d, want)
		}
	}
	if len(delays) < 4 {
		t.Errorf("%d delays between runs, want 4: %v", len(delays), delays)
	}
}

// TestRestartPolicyNeverFails: with restartPolicy Never a container that
// exits 1 is not restarted and the pod ends Failed.
func TestRestartPolicyNeverFails(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("fails", "echo bye; exit 1")
	p.Spec.RestartPolicy = v1.RestartPolicyNever
	createPod(t, ns, p)
	got := waitPod(t, ns, p.Name, 60*time.Second, "Failed", phaseIs(v1.PodFailed))
	cs := containerStatus(got, "main")
	if cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 1 || cs.State.Terminated.Reason != "Error" || cs.RestartCount != 0 {
		t.Fatalf("container status: %s", containerStates(got.Status.ContainerStatuses))
	}
	time.Sleep(3 * time.Second) // longer than the first back-off
	if again := waitPod(t, ns, p.Name, time.Second, "Failed", phaseIs(v1.PodFailed)); containerStatus(again, "main").RestartCount != 0 {
		t.Fatal("a restartPolicy Never container was restarted")
	}
	if n := len(containersOf(t, ns)); n != 1 {
		t.Fatalf("%d containers in the runtime, want the one exited container", n)
	}
}

// TestRunToCompletionSucceeds: containers that exit 0 leave the pod
// Succeeded with restartPolicy Never and OnFailure.
func TestRunToCompletionSucceeds(t *testing.T) {
	ns := newNamespace(t)
	for _, policy := range []v1.RestartPolicy{v1.RestartPolicyNever, v1.RestartPolicyOnFailure} {
		p := podSpec("done-"+string(policyName(policy)), "echo done")
		p.Spec.RestartPolicy = policy
		createPod(t, ns, p)
		got := waitPod(t, ns, p.Name, 60*time.Second, "Succeeded", phaseIs(v1.PodSucceeded))
		cs := containerStatus(got, "main")
		if cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 || cs.State.Terminated.Reason != "Completed" || cs.RestartCount != 0 {
			t.Fatalf("%s: container status: %s", policy, containerStates(got.Status.ContainerStatuses))
		}
		if out := mustKubectl(t, "logs", "-n", ns, p.Name); out != "done\n" {
			t.Fatalf("%s: logs of a completed container: %q", policy, out)
		}
	}
}

func policyName(p v1.RestartPolicy) string { return strings.ToLower(string(p)) }
