package kubelet

import (
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// instances counts a pod's containers in the runtime by state.
func (h *harness) instances(uid string) (exited, other int) {
	h.t.Helper()
	list, err := h.rt.ListContainers(h.ctx, &runtimeapi.ContainerFilter{LabelSelector: map[string]string{runtime.LabelPodUID: uid}})
	if err != nil {
		h.t.Fatal(err)
	}
	for _, c := range list {
		if c.State == runtimeapi.ContainerState_CONTAINER_EXITED {
			exited++
		} else {
			other++
		}
	}
	return exited, other
}

// stoppedSandbox makes a stopped sandbox of a pod the kubelet does not
// know (default/<name>, UID uid-<name>), for the container GC to remove.
func (h *harness) stoppedSandbox(name string) {
	h.t.Helper()
	uid := "uid-" + name
	sb, err := h.rt.RunPodSandbox(h.ctx, &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{Name: name, Namespace: "default", Uid: uid},
		Labels:   map[string]string{runtime.LabelPodUID: uid},
	}, "")
	if err != nil {
		h.t.Fatal(err)
	}
	if err := h.rt.StopPodSandbox(h.ctx, sb); err != nil {
		h.t.Fatal(err)
	}
}

// The periodic container GC, with no disk pressure at all, collects a
// crash-looping container's dead instances down to the newest one, once
// per gc.ContainerPeriod; the restart count goes on counting and
// `kubectl logs --previous` reads the last terminated instance, both
// while the container is back-off waiting (the newest instance, the one
// the collection keeps) and once it runs again. A stopped sandbox of a
// pod the kubelet does not know goes too.
func TestContainerGCCollectsACrashLoop(t *testing.T) {
	h := newHarness(t, func(c *Config) { c.Backoff = podsync.BackoffConfig{Base: 3 * time.Second, Max: 3 * time.Second} })
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	looper := h.create(h.pod("looper", func(p *v1.Pod) {
		p.Annotations[sim.AnnotationCrashAfter] = "1s"
		p.Annotations[sim.AnnotationLogs] = "hello"
	}))
	// crashUntilWaiting syncs the pod every second until it has crashed
	// at least n more times and waits in back-off.
	crashUntilWaiting := func(n int32) int32 {
		t.Helper()
		start := cstatus(h.sync(looper), "app").RestartCount
		for range 100 {
			h.step(time.Second)
			s := cstatus(h.sync(looper), "app")
			if s.RestartCount >= start+n && s.State.Waiting != nil && s.State.Waiting.Reason == "CrashLoopBackOff" {
				return s.RestartCount
			}
		}
		t.Fatal("looper never waited in back-off")
		return 0
	}
	checkPrevious := func(when string) {
		t.Helper()
		lines, err := h.k.ContainerLogs(h.ctx, "default", "looper", "app", true, runtime.LogOptions{})
		if err != nil || len(lines) != 1 || lines[0].Text != "hello" {
			t.Fatalf("%s: logs --previous = %v, %v", when, lines, err)
		}
	}
	before := crashUntilWaiting(3)
	if exited, _ := h.instances(string(looper.UID)); exited < 3 {
		t.Fatalf("looper has %d exited instances, want at least 3", exited)
	}
	h.stoppedSandbox("gone")

	// The container collection loop's step (collectContainers): the
	// first runs at once, the next once a period has passed. A period
	// on, the looper's back-off is over too.
	h.step(gc.ContainerPeriod)
	h.k.collectContainers(h.ctx, h.clock.Now())
	if exited, other := h.instances(string(looper.UID)); exited != 1 || other != 0 {
		t.Fatalf("after the collection looper has %d exited and %d other instances, want the newest exited only", exited, other)
	}
	if sbs, _ := h.rt.ListPodSandbox(h.ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{runtime.LabelPodUID: "uid-gone"}}); len(sbs) != 0 {
		t.Fatalf("the unknown pod's sandbox is still there: %v", sbs)
	}
	checkPrevious("back-off waiting, right after the collection")
	// Running again: --previous is the instance the collection kept.
	got := h.sync(looper)
	if s := cstatus(got, "app"); s.State.Running == nil || s.RestartCount != before+1 {
		t.Fatalf("after the back-off: %+v restart count %d (was %d)", s.State, s.RestartCount, before)
	}
	checkPrevious("running again")

	// More crashes; within the period nothing more is collected.
	crashUntilWaiting(2)
	h.k.collectContainers(h.ctx, h.clock.Now())
	if exited, _ := h.instances(string(looper.UID)); exited < 2 {
		t.Fatalf("collected again within the period: %d exited", exited)
	}
	h.step(gc.ContainerPeriod)
	h.k.collectContainers(h.ctx, h.clock.Now())
	if exited, _ := h.instances(string(looper.UID)); exited != 1 {
		t.Fatalf("after the next period looper has %d exited instances, want 1", exited)
	}
	checkPrevious("back-off waiting, after the second collection")
	if after := cstatus(h.sync(looper), "app").RestartCount; after < before+3 {
		t.Fatalf("restart count %d after more crashes (was %d)", after, before)
	}
	checkPrevious("running, after the second collection")
}
