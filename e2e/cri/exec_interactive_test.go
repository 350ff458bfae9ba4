package cri

import (
	"context"
	"errors"
	"net/url"
	"os/exec"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/tools/remotecommand"
	utilexec "k8s.io/client-go/util/exec"

	"github.com/kubeproof/kubeproof/impl/kubelet/server/streamtest"
)

// kubectlWithStdin runs kubectl with stdin and returns stdout, stderr and
// the error (an *exec.ExitError carries kubectl's exit code).
func kubectlWithStdin(t *testing.T, stdin string, args ...string) (string, string, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, env.Kubectl, append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr strings.Builder
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	return stdout.String(), stderr.String(), err
}

// TestKubectlExecInteractive: `kubectl exec -i` sends its stdin to a
// process in a real container (through API server → kubelet → containerd's
// streaming server), stdin's EOF reaches it, and its exit code comes back;
// a TTY session's size follows the client's resizes; `kubectl attach`
// streams the container's output.
func TestKubectlExecInteractive(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("interactive", `i=0; while true; do i=$((i+1)); echo tick $i; sleep 0.2; done`)
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	createPod(t, ns, p)
	waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)

	if out, errOut, err := kubectlWithStdin(t, "hello\nworld\n", "exec", "-i", "-n", ns, p.Name, "--", "cat"); err != nil || out != "hello\nworld\n" {
		t.Errorf("kubectl exec -i -- cat: %v, stdout %q, stderr %q", err, out, errOut)
	}
	if out, errOut, err := kubectlWithStdin(t, "x=$((6*7))\necho got $x\nexit 7\necho never\n", "exec", "-i", "-n", ns, p.Name, "--", "sh"); !exitedWith(err, 7) || out != "got 42\n" {
		t.Errorf("kubectl exec -i -- sh: %v, stdout %q, stderr %q; want exit 7 and %q", err, out, errOut, "got 42\n")
	}
	if out, _, err := kubectlWithStdin(t, "", "exec", "-i", "-n", ns, p.Name, "--", "wc", "-c"); err != nil || strings.TrimSpace(out) != "0" {
		t.Errorf("kubectl exec -i -- wc -c with empty stdin: %v, %q (stdin's EOF must reach the process)", err, out)
	}

	// A TTY through the client-go executors kubectl uses: stty reports
	// the size the client set, then the one it resized to.
	q := url.Values{"container": {"main"}, "command": {"sh"}, "stdin": {"true"}, "stdout": {"true"}, "tty": {"true"}}
	for transport, ex := range streamtest.Executors(t, env.Cluster.AdminConfig, env.Cluster.URL+"/api/v1/namespaces/"+ns+"/pods/"+p.Name+"/exec?"+q.Encode()) {
		tty := streamtest.StartTTY(ctxFor(t, 60*time.Second), ex, remotecommand.TerminalSize{Width: 100, Height: 30})
		sawSize := func(want string) bool {
			return waitUntil(20*time.Second, func() bool {
				tty.Type("stty size")
				time.Sleep(100 * time.Millisecond)
				return strings.Contains(tty.Stdout.String(), want)
			})
		}
		if !sawSize("30 100") {
			t.Errorf("tty over %s: no 30 100 from stty size: %q", transport, tty.Stdout.String())
		}
		tty.Sizes <- remotecommand.TerminalSize{Width: 120, Height: 40}
		if !sawSize("40 120") {
			t.Errorf("tty over %s: no 40 120 after a resize: %q", transport, tty.Stdout.String())
		}
		tty.Type("exit 4")
		if err := <-tty.Done; !exitedWithCode(err, 4) {
			t.Errorf("tty over %s: session ended with %v, want exit code 4", transport, err)
		}
		tty.Close()
	}

	// attach streams what the container's main process writes from now on.
	if lines, _ := kubectlFirstLines(t, 3, "attach", "-n", ns, p.Name, "-q"); len(lines) < 3 || !strings.HasPrefix(lines[0], "tick ") {
		t.Errorf("kubectl attach streamed %q", lines)
	}
}

// exitedWith reports whether kubectl exited with code.
func exitedWith(err error, code int) bool {
	var ee *exec.ExitError
	return errors.As(err, &ee) && ee.ExitCode() == code
}

// exitedWithCode reports whether an executor's session ended with the
// command's exit code.
func exitedWithCode(err error, code int) bool {
	var ee utilexec.CodeExitError
	return errors.As(err, &ee) && ee.Code == code
}
