package kubectl

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestLogsAndExec starts a second `kubeproof up`, this one with the whole
// pipeline (controller manager, scheduler, two simulated nodes behind one
// kubelet API server), and checks `kubectl logs` and `kubectl exec` go
// through the API server's pods/log and pods/exec to the kubelets.
func TestLogsAndExec(t *testing.T) {
	t.Parallel()
	p, err := startUpWithNodes(filepath.Join(scratch, "data-nodes"), 2)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
	}()
	must := func(args ...string) string {
		t.Helper()
		return runWith(t, p, "", nil, args...)
	}
	kubectl := func(args ...string) (string, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		return p.kubectl(ctx, "", nil, args...)
	}

	// `kubeproof up` serves every simulated kubelet's API on one shared port
	// (impl/cluster/kubeletapi.go), which its nodes report.
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		if _, _, err := kubectl("get", "node", "node-1"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node-1 was not registered within 1m")
		}
	}
	must("wait", "--for=condition=Ready", "node/node-1", "--timeout=60s")
	if port := must("get", "node", "node-1", "-o", "jsonpath={.status.daemonEndpoints.kubeletEndpoint.Port}"); port == "10250" {
		t.Fatal("node-1 reports the default kubelet port 10250: kubeproof up is not serving its shared kubelet API")
	}

	must("run", "web", "--image=nginx", "--annotations=sim.kubeproof.io/logs=hello\nworld")
	must("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
	if out := must("logs", "web"); out != "hello\nworld\n" {
		t.Errorf("kubectl logs web = %q", out)
	}
	if out := must("logs", "web", "--tail=1"); out != "world\n" {
		t.Errorf("kubectl logs --tail=1 = %q", out)
	}
	if out := must("exec", "web", "--", "echo", "hi"); out != "hi\n" {
		t.Errorf("kubectl exec web -- echo hi = %q", out)
	}
	_, _, err = kubectl("exec", "web", "--", "sh", "-c", "exit 3")
	var exitErr *exec.ExitError
	if !errors.As(err, &exitErr) || exitErr.ExitCode() != 3 {
		t.Errorf("kubectl exec web -- sh -c 'exit 3': %v, want exit status 3", err)
	}
	if _, errOut, err := kubectl("logs", "web", "-c", "nope"); err == nil || !strings.Contains(errOut, "container nope is not valid for pod web") {
		t.Errorf("kubectl logs -c nope: %v %q", err, errOut)
	}

	// A Deployment's pods, by kubectl's deploy/NAME lookup.
	must("create", "deployment", "two", "--image=nginx", "--replicas=2")
	must("rollout", "status", "deployment/two", "--timeout=60s")
	if out := must("exec", "deploy/two", "--", "echo", "from", "a", "replica"); out != "from a replica\n" {
		t.Errorf("kubectl exec deploy/two = %q", out)
	}
	// nodes/proxy reaches a node's kubelet API.
	if out := must("get", "--raw", "/api/v1/nodes/node-2/proxy/healthz"); out != "ok" {
		t.Errorf("nodes/node-2/proxy/healthz = %q", out)
	}
}

// startUpWithNodes starts `kubeproof up` with every component and n
// simulated nodes and waits for its kubeconfig, as startUp does.
func startUpWithNodes(dataDir string, n int) (*upProcess, error) {
	p := &upProcess{dataDir: dataDir, done: make(chan struct{})}
	p.cmd = exec.Command(kubeproofPath, "up", "--port", "0", "--data-dir", dataDir, "--nodes", fmt.Sprint(n))
	stdout, err := p.cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	p.cmd.Stderr = &lockedWriter{mu: &p.mu, w: &p.output}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting kubeproof up: %w", err)
	}
	lines := make(chan string, 256)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			p.mu.Lock()
			p.output.WriteString(sc.Text() + "\n")
			p.mu.Unlock()
			select {
			case lines <- sc.Text():
			default:
			}
		}
		close(lines)
		p.err = p.cmd.Wait()
		close(p.done)
	}()
	timeout := time.After(2 * time.Minute)
	for p.kubeconfig == "" {
		select {
		case line, ok := <-lines:
			if !ok {
				<-p.done
				return nil, fmt.Errorf("kubeproof up exited before printing its kubeconfig (%v):\n%s", p.err, p.log())
			}
			if v, ok := strings.CutPrefix(strings.TrimSpace(line), "kubeconfig:"); ok {
				p.kubeconfig = strings.TrimSpace(v)
			}
		case <-timeout:
			_ = p.cmd.Process.Kill()
			<-p.done
			return nil, fmt.Errorf("kubeproof up printed no kubeconfig within 2m:\n%s", p.log())
		}
	}
	return p, nil
}
