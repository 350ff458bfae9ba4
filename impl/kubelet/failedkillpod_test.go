package kubelet

import (
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/client-go/tools/record"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestFailedKillPodAsUpstream: a pod being deleted whose container will
// not stop (the simulation's stop-failure fault: containerd's
// StopContainer error, and its StopPodSandbox's for the sandbox holding
// it) gets upstream's FailedKillPod warning, "error killing pod: " and
// the kill's sync results aggregated as upstream's PodSyncResult words
// them (KillContainer for the container, KillPodSandbox for the pod UID,
// each with the runtime's gRPC status error); the other container and
// the sandbox are still asked to stop (upstream's killPodWithSyncResult),
// the sync fails (retried on the pod workers' back-off), the pod stays in
// the API, running, and each retry records the warning again. The same
// shows on the simulation and over CRI (fakecri and our CRI client).
func TestFailedKillPodAsUpstream(t *testing.T) {
	ids := regexp.MustCompile(`[0-9a-f]{64}`)
	run := func(h *harness, rec *record.FakeRecorder) []string {
		p := h.create(h.pod("stuck", func(p *v1.Pod) {
			p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Image: "busybox"})
			p.Annotations[sim.AnnotationStopFailure+".app"] = "ttrpc: closed"
		}))
		h.sync(p)
		if got := h.get(p); got.Status.Phase != v1.PodRunning {
			t.Fatalf("phase %s", got.Status.Phase)
		}
		drain(rec)
		deletePod(t, h, p, 30)
		var out []string
		for try := range 2 {
			h.k.HandlePod(h.get(p))
			_, err := h.k.syncPod(h.ctx, p.UID)
			if err == nil {
				t.Fatalf("try %d: the sync of a pod whose container would not stop succeeded", try)
			}
			for _, e := range drain(rec) {
				out = append(out, ids.ReplaceAllString(e, "<id>"))
			}
		}
		got := h.get(p)
		if got == nil {
			t.Fatal("pod deleted from the API though its container still runs")
		}
		if s := cstatus(got, "app"); s.State.Running == nil {
			t.Errorf("app: %+v", s.State)
		}
		if s := cstatus(got, "side"); s.State.Terminated == nil {
			t.Errorf("side was not stopped: %+v", s.State)
		}
		return out
	}
	direct := run(eventHarness(t))
	overCRI := run(newRecordingCRIHarness(t))
	if !slices.Equal(direct, overCRI) {
		t.Errorf("shown with the simulation:\n%q\nover CRI:\n%q", direct, overCRI)
	}
	const failed = `Warning FailedKillPod error killing pod: [` +
		`failed to "KillContainer" for "app" with KillContainerError: "rpc error: code = Unknown desc = failed to stop container \"<id>\": ttrpc: closed", ` +
		`failed to "KillPodSandbox" for "uid-stuck" with KillPodSandboxError: "rpc error: code = Unknown desc = failed to stop container \"<id>\": failed to kill container \"<id>\": ttrpc: closed"]`
	wantEvents(t, direct, failed, "Normal Killing Stopping container app", failed)
	if !slices.Contains(direct, "Normal Killing Stopping container side") {
		t.Errorf("side was not killed: %q", direct)
	}
	n := 0
	for _, e := range direct {
		if e == failed {
			n++
		}
	}
	if n != 2 {
		t.Errorf("%d FailedKillPod events in two syncs: %q", n, direct)
	}
}

// TestFailedKillPodOnEviction: an evicted pod whose container will not
// stop gets the FailedKillPod warning too (upstream's eviction manager
// kills through the pod worker's terminating sync), after the Evicted
// one, and the eviction fails.
func TestFailedKillPodOnEviction(t *testing.T) {
	ecfg, err := eviction.ParseConfig(eviction.Flags{Hard: "memory.available<100Mi", HardSet: true, PressureTransitionPeriod: 30 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, func(c *Config) { c.Eviction = &ecfg; c.Memory = resource.MustParse("4Gi"); c.Recorder = rec })
	if err := h.k.registerNode(h.ctx); err != nil {
		t.Fatal(err)
	}
	hog := h.sync(h.create(h.pod("hog", func(p *v1.Pod) {
		withMemory("64Mi", "512Mi")(p)
		p.Annotations[sim.AnnotationStopFailure] = "ttrpc: closed"
	})))
	q := resource.MustParse("50Mi")
	if err := h.k.SetAvailable(eviction.SignalMemoryAvailable, &q); err != nil {
		t.Fatal(err)
	}
	drain(rec)
	h.k.evictionTick(h.ctx) // the Evicted event, when the manager picks the pod
	if err := h.k.evictPod(h.ctx, hog.UID); err == nil {
		t.Fatal("the eviction of a pod whose container would not stop succeeded")
	}
	var got []string
	for _, e := range drain(rec) {
		if i := strings.Index(e, " "); i > 0 {
			if j := strings.Index(e[i+1:], " "); j > 0 {
				got = append(got, e[:i+1+j]) // type and reason
			}
		}
	}
	wantEvents(t, got, "Warning Evicted", "Warning FailedKillPod")
}
