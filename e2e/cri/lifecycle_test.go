package cri

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// hostDir is a fresh directory on the host (under the suite's work dir)
// for a hostPath volume whose content outlives the pod.
func hostDir(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(env.WorkDir, "hostpath", strings.ReplaceAll(t.Name(), "/", "_"))
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	return dir
}

// TestLivenessProbeRestartsContainer: a container whose exec liveness
// probe starts failing is killed and restarted.
func TestLivenessProbeRestartsContainer(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("unhealthy", "touch /tmp/healthy; sleep 2; rm /tmp/healthy; exec sleep 3600")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	p.Spec.Containers[0].LivenessProbe = &v1.Probe{
		ProbeHandler:  v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"cat", "/tmp/healthy"}}},
		PeriodSeconds: 1, FailureThreshold: 2,
	}
	createPod(t, ns, p)
	got := waitPod(t, ns, p.Name, 60*time.Second, "restarted by its liveness probe", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.RestartCount >= 1 && cs.LastTerminationState.Terminated != nil
	})
	last := containerStatus(got, "main").LastTerminationState.Terminated
	// sleep as PID 1 has no SIGTERM handler: it is killed after the grace period.
	if last.ExitCode != 137 && last.ExitCode != 143 {
		t.Fatalf("liveness kill: last termination %+v, want exit code 137 or 143", last)
	}
}

// TestPostStartAndPreStopHooks: postStart runs after the container
// starts; on deletion preStop runs before the container gets SIGTERM.
func TestPostStartAndPreStopHooks(t *testing.T) {
	ns := newNamespace(t)
	dir := hostDir(t)
	p := podSpec("hooks", `trap 'echo term >> /log/events; exit 0' TERM; echo started >> /log/events; while true; do sleep 0.1; done`)
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(10))
	p.Spec.Volumes = []v1.Volume{{Name: "log", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: dir}}}}
	p.Spec.Containers[0].VolumeMounts = []v1.VolumeMount{{Name: "log", MountPath: "/log"}}
	p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{
		PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo poststart >> /log/events"}}},
		PreStop:   &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"sh", "-c", "echo prestop >> /log/events; sleep 1; echo prestop-done >> /log/events"}}},
	}
	createPod(t, ns, p)
	waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	events := filepath.Join(dir, "events")
	if !waitUntil(10*time.Second, func() bool { b, _ := os.ReadFile(events); return strings.Contains(string(b), "poststart") }) {
		b, _ := os.ReadFile(events)
		t.Fatalf("postStart hook did not run: %q", b)
	}
	if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitNoPods(t, ns, 30*time.Second)
	b, _ := os.ReadFile(events)
	lines := strings.Fields(string(b))
	// postStart and the container's own first line race; the stop sequence does not.
	want := []string{"prestop", "prestop-done", "term"}
	if len(lines) != 5 || strings.Join(lines[2:], " ") != strings.Join(want, " ") {
		t.Fatalf("events: %q, want started and poststart (any order), then %v", lines, want)
	}
}

// TestTerminationGracePeriod: a container that ignores SIGTERM is killed
// once terminationGracePeriodSeconds have passed, not before; one that
// exits on SIGTERM is not kept waiting.
func TestTerminationGracePeriod(t *testing.T) {
	ns := newNamespace(t)
	const grace = 4
	stubborn := podSpec("stubborn", `trap '' TERM; while true; do sleep 0.1; done`)
	stubborn.Spec.TerminationGracePeriodSeconds = ptr(int64(grace))
	polite := podSpec("polite", `trap 'exit 0' TERM; while true; do sleep 0.1; done`)
	polite.Spec.TerminationGracePeriodSeconds = ptr(int64(30))
	for _, p := range []*v1.Pod{stubborn, polite} {
		createPod(t, ns, p)
	}
	for _, p := range []*v1.Pod{stubborn, polite} {
		waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	}
	gone := map[string]time.Duration{}
	start := time.Now()
	for _, p := range []*v1.Pod{stubborn, polite} {
		if err := env.Client.CoreV1().Pods(ns).Delete(context.Background(), p.Name, metav1.DeleteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for len(gone) < 2 && time.Since(start) < 60*time.Second {
		for _, p := range []*v1.Pod{stubborn, polite} {
			if _, ok := gone[p.Name]; ok {
				continue
			}
			if _, err := env.Client.CoreV1().Pods(ns).Get(context.Background(), p.Name, getOpts); isNotFound(err) {
				gone[p.Name] = time.Since(start)
			}
		}
		time.Sleep(100 * time.Millisecond)
	}
	t.Logf("deletion to pod gone: %v", gone)
	if d, ok := gone["stubborn"]; !ok || d < grace*time.Second {
		t.Errorf("a container ignoring SIGTERM was gone after %v, before its %ds grace period", d, grace)
	}
	if d, ok := gone["stubborn"]; !ok || d > (grace+15)*time.Second {
		t.Errorf("a container ignoring SIGTERM was not killed after its grace period: gone=%v ok=%v", d, ok)
	}
	if d, ok := gone["polite"]; !ok || d > 15*time.Second {
		t.Errorf("a container exiting on SIGTERM (grace period 30s) took %v (ok=%v)", d, ok)
	}
}
