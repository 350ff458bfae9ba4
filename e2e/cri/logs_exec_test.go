package cri

import (
	"errors"
	"fmt"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestKubectlLogsAndExec: kubectl logs and logs -f read the container's
// output through the API server's proxy to the kubelet, which reads the
// CRI log file containerd writes; kubectl exec runs a command in the pod
// and returns its output and exit code.
func TestKubectlLogsAndExec(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("talker", `echo hello from $(hostname); i=0; while true; do i=$((i+1)); echo line $i; sleep 0.2; done`)
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	createPod(t, ns, p)
	waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)

	var out string
	if !waitUntil(20*time.Second, func() bool {
		out, _ = kubectl(t, "logs", "-n", ns, p.Name)
		return strings.Contains(out, "line 3")
	}) {
		t.Fatalf("kubectl logs: %q", out)
	}
	if !strings.HasPrefix(out, "hello from talker\n") {
		t.Fatalf("kubectl logs does not start with the first line: %q", out)
	}
	if tail := mustKubectl(t, "logs", "-n", ns, p.Name, "--tail=1"); strings.Count(tail, "\n") != 1 || !strings.HasPrefix(tail, "line ") {
		t.Fatalf("kubectl logs --tail=1: %q", tail)
	}

	// logs -f keeps streaming lines written after it started.
	lines, readErr := kubectlFirstLines(t, 10, "logs", "-f", "-n", ns, p.Name, "--tail=1")
	if len(lines) < 10 {
		t.Fatalf("kubectl logs -f streamed %d lines before ending: %q (%v)", len(lines), lines, readErr)
	}
	for i := 1; i < len(lines); i++ {
		var a, b int
		if _, err := fmt.Sscanf(lines[i-1], "line %d", &a); err != nil {
			t.Fatalf("line %q: %v", lines[i-1], err)
		}
		if _, err := fmt.Sscanf(lines[i], "line %d", &b); err != nil || b != a+1 {
			t.Fatalf("kubectl logs -f: lines out of order or missing: %q", lines)
		}
	}

	if got := mustKubectl(t, "exec", "-n", ns, p.Name, "--", "sh", "-c", "echo $((6*7)); hostname; id -u"); got != "42\ntalker\n0\n" {
		t.Fatalf("kubectl exec output: %q", got)
	}
	_, err := kubectl(t, "exec", "-n", ns, p.Name, "--", "sh", "-c", "exit 3")
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Fatalf("kubectl exec of a command exiting 3: %v", err)
	}
	if _, err := kubectl(t, "exec", "-n", ns, p.Name, "-c", "nope", "--", "true"); err == nil {
		t.Fatal("kubectl exec into a container the pod does not have succeeded")
	}
}
