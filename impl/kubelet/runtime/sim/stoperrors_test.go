package sim

import (
	"context"
	"fmt"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// wantStatus fails unless err is a gRPC status error of code with text
// want ("rpc error: code = ... desc = ...").
func wantStatus(t *testing.T, what string, err error, code codes.Code, want string) {
	t.Helper()
	if s, ok := status.FromError(err); err == nil || !ok || s.Code() != code || err.Error() != want {
		t.Errorf("%s = %v (code %v), want %s", what, err, status.Code(err), want)
	}
}

// TestStopFailureAsContainerd: a running container with the stop-failure
// fault keeps running when stopped, the call failing with containerd's
// StopContainer error (status Unknown, "failed to stop container <id>:
// <cause>" with a timeout, "failed to kill container <id>: ..." without);
// stopping its sandbox fails as containerd's StopPodSandbox ("failed to
// stop container <id>: failed to kill container <id>: <cause>"), the
// sandbox left ready and its other containers running. The fault may name
// one container (suffixed key); an empty value is a default cause.
func TestStopFailureAsContainerd(t *testing.T) {
	ctx := context.Background()
	r, _ := newSim(t, "10.244.0.0/24")
	ann := map[string]string{AnnotationStopFailure + ".app": "ttrpc: closed"}
	sb, err := r.RunPodSandbox(ctx, sandboxConfig("p", ann), "")
	if err != nil {
		t.Fatal(err)
	}
	img := &runtimeapi.ImageSpec{Image: "busybox:1"}
	if _, err := r.PullImage(ctx, img); err != nil {
		t.Fatal(err)
	}
	start := func(name string) string {
		t.Helper()
		id, err := r.CreateContainer(ctx, sb, &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: name}, Image: img,
			Labels: map[string]string{runtime.LabelPodUID: "p"}}, nil)
		if err == nil {
			err = r.StartContainer(ctx, id)
		}
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	app, side := start("app"), start("side")
	wantStatus(t, "stop app", r.StopContainer(ctx, app, 30), codes.Unknown,
		fmt.Sprintf(`rpc error: code = Unknown desc = failed to stop container %q: ttrpc: closed`, app))
	wantStatus(t, "stop app without a timeout", r.StopContainer(ctx, app, 0), codes.Unknown,
		fmt.Sprintf(`rpc error: code = Unknown desc = failed to kill container %q: ttrpc: closed`, app))
	if st := state(t, r, app); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("app after failed stops: %v", st.State)
	}
	wantStatus(t, "stop sandbox", r.StopPodSandbox(ctx, sb), codes.Unknown,
		fmt.Sprintf(`rpc error: code = Unknown desc = failed to stop container %q: failed to kill container %q: ttrpc: closed`, app, app))
	if st, err := r.PodSandboxStatus(ctx, sb); err != nil || st.State != runtimeapi.PodSandboxState_SANDBOX_READY || st.Network == nil {
		t.Fatalf("sandbox after a failed stop: %v %v", st, err)
	}
	if st := state(t, r, side); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("side after its sandbox's failed stop: %v", st.State)
	}
	if err := r.StopContainer(ctx, side, 30); err != nil {
		t.Fatalf("stop side (no fault of its own): %v", err)
	}

	id, _ := startContainer(t, r, map[string]string{AnnotationStopFailure: ""}, "any")
	wantStatus(t, "stop with the default cause", r.StopContainer(ctx, id, 2), codes.Unknown,
		fmt.Sprintf(`rpc error: code = Unknown desc = failed to stop container %q: simulated stop failure`, id))
}

// TestSandboxErrorsAsContainerd: a container asked of an unknown sandbox
// is containerd's CreateContainer error (status NotFound, "failed to find
// sandbox id <id>: not found"); one created in a stopped sandbox (which
// containerd 2.x takes) fails to start with containerd's StartContainer
// error (status Unknown, "sandbox container <id> is not running") and is
// left Exited 128, StartError, with that message.
func TestSandboxErrorsAsContainerd(t *testing.T) {
	ctx := context.Background()
	r, _ := newSim(t, "10.244.0.0/24")
	img := &runtimeapi.ImageSpec{Image: "busybox:1"}
	if _, err := r.PullImage(ctx, img); err != nil {
		t.Fatal(err)
	}
	cfg := &runtimeapi.ContainerConfig{Metadata: &runtimeapi.ContainerMetadata{Name: "app"}, Image: img, Labels: map[string]string{runtime.LabelPodUID: "p"}}
	const gone = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	_, err := r.CreateContainer(ctx, gone, cfg, nil)
	wantStatus(t, "create in an unknown sandbox", err, codes.NotFound,
		fmt.Sprintf(`rpc error: code = NotFound desc = failed to find sandbox id %q: not found`, gone))

	sb, err := r.RunPodSandbox(ctx, sandboxConfig("p", nil), "")
	if err != nil {
		t.Fatal(err)
	}
	if err := r.StopPodSandbox(ctx, sb); err != nil {
		t.Fatal(err)
	}
	id, err := r.CreateContainer(ctx, sb, cfg, nil)
	if err != nil {
		t.Fatalf("create in a stopped sandbox: %v", err)
	}
	msg := fmt.Sprintf("sandbox container %q is not running", sb)
	wantStatus(t, "start in a stopped sandbox", r.StartContainer(ctx, id), codes.Unknown, "rpc error: code = Unknown desc = "+msg)
	if st := state(t, r, id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 128 || st.Reason != "StartError" || st.Message != msg {
		t.Fatalf("after the refused start: %v %d %q %q", st.State, st.ExitCode, st.Reason, st.Message)
	}
}
