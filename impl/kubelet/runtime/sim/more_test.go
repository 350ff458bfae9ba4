package sim

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// A running container of a workload keeps no end, files or output of its
// own (containerMore): its status and its one log line come from the
// record alone. What it gets later — files its processes write, one exec
// after another, its end — is kept and reported.
func TestContainerKeepsWhatItGetsLater(t *testing.T) {
	ctx := context.Background()
	r, clk := newSim(t, "10.244.0.0/24")
	id, _ := startContainer(t, r, nil, "app")
	if c, _ := r.containerByID(id); c.more != nil {
		t.Fatalf("a running container without faults keeps %+v", *c.more)
	}
	if st := state(t, r, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING || st.ExitCode != 0 || st.FinishedAt != 0 || st.Reason != "" {
		t.Fatalf("running container's status %+v", st)
	}
	if lines, err := r.ContainerLogs(ctx, id, runtime.LogOptions{}); err != nil || len(lines) != 1 {
		t.Fatalf("logs %+v %v", lines, err)
	}

	// A file one exec writes is there for the next.
	if _, _, code, err := r.ExecSync(ctx, id, []string{"sh", "-c", "echo x > /f"}, time.Second); err != nil || code != 0 {
		t.Fatalf("writing a file: %d %v", code, err)
	}
	if out, _, code, err := r.ExecSync(ctx, id, []string{"cat", "/f"}, time.Second); err != nil || code != 0 || string(out) != "x\n" {
		t.Fatalf("reading it back: %q %d %v", out, code, err)
	}

	clk.Step(time.Second)
	if err := r.StopContainer(ctx, id, 30); err != nil {
		t.Fatal(err)
	}
	st := state(t, r, id)
	if st.State != runtimeapi.ContainerState_CONTAINER_EXITED || st.ExitCode != 0 || st.Reason != "Completed" || st.FinishedAt != clk.Now().UnixNano() {
		t.Fatalf("stopped container's status %+v", st)
	}
	// Another container of the runtime still has nothing of its own.
	other, _ := startContainer(t, r, nil, "other")
	if st := state(t, r, other); st.ExitCode != 0 || st.Reason != "" || st.FinishedAt != 0 {
		t.Fatalf("another container's status %+v", st)
	}
}
