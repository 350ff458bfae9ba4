package sim

import (
	"context"
	"regexp"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	testingclock "k8s.io/utils/clock/testing"
)

// handlers returns what PodSandboxStatus and ListPodSandbox report as the
// sandbox's runtime handler.
func handlers(t *testing.T, r *Runtime, id string) (status, listed string) {
	t.Helper()
	st, err := r.PodSandboxStatus(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	list, err := r.ListPodSandbox(context.Background(), &runtimeapi.PodSandboxFilter{Id: id})
	if err != nil || len(list) != 1 {
		t.Fatalf("list sandbox %s: %v %v", id, list, err)
	}
	return st.RuntimeHandler, list[0].RuntimeHandler
}

// TestRuntimeHandlerRecorded: without configured handlers the simulation
// accepts any runtime handler and reports it in the sandbox's status and
// listing, as CRI does; the default handler is "".
func TestRuntimeHandlerRecorded(t *testing.T) {
	r, _ := newSim(t, "10.0.0.0/29")
	ctx := context.Background()
	gv, err := r.RunPodSandbox(ctx, sandboxConfig("gvisor", nil), "runsc")
	if err != nil {
		t.Fatal(err)
	}
	def, err := r.RunPodSandbox(ctx, sandboxConfig("plain", nil), "")
	if err != nil {
		t.Fatal(err)
	}
	if st, l := handlers(t, r, gv); st != "runsc" || l != "runsc" {
		t.Errorf("handler of the runsc sandbox: status %q, list %q", st, l)
	}
	if st, l := handlers(t, r, def); st != "" || l != "" {
		t.Errorf("handler of the default sandbox: status %q, list %q", st, l)
	}
	// A stopped sandbox keeps it; a removed one forgets it.
	if err := r.StopPodSandbox(ctx, gv); err != nil {
		t.Fatal(err)
	}
	if st, _ := handlers(t, r, gv); st != "runsc" {
		t.Errorf("handler of the stopped sandbox: %q", st)
	}
	if err := r.RemovePodSandbox(ctx, gv); err != nil {
		t.Fatal(err)
	}
	r.mu.Lock()
	left := len(r.handlers)
	r.mu.Unlock()
	if left != 0 {
		t.Errorf("%d handlers kept after the sandbox was removed", left)
	}
}

// TestRuntimeHandlersConfigured: with Config.RuntimeHandlers, a sandbox
// asking for another handler is refused with containerd's error as the
// kubelet receives it over CRI (gRPC status Unknown, containerd's message)
// and nothing is created; the default and the configured handlers run.
func TestRuntimeHandlersConfigured(t *testing.T) {
	r, err := New(Config{Clock: testingclock.NewFakeClock(t0), PodCIDR: "10.0.0.0/29", RuntimeHandlers: []string{"runc", "runsc"}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	// containerd 2's CRI plugin names the sandbox ID it had picked.
	_, err = r.RunPodSandbox(ctx, sandboxConfig("kata", nil), "kata-qemu")
	want := regexp.MustCompile(`^rpc error: code = Unknown desc = unable to get OCI runtime for sandbox "[0-9a-f]{64}": no runtime for "kata-qemu" is configured$`)
	if err == nil || !want.MatchString(err.Error()) || status.Code(err) != codes.Unknown {
		t.Fatalf("unknown handler: err = %v (code %s), want %s", err, status.Code(err), want)
	}
	if sb, _ := r.Counts(); sb != 0 {
		t.Fatalf("%d sandboxes after a refused handler", sb)
	}
	for _, h := range []string{"", "runc", "runsc"} {
		id, err := r.RunPodSandbox(ctx, sandboxConfig("pod-"+h, nil), h)
		if err != nil {
			t.Fatalf("handler %q: %v", h, err)
		}
		if st, _ := handlers(t, r, id); st != h {
			t.Errorf("handler %q recorded as %q", h, st)
		}
	}
}
