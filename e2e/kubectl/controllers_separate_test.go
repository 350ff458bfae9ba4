package kubectl

import (
	"bytes"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"
)

// controllerManagerProcess is a `kubeproof controller-manager` process.
type controllerManagerProcess struct {
	cmd  *exec.Cmd
	mu   sync.Mutex
	out  bytes.Buffer
	done chan struct{}
	err  error
}

func startControllerManager(t *testing.T, kubeconfig string, flags ...string) *controllerManagerProcess {
	t.Helper()
	c := &controllerManagerProcess{done: make(chan struct{})}
	c.cmd = exec.Command(kubeproofPath, append([]string{"controller-manager", "--kubeconfig", kubeconfig, "--secure-port", "0"}, flags...)...)
	w := &lockedWriter{mu: &c.mu, w: &c.out}
	c.cmd.Stdout, c.cmd.Stderr = w, w
	if err := c.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { c.err = c.cmd.Wait(); close(c.done) }()
	t.Cleanup(func() {
		select {
		case <-c.done:
		default:
			_ = c.cmd.Process.Kill()
			<-c.done
		}
	})
	return c
}

// stop sends SIGTERM and fails t unless the process exits 0 within a minute.
func (c *controllerManagerProcess) stop(t *testing.T) {
	t.Helper()
	if err := c.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case <-c.done:
	case <-time.After(time.Minute):
		t.Fatal("controller manager did not exit within 1m of SIGTERM")
	}
	if c.err != nil {
		c.mu.Lock()
		defer c.mu.Unlock()
		t.Fatalf("controller manager exited with %v:\n%s", c.err, c.out.String())
	}
}

// TestSeparateControllerManagers runs the controllers as their own
// processes (`kubeproof controller-manager`) against a `kubeproof up` that
// runs none: two candidates share the kube-system/kube-controller-manager
// Lease, only the holder acts, and when it stops the other takes over.
func TestSeparateControllerManagers(t *testing.T) {
	t.Parallel()
	p, err := startUpWith(filepath.Join(scratch, "data-separate-cm"), "--nodes", "2", "--no-controller-manager")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
	}()
	k := func(args ...string) string {
		t.Helper()
		return runWith(t, p, "", nil, args...)
	}
	waitNodesReady(t, p, "node-1", "node-2")
	holder := func() string {
		return k("get", "lease", "kube-controller-manager", "-n", "kube-system", "--ignore-not-found", "-o", "jsonpath={.spec.holderIdentity}")
	}
	election := []string{"--leader-elect-lease-duration=4s", "--leader-elect-renew-deadline=3s", "--leader-elect-retry-period=500ms"}

	// Without a controller manager nothing happens to a Deployment.
	k("create", "deployment", "web", "--image=nginx", "--replicas=3")
	time.Sleep(time.Second)
	if rs := k("get", "rs", "-l", "app=web", "-o", "name"); rs != "" {
		t.Fatalf("ReplicaSets without a controller manager: %s", rs)
	}

	a := startControllerManager(t, p.kubeconfig, election...)
	var first string
	eventuallyKubectl(t, "a leader", func() bool { first = holder(); return first != "" })
	b := startControllerManager(t, p.kubeconfig, election...)
	k("rollout", "status", "deployment/web", "--timeout=90s")
	// b keeps trying while a renews.
	time.Sleep(2 * time.Second)
	if h := holder(); h != first {
		t.Fatalf("lease holder changed from %q to %q while the first controller manager ran", first, h)
	}

	a.stop(t) // releases the Lease
	eventuallyKubectl(t, "the second controller manager to take over", func() bool {
		h := holder()
		return h != "" && h != first
	})
	k("scale", "deployment/web", "--replicas=5")
	k("rollout", "status", "deployment/web", "--timeout=90s")
	if got := k("get", "deployment", "web", "-o", "jsonpath={.status.availableReplicas}"); got != "5" {
		t.Fatalf("available %s after the takeover and scale to 5", got)
	}
	b.stop(t)
}
