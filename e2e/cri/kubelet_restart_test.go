package cri

import (
	"context"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestKubeletRestart: restarting the kubelet while pods run adopts what
// containerd runs: no second sandbox for any pod, pod statuses unchanged
// (same containers, IPs, restart counts, readiness), and new pods still
// start.
func TestKubeletRestart(t *testing.T) {
	ns := newNamespace(t)
	ctx := context.Background()
	if _, err := env.Client.AppsV1().Deployments(ns).Create(ctx, httpdDeployment("steady", 2), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	before := waitPodsReady(t, ns, "app=steady", 2, 90*time.Second)
	sandboxes := map[string]bool{}
	for _, sb := range sandboxesOf(t, ns) {
		sandboxes[sb.Id] = true
	}
	if len(sandboxes) != 2 {
		t.Fatalf("%d sandboxes for 2 pods", len(sandboxes))
	}

	node.StopKubelet()
	time.Sleep(2 * time.Second) // the containers keep running without it
	if err := node.StartKubelet(ctx); err != nil {
		t.Fatal(err)
	}
	// Let the new kubelet relist, resync and probe a few times.
	time.Sleep(6 * time.Second)

	after := waitPodsReady(t, ns, "app=steady", 2, 30*time.Second)
	for name, b := range before {
		a, ok := after[name]
		if !ok {
			t.Fatalf("pod %s is gone after the kubelet restart", name)
		}
		bc, ac := b.Status.ContainerStatuses[0], a.Status.ContainerStatuses[0]
		if ac.State.Running == nil || bc.State.Running == nil {
			t.Fatalf("pod %s: container not running: before %s, after %s", name, containerStates(b.Status.ContainerStatuses), containerStates(a.Status.ContainerStatuses))
		}
		if a.Status.PodIP != b.Status.PodIP || ac.ContainerID != bc.ContainerID || ac.RestartCount != bc.RestartCount ||
			!ac.State.Running.StartedAt.Equal(&bc.State.Running.StartedAt) {
			t.Errorf("pod %s changed across the kubelet restart:\nbefore %s ip=%s %s\nafter  %s ip=%s %s",
				name, bc.ContainerID, b.Status.PodIP, containerStates(b.Status.ContainerStatuses),
				ac.ContainerID, a.Status.PodIP, containerStates(a.Status.ContainerStatuses))
		}
	}
	got := sandboxesOf(t, ns)
	for _, sb := range got {
		if !sandboxes[sb.Id] {
			t.Errorf("a new sandbox %s (pod %s) appeared after the kubelet restart", sb.Id, sb.Metadata.Name)
		}
	}
	if len(got) != len(sandboxes) {
		t.Errorf("%d sandboxes after the restart, %d before", len(got), len(sandboxes))
	}

	// New pods still start.
	p := podSpec("after-restart", "exec sleep 3600")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	createPod(t, ns, p)
	waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
}

// waitPodsReady waits until n pods match selector and all are Running and
// Ready, and returns them by name.
func waitPodsReady(t *testing.T, ns, selector string, n int, timeout time.Duration) map[string]v1.Pod {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		l, err := env.Client.CoreV1().Pods(ns).List(context.Background(), metav1.ListOptions{LabelSelector: selector})
		if err != nil {
			t.Fatal(err)
		}
		ready := map[string]v1.Pod{}
		for _, p := range l.Items {
			if isRunningReady(&p) && p.DeletionTimestamp == nil {
				ready[p.Name] = p
			}
		}
		if len(ready) == n && len(l.Items) == n {
			return ready
		}
		if time.Now().After(deadline) {
			for i := range l.Items {
				p := &l.Items[i]
				t.Logf("%s: phase=%s %s %s", p.Name, p.Status.Phase, conditions(p), containerStates(p.Status.ContainerStatuses))
			}
			t.Fatalf("%s in %s: %d pods, %d Running+Ready after %s, want %d", selector, ns, len(l.Items), len(ready), timeout, n)
		}
		time.Sleep(250 * time.Millisecond)
	}
}
