package kubelet

import (
	"context"
	"net"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/cri"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/cri/fakecri"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// newCRIHarness is a harness whose kubelet talks CRI over gRPC (a unix
// socket) to a fake CRI server backed by the simulation.
func newCRIHarness(t *testing.T) (*harness, *cri.Runtime) {
	h := newHarness(t, nil)
	client, dir := dialFakeCRI(t, h.rt)
	h.krt = client
	h.k = h.newKubelet(func(c *Config) { c.PodLogsDir = filepath.Join(dir, "pods") })
	return h, client
}

// dialFakeCRI serves backend through a fake CRI gRPC server on a unix
// socket in a fresh directory, and returns the kubelet's CRI client of it
// and that directory (tests put the pod logs there). Both end with t.
func dialFakeCRI(t *testing.T, backend runtime.Runtime) (*cri.Runtime, string) {
	t.Helper()
	dir := t.TempDir()
	sock := filepath.Join(dir, "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	fakecri.New(backend).Register(g)
	go g.Serve(lis)
	t.Cleanup(g.Stop)
	client, err := cri.Dial(context.Background(), "unix://"+sock)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	return client, dir
}

func TestKubeletOverCRI(t *testing.T) {
	h, _ := newCRIHarness(t)
	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Annotations["sim.kubeproof.io/logs"] = "listening on :80"
		p.Annotations["sim.kubeproof.io/crash-after"] = "10s"
		p.Spec.Containers[0].ReadinessProbe = &v1.Probe{ProbeHandler: v1.ProbeHandler{Exec: &v1.ExecAction{Command: []string{"true"}}}}
	}))
	h.sync(p)
	got := h.sync(p) // the readiness probe runs through ExecSync over gRPC
	cs := cstatus(got, "app")
	if got.Status.Phase != v1.PodRunning || cond(got, v1.PodReady).Status != v1.ConditionTrue ||
		!strings.HasPrefix(cs.ContainerID, "sim://") || got.Status.PodIP == "" {
		t.Fatalf("status over CRI: %+v", got.Status)
	}
	lines, err := h.k.ContainerLogs(h.ctx, "default", "web", "app", false, runtime.LogOptions{})
	if err != nil || len(lines) != 1 || lines[0].Text != "listening on :80" || lines[0].Stream != "stdout" {
		t.Fatalf("logs from the CRI log file: %+v %v", lines, err)
	}
	h.step(10 * time.Second)
	if cs = cstatus(h.sync(p), "app"); cs.RestartCount != 1 {
		t.Fatalf("restart over CRI: %+v", cs)
	}

	// A restarted kubelet with a new connection adopts the pod.
	client2, err := cri.Dial(h.ctx, h.krt.(*cri.Runtime).Target())
	if err != nil {
		t.Fatal(err)
	}
	defer client2.Close()
	h.krt = client2
	k2 := h.newKubelet(func(c *Config) { c.PodLogsDir = h.k.cfg.PodLogsDir })
	if err := k2.adoptRuntimeState(h.ctx); err != nil {
		t.Fatal(err)
	}
	h.syncWith(k2, p)
	if sb, _ := h.rt.Counts(); sb != 1 {
		t.Fatalf("%d sandboxes after kubelet restart", sb)
	}

	// Deletion through CRI.
	deletePod(t, h, p, 30)
	if h.syncWith(k2, p) != nil {
		t.Fatal("pod not finally deleted")
	}
	h.syncWith(k2, p)
	if sb, c := h.rt.Counts(); sb != 0 || c != 0 {
		t.Fatalf("runtime not cleaned: %d sandboxes %d containers", sb, c)
	}
}

func TestCRIWaitNetworkReady(t *testing.T) {
	h := newHarness(t, nil)
	sock := filepath.Join(t.TempDir(), "cri.sock")
	lis, err := net.Listen("unix", sock)
	if err != nil {
		t.Fatal(err)
	}
	g := grpc.NewServer()
	srv := fakecri.New(h.rt)
	srv.SetNetworkReady(false)
	srv.Register(g)
	go g.Serve(lis)
	defer g.Stop()
	client, err := cri.Dial(context.Background(), sock)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	if client.Type() != "sim" {
		t.Fatalf("runtime name %q", client.Type())
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if err := client.WaitNetworkReady(ctx, 5*time.Millisecond); err == nil {
		t.Fatal("network reported ready")
	}
	srv.SetNetworkReady(true)
	if err := client.WaitNetworkReady(context.Background(), 5*time.Millisecond); err != nil {
		t.Fatal(err)
	}
	if _, err := client.ContainerStatus(context.Background(), "nope"); err == nil || !strings.Contains(err.Error(), runtime.ErrNotFound.Error()) {
		t.Fatalf("NotFound not mapped: %v", err)
	}
}

// TestRuntimeErrorsWordedAsUpstream: a container that CRI fails to start
// is reported as upstream's startContainer reports it — the Failed event
// "Error: <message>" with the gRPC status's message alone (containerd's
// "failed to create containerd task: ..."), not the CRI client's "start
// container <id>: rpc error: code = ... desc = ..." around it.
func TestRuntimeErrorsWordedAsUpstream(t *testing.T) {
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, nil)
	client, dir := dialFakeCRI(t, h.rt)
	h.krt = client
	h.k = h.newKubelet(func(c *Config) { c.PodLogsDir = filepath.Join(dir, "pods"); c.Recorder = rec })
	const msg = `exec: "nope": executable file not found in $PATH`
	p := h.create(h.pod("fails", func(p *v1.Pod) {
		p.Annotations = map[string]string{sim.AnnotationStartFailure: msg}
	}))
	h.sync(p)
	var failed []string
	for _, e := range drain(rec) {
		if strings.HasPrefix(e, "Warning Failed ") {
			failed = append(failed, e)
		}
	}
	want := "Warning Failed Error: failed to create containerd task: " + msg
	if len(failed) == 0 || failed[0] != want {
		t.Fatalf("Failed events %q, want %q first", failed, want)
	}
}
