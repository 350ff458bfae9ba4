package kubelet

import (
	"fmt"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// TestOrphanedRuntimePodKillEvents: a restarted kubelet finding in the
// runtime a running pod gone from the API kills it as upstream's
// SyncTerminatingRuntimePod does, with the pod the runtime knows
// (runningPod.ToAPIPod: its name, namespace and UID, its running
// containers by name in spec.containers): a Normal Killing "Stopping
// container app" about spec.containers{app} of that pod, and, the pod's
// spec being lost, no preStop hook (ToAPIPod has no lifecycle), the stop
// given the 2 s minimum. Before, the kill recorded no event.
func TestOrphanedRuntimePodKillEvents(t *testing.T) {
	h := newHarness(t, nil)
	p := h.create(h.pod("orphan", func(p *v1.Pod) {
		p.Spec.TerminationGracePeriodSeconds = ptr.To[int64](12)
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PreStop: &v1.LifecycleHandler{Exec: &v1.ExecAction{Command: []string{"touch", "/tmp/stopping"}}}}
	}))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("orphan: %s", got.Status.Phase)
	}
	rt := &unknownRuntime{Runtime: h.rt}
	events := &refRecorder{}
	h.krt = rt
	k2 := h.newKubelet(func(c *Config) { c.Recorder = events })
	if err := k2.adoptRuntimeState(h.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := k2.syncPod(h.ctx, p.UID); err != nil {
		t.Fatal(err)
	}
	if want := []string{"stop 2"}; !slices.Equal(rt.calls, want) {
		t.Errorf("runtime calls %v, want %v", rt.calls, want)
	}
	want := fmt.Sprintf("Pod default/orphan %s spec.containers{app}|Normal Killing Stopping container app", p.UID)
	if !slices.Equal(events.events, []string{want}) {
		t.Errorf("events %q, want [%q]", events.events, want)
	}
	if left, _ := h.rt.ListContainers(h.ctx, nil); len(left) != 0 {
		t.Errorf("containers left: %v", left)
	}
}
