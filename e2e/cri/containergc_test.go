package cri

import (
	"context"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	kruntime "github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestContainerGCKeepsTheNewestDeadInstance: on containerd, the kubelet's
// periodic container garbage collection (every minute) removes a
// crash-looping container's dead instances but the newest; the restart
// count goes on counting and `kubectl logs --previous` still shows the
// last run's output.
func TestContainerGCKeepsTheNewestDeadInstance(t *testing.T) {
	ns := newNamespace(t)
	p := createPod(t, ns, podSpec("looper", "echo crashing; exit 1"))
	exited := func() int {
		list, err := node.CRI.ListContainers(context.Background(), &runtimeapi.ContainerFilter{
			State:         &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED},
			LabelSelector: map[string]string{kruntime.LabelPodUID: string(p.UID)},
		})
		if err != nil {
			t.Fatal(err)
		}
		return len(list)
	}
	// Three restarts take 2+4+8 s of back-off; the collection may run
	// meanwhile, so more than one dead instance is not awaited.
	waitPod(t, ns, p.Name, 90*time.Second, "restarted 3 times", func(p *v1.Pod) bool {
		cs := containerStatus(p, "main")
		return cs != nil && cs.RestartCount >= 3
	})
	// Attempts 0-2 have all exited by now: one dead instance left means
	// the collection ran (never none: the newest stays).
	if !waitUntil(75*time.Second, func() bool { return exited() == 1 }) {
		t.Fatalf("%d dead instances left after a collection period, want the newest only", exited())
	}
	if !waitUntil(30*time.Second, func() bool {
		out, err := kubectl(t, "logs", "--previous", "-n", ns, p.Name)
		return err == nil && strings.TrimSpace(out) == "crashing"
	}) {
		out, err := kubectl(t, "logs", "--previous", "-n", ns, p.Name)
		t.Fatalf("kubectl logs --previous: %q %v", out, err)
	}
	got, err := env.Client.CoreV1().Pods(ns).Get(ctxFor(t, 10*time.Second), p.Name, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	if cs := containerStatus(got, "main"); cs == nil || cs.RestartCount < 3 {
		t.Fatalf("restart count after the collection: %+v", cs)
	}
}
