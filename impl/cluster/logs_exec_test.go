package cluster

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
	"github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// TestKubectlLogsAndExec runs the API server, scheduler and controller
// manager, two simulated kubelets behind one kubelet API server, and real
// kubectl: `kubectl logs` and `kubectl exec` go API server → kubelet API →
// the simulated runtime. (Start does not run the kubelet API yet, so the
// test wires the kubelets itself; the API server reaches them with its
// default kubelet client: no client certificate, as kube-apiserver without
// --kubelet-client-certificate.)
func TestKubectlLogsAndExec(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not on PATH (e2e/kubectl builds one; this test uses the installed one)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		Scheduler: true, ControllerManager: true})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer cancel()
	// The kubelets and their API stop before the control plane.
	kctx, kcancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() {
		kcancel()
		wg.Wait()
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	}()

	tlsConfig, err := server.TLSConfig(server.TLSOptions{Hosts: []string{"127.0.0.1"}})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	mux := server.NewMux(server.Options{})
	wg.Go(func() { _ = server.Serve(kctx, ln, mux, tlsConfig) })
	cs, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		name := fmt.Sprintf("node-%d", i)
		rt, err := sim.New(sim.Config{PodCIDR: fmt.Sprintf("10.244.%d.0/24", i)})
		if err != nil {
			t.Fatal(err)
		}
		k, err := kubelet.New(kctx, cs, kubelet.Config{NodeName: name, PodCIDR: fmt.Sprintf("10.244.%d.0/24", i),
			Port: int32(ln.Addr().(*net.TCPAddr).Port)}, rt)
		if err != nil {
			t.Fatal(err)
		}
		mux.Add(k)
		wg.Go(func() { _ = k.Run(kctx) })
	}

	run := func(args ...string) (string, string, error) {
		cctx, ccancel := context.WithTimeout(ctx, 90*time.Second)
		defer ccancel()
		cmd := exec.CommandContext(cctx, kubectl, append([]string{"--kubeconfig", c.AdminKubeconfig}, args...)...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	must := func(args ...string) string {
		t.Helper()
		out, errOut, err := run(args...)
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s%s", args, err, out, errOut)
		}
		return out
	}

	must("run", "web", "--image=busybox", "--annotations=sim.kubeproof.io/logs=hello\nworld")
	must("create", "deployment", "two", "--image=busybox", "--replicas=1")
	must("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")

	if out := must("logs", "web"); out != "hello\nworld\n" {
		t.Errorf("kubectl logs web = %q", out)
	}
	if out := must("logs", "web", "--tail=1"); out != "world\n" {
		t.Errorf("kubectl logs --tail=1 = %q", out)
	}
	if out := must("logs", "web", "--timestamps", "--tail=1"); !strings.HasSuffix(out, " world\n") {
		t.Errorf("kubectl logs --timestamps = %q", out)
	}
	if out := must("exec", "web", "--", "echo", "hi"); out != "hi\n" {
		t.Errorf("kubectl exec web -- echo hi = %q", out)
	}
	_, exitStderr, err := run("exec", "web", "--", "sh", "-c", "exit 3")
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		// kubectl exits 1 for any failure other than the command's exit
		// code; its stderr names which (see README's known flaky test).
		t.Errorf("kubectl exec … exit 3: %v, want exit status 3; kubectl stderr: %q", err, exitStderr)
	}
	if _, errOut, err := run("logs", "web", "-c", "nope"); err == nil || !strings.Contains(errOut, "container nope is not valid for pod web") {
		t.Errorf("kubectl logs -c nope: %v %q", err, errOut)
	}
	if _, errOut, err := run("logs", "missing"); err == nil || !strings.Contains(errOut, `pods "missing" not found`) {
		t.Errorf("kubectl logs missing: %v %q", err, errOut)
	}
	// Through a Deployment's pod, by kubectl's deploy/NAME lookup.
	must("rollout", "status", "deployment/two", "--timeout=60s")
	if out := must("exec", "deploy/two", "--", "echo", "from", "a", "replica"); out != "from a replica\n" {
		t.Errorf("kubectl exec deploy/two = %q", out)
	}
	// Discovery lists the subresources.
	v1 := must("get", "--raw", "/api/v1")
	for _, sub := range []string{`"name":"pods/log"`, `"name":"pods/exec"`, `"name":"nodes/proxy"`} {
		if !strings.Contains(v1, sub) {
			t.Errorf("/api/v1 lacks %s", sub)
		}
	}
	// nodes/proxy reaches the kubelet API of a node.
	if out := must("get", "--raw", "/api/v1/nodes/node-1/proxy/healthz"); out != "ok" {
		t.Errorf("nodes/proxy/healthz = %q", out)
	}
}
