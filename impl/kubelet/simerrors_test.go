package kubelet

import (
	"regexp"
	"slices"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestSimErrorsAsOverCRI: what the kubelet shows users of the simulated
// runtime's failures (events, waiting reasons and messages) is what it
// shows for the same failures over CRI (the simulation behind fakecri and
// the kubelet's CRI client, as containerd behind the kubelet's): a pull of
// an image the registry lacks (containerd's NotFound status, whose gRPC
// prefix upstream's kubelet keeps), a pull the registry refuses
// (containerd's Unknown message alone, as upstream's remote image service
// strips that code), a sandbox whose network set-up fails
// (FailedCreatePodSandBox with containerd's Unknown status as it is), and a
// container that fails to start (the status's message alone, as upstream's
// startContainer). Sandbox IDs differ between the two runtimes and are
// compared as <id>.
func TestSimErrorsAsOverCRI(t *testing.T) {
	pods := []struct {
		name   string
		mutate func(*v1.Pod)
	}{
		{"missing", func(p *v1.Pod) { p.Spec.Containers[0].Image = "nginx:nope" }},
		{"private", func(p *v1.Pod) { p.Spec.Containers[0].Image = "registry.example.com/team/app:1.0" }},
		{"nonet", func(p *v1.Pod) {
			p.Annotations[sim.AnnotationNetworkFailure] = "failed to set bridge addr: permission denied"
		}},
		{"nostart", func(p *v1.Pod) {
			p.Annotations[sim.AnnotationStartFailure] = `exec: "nope": executable file not found in $PATH`
		}},
	}
	id := regexp.MustCompile(`[0-9a-f]{64}`)
	shown := func(h *harness, rec *record.FakeRecorder) []string {
		h.rt.RequireCredentials("registry.example.com", "robot", "right")
		h.rt.SetImageMissing("nginx:nope")
		var out []string
		for _, tc := range pods {
			p := h.create(h.pod(tc.name, tc.mutate))
			h.k.HandlePod(h.get(p))
			_, _ = h.k.syncPod(h.ctx, p.UID) // a sandbox failure fails the sync
			for _, e := range drain(rec) {
				out = append(out, tc.name+": "+id.ReplaceAllString(e, "<id>"))
			}
			if w := cstatus(h.get(p), "app").State.Waiting; w != nil {
				out = append(out, tc.name+": waiting "+w.Reason+": "+w.Message)
			}
		}
		return out
	}
	direct := shown(eventHarness(t))
	overCRI := shown(newRecordingCRIHarness(t))
	if !slices.Equal(direct, overCRI) {
		t.Errorf("shown with the simulation:\n%q\nover CRI:\n%q", direct, overCRI)
	}
	const missing = `rpc error: code = NotFound desc = failed to pull and unpack image "docker.io/library/nginx:nope": failed to resolve reference "docker.io/library/nginx:nope": docker.io/library/nginx:nope: not found`
	const refused = `failed to pull and unpack image "registry.example.com/team/app:1.0": failed to resolve reference "registry.example.com/team/app:1.0": pull access denied, repository does not exist or may require authorization: authorization failed: no basic auth credentials`
	wantEvents(t, direct,
		`missing: Warning Failed Failed to pull image "nginx:nope": `+missing,
		`missing: waiting ErrImagePull: `+missing,
		`private: Warning Failed Failed to pull image "registry.example.com/team/app:1.0": `+refused,
		`private: waiting ErrImagePull: `+refused,
		`nonet: Warning FailedCreatePodSandBox Failed to create pod sandbox: rpc error: code = Unknown desc = failed to setup network for sandbox "<id>": plugin type="bridge" name="containerd-net" failed (add): failed to set bridge addr: permission denied`,
		`nostart: Warning Failed Error: failed to create containerd task: exec: "nope": executable file not found in $PATH`,
		`nostart: waiting RunContainerError: failed to create containerd task: exec: "nope": executable file not found in $PATH`)
}
