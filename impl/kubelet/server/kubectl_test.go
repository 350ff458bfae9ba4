package server_test

import (
	"bufio"
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestKubectlInteractiveExecAndAttach runs real kubectl against the whole
// pipeline `kubeproof up` runs (API server, scheduler, a simulated kubelet
// behind the kubelet API): `kubectl exec -i` with stdin piped, its exit
// code, and `kubectl attach -i` to a container created with stdin: true.
func TestKubectlInteractiveExecAndAttach(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not on PATH (e2e/kubectl builds one; this test uses the installed one)")
	}
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true,
		UnsafeNoFsync: true, Scheduler: true, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	}()
	command := func(stdin string, args ...string) *exec.Cmd {
		cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig", c.AdminKubeconfig}, args...)...)
		cmd.Stdin = strings.NewReader(stdin)
		return cmd
	}
	run := func(stdin string, args ...string) (string, string, error) {
		cmd := command(stdin, args...)
		var stdout, stderr strings.Builder
		cmd.Stdout, cmd.Stderr = &stdout, &stderr
		err := cmd.Run()
		return stdout.String(), stderr.String(), err
	}
	must := func(stdin string, args ...string) string {
		t.Helper()
		out, errOut, err := run(stdin, args...)
		if err != nil {
			t.Fatalf("kubectl %v: %v\n%s%s", args, err, out, errOut)
		}
		return out
	}

	must(`apiVersion: v1
kind: Pod
metadata: {name: web}
spec:
  containers:
  - {name: app, image: busybox, stdin: true}
`, "apply", "-f", "-")
	must("", "wait", "--for=condition=Ready", "pod/web", "--timeout=90s")

	if out := must("hello\nworld\n", "exec", "-i", "web", "--", "cat"); out != "hello\nworld\n" {
		t.Errorf("kubectl exec -i web -- cat = %q", out)
	}
	out, errOut, err := run("echo one\nnope\nexit 3\n", "exec", "-i", "web", "--", "sh")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 || out != "one\n" || !strings.Contains(errOut, "sh: nope: not found") {
		t.Errorf("kubectl exec -i web -- sh: %v, stdout %q, stderr %q; want exit 3, %q", err, out, errOut, "one\n")
	}
	// -t with a stdin that is no terminal: kubectl says so and goes on
	// without a TTY.
	if out, errOut, err := run("echo piped\n", "exec", "-i", "-t", "web", "--", "sh"); err != nil || out != "piped\n" {
		t.Errorf("kubectl exec -it with piped stdin: %v, stdout %q, stderr %q", err, out, errOut)
	}

	// attach -i: the line sent reaches the container's main process, which
	// echoes it; attach runs until the container ends, so stop it here.
	actx, acancel := context.WithCancel(ctx)
	defer acancel()
	attach := exec.CommandContext(actx, kubectl, "--kubeconfig", c.AdminKubeconfig, "attach", "-i", "web", "-q")
	stdin, err := attach.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := attach.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var attachErr strings.Builder
	attach.Stderr = &attachErr
	if err := attach.Start(); err != nil {
		t.Fatal(err)
	}
	lines := make(chan string)
	go func() {
		defer close(lines)
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
	}()
	got := ""
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for got != "ping" {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("kubectl attach -i ended: %v; stderr %q", attach.Wait(), attachErr.String())
			}
			got = l
		case <-tick.C:
			// Lines sent before the attach was established are not seen.
			_, _ = stdin.Write([]byte("ping\n"))
		case <-ctx.Done():
			t.Fatalf("kubectl attach -i: no echo; stderr %q", attachErr.String())
		}
	}
	acancel()
	_ = attach.Wait()
	for range lines {
	}

	// kubectl run -i --restart=Never: the pod's container gets stdin and
	// stdinOnce; what is piped reaches the main process (which echoes it),
	// and when stdin ends the container exits 0, the pod Succeeds and
	// kubectl returns.
	if out, errOut, err := run("once\n", "run", "once", "-i", "-q", "--restart=Never", "--image=busybox"); err != nil || out != "once\n" {
		t.Errorf("kubectl run -i --restart=Never: %v, stdout %q, stderr %q; want %q", err, out, errOut, "once\n")
	}
	if phase := must("", "get", "pod", "once", "-o", "jsonpath={.status.phase}"); phase != "Succeeded" {
		t.Errorf("pod once after kubectl run -i: phase %q, want Succeeded", phase)
	}

	// attach -i to a container without stdin: true is refused.
	must("", "run", "plain", "--image=busybox")
	must("", "wait", "--for=condition=Ready", "pod/plain", "--timeout=90s")
	if _, errOut, err := run("x\n", "attach", "-i", "plain"); err == nil || !strings.Contains(errOut, "does not accept stdin") {
		t.Errorf("kubectl attach -i to a container without stdin: %v, stderr %q", err, errOut)
	}
}
