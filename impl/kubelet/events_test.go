package kubelet

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// eventHarness is a harness whose kubelet records into a FakeRecorder.
func eventHarness(t *testing.T) (*harness, *record.FakeRecorder) {
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, func(c *Config) { c.Recorder = rec })
	return h, rec
}

// drain returns the events recorded so far ("<type> <reason> <message>").
func drain(rec *record.FakeRecorder) []string {
	var out []string
	for {
		select {
		case e := <-rec.Events:
			out = append(out, e)
		default:
			return out
		}
	}
}

func wantEvents(t *testing.T, got []string, want ...string) {
	t.Helper()
	i := 0
	for _, e := range got {
		if i < len(want) && e == want[i] {
			i++
		}
	}
	if i < len(want) {
		t.Fatalf("events %q\nmissing (in order) from %q", want[i:], got)
	}
}

func TestEvents(t *testing.T) {
	t.Run("start", func(t *testing.T) {
		h, rec := eventHarness(t)
		h.sync(h.create(h.pod("web", nil)))
		wantEvents(t, drain(rec),
			`Normal Pulling Pulling image "nginx:1.27"`,
			`Normal Pulled Successfully pulled image "nginx:1.27" in 0s (0s including waiting). Image size: 10485760 bytes.`,
			"Normal Created Created container: app",
			"Normal Started Started container app")
		// The image is present for the next pod.
		h.sync(h.create(h.pod("web2", nil)))
		wantEvents(t, drain(rec), `Normal Pulled Container image "nginx:1.27" already present on machine and can be accessed by the pod`, "Normal Started Started container app")
		// So it is for a Never container: upstream 1.37's words with
		// KubeletEnsureSecretPulledImages (beta, on by default since 1.35).
		h.sync(h.create(h.pod("web3", func(p *v1.Pod) { p.Spec.Containers[0].ImagePullPolicy = v1.PullNever })))
		wantEvents(t, drain(rec), `Normal Pulled Container image "nginx:1.27" already present on machine and can be accessed by the pod`, "Normal Started Started container app")
	})
	t.Run("never pull", func(t *testing.T) {
		h, rec := eventHarness(t)
		h.sync(h.create(h.pod("np", func(p *v1.Pod) { p.Spec.Containers[0].ImagePullPolicy = v1.PullNever })))
		wantEvents(t, drain(rec), `Warning ErrImageNeverPull Container image "nginx:1.27" is not present with pull policy of Never`, "Warning Failed Error: ErrImageNeverPull")
	})
	t.Run("crash loop", func(t *testing.T) {
		h, rec := eventHarness(t)
		p := h.create(h.pod("crash", func(p *v1.Pod) { p.Annotations[sim.AnnotationExitCode] = "1" }))
		for i := 0; i < 3; i++ {
			h.sync(p)
		}
		wantEvents(t, drain(rec), "Warning BackOff Back-off restarting failed container app in pod crash_default(uid-crash)")
	})
	t.Run("liveness", func(t *testing.T) {
		h, rec := eventHarness(t)
		p := h.create(h.pod("live", func(p *v1.Pod) {
			p.Spec.Containers[0].LivenessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"false"}}}, PeriodSeconds: 1, FailureThreshold: 1}
			p.Annotations[sim.AnnotationLiveness] = "fail"
		}))
		h.sync(p)
		h.step(time.Second)
		h.sync(p)
		got := drain(rec)
		wantEvents(t, got, "Normal Started Started container app", "Normal Killing Container app failed liveness probe, will be restarted")
		unhealthy := false
		for _, e := range got {
			unhealthy = unhealthy || strings.HasPrefix(e, "Warning Unhealthy Liveness probe failed")
		}
		if !unhealthy {
			t.Fatalf("no Unhealthy event in %q", got)
		}
	})
	t.Run("admission", func(t *testing.T) {
		h, rec := eventHarness(t)
		h.sync(h.create(h.pod("big", func(p *v1.Pod) {
			p.Spec.Containers[0].Resources.Requests = v1.ResourceList{v1.ResourceCPU: resourceMust("64")}
		})))
		got := drain(rec)
		if len(got) != 1 || !strings.HasPrefix(got[0], "Warning OutOfcpu Node didn't have enough resource: cpu") {
			t.Fatalf("events %q", got)
		}
	})
	t.Run("deletion", func(t *testing.T) {
		h, rec := eventHarness(t)
		p := h.create(h.pod("del", nil))
		h.sync(p)
		drain(rec)
		deletePod(t, h, p, 30)
		h.sync(p)
		wantEvents(t, drain(rec), "Normal Killing Stopping container app")
	})
}

// TestContainerRefFieldPath: an event about a container names it by its
// place in the pod's spec, and one the spec lacks (a pod restored from a
// container's labels to kill it, restoreKillSpecs) as upstream's
// GenerateContainerRef does: "implicitly required container <name>".
func TestContainerRefFieldPath(t *testing.T) {
	p := &v1.Pod{}
	p.Name, p.Namespace, p.UID = "p", "ns", "u"
	p.Spec.Containers = []v1.Container{{Name: "app"}}
	p.Spec.InitContainers = []v1.Container{{Name: "setup"}}
	if r := containerRef(p, "app", false); r.FieldPath != "spec.containers{app}" || r.Kind != "Pod" || r.Name != "p" || r.UID != "u" {
		t.Errorf("app ref %+v", r)
	}
	if r := containerRef(p, "setup", true); r.FieldPath != "spec.initContainers{setup}" {
		t.Errorf("init ref %+v", r)
	}
	if r := containerRef(&v1.Pod{ObjectMeta: p.ObjectMeta}, "app", false); r.FieldPath != "implicitly required container app" || r.Name != "p" || r.UID != "u" {
		t.Errorf("ref without the container in the spec %+v", r)
	}
}
