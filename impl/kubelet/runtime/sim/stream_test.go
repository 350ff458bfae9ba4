package sim

import (
	"context"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/server/streamtest"
)

// startStdinContainer runs a container created with stdin (and stdinOnce
// as given), as the kubelet creates one for `kubectl run -i`.
func startStdinContainer(t *testing.T, r *Runtime, name string, stdinOnce bool) string {
	t.Helper()
	id := createContainer(t, r, nil, name, true, stdinOnce)
	if err := r.StartContainer(context.Background(), id); err != nil {
		t.Fatal(err)
	}
	return id
}

// With stdinOnce, the end of the attached stdin ends the main process:
// the attach streams the echoed input, then ends as the container exits 0.
func TestAttachStdinOnceEndsTheMainProcess(t *testing.T) {
	r, _ := newSim(t, "10.1.0.0/24")
	id := startStdinContainer(t, r, "once", true)
	var out streamtest.Buffer
	if err := r.Attach(context.Background(), id, strings.NewReader("a\nb\n"), &out, nil, false, nil); err != nil {
		t.Fatal(err)
	}
	if out.String() != "a\nb\n" {
		t.Errorf("attached output %q, want the echoed input", out.String())
	}
	if st := state(t, r, id); st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 0 || st.Reason != "Completed" {
		t.Errorf("after stdin closed: %s exit %d %s, want EXITED 0 Completed", st.State, st.ExitCode, st.Reason)
	}
}

// Without stdinOnce the main process outlives the attached stdin; the
// attach lasts until the client leaves.
func TestAttachStdinKeepsTheMainProcess(t *testing.T) {
	r, _ := newSim(t, "10.1.0.0/24")
	id := startStdinContainer(t, r, "kept", false)
	ctx, cancel := context.WithCancel(context.Background())
	var out streamtest.Buffer
	done := make(chan error, 1)
	go func() { done <- r.Attach(ctx, id, strings.NewReader("a\n"), &out, nil, true, nil) }()
	for !strings.Contains(out.String(), "a\r\n") {
		select {
		case err := <-done:
			t.Fatalf("attach ended early: %v", err)
		case <-time.After(time.Millisecond):
		}
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	// A TTY echoes the input, then the process prints it: "\r\n" ends both.
	if out.String() != "a\r\na\r\n" {
		t.Errorf("attached tty output %q", out.String())
	}
	if st := state(t, r, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("after the client left: %s, want RUNNING", st.State)
	}
}
