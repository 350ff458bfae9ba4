package cluster

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"
)

// TestKubectlPatchResize: `kubectl patch pod --subresource resize` changes
// a pod's container resources (pods/resize), and a change other than cpu
// or memory is refused with the API server's message, with the installed
// kubectl.
func TestKubectlPatchResize(t *testing.T) {
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		t.Skip("kubectl not on PATH (e2e/kubectl builds one; this test uses the installed one)")
	}
	ctx, cancel := context.WithCancel(context.Background())
	// No node: the pod stays Pending (a pod with running containers is
	// resized only once its node reports their resources, which is the
	// kubelet's part).
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	defer cancel()
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping the cluster: %v", err)
		}
	}()

	run := func(stdin string, args ...string) (string, string, error) {
		cctx, ccancel := context.WithTimeout(ctx, 90*time.Second)
		defer ccancel()
		cmd := exec.CommandContext(cctx, kubectl, append([]string{"--kubeconfig", c.AdminKubeconfig}, args...)...)
		var stdout, stderr strings.Builder
		cmd.Stdin, cmd.Stdout, cmd.Stderr = strings.NewReader(stdin), &stdout, &stderr
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
	must(`{"apiVersion":"v1","kind":"Pod","metadata":{"name":"web"},"spec":{"containers":[{"name":"c","image":"busybox",`+
		`"resources":{"requests":{"cpu":"100m","memory":"64Mi"},"limits":{"cpu":"500m","memory":"128Mi"}}}]}}`, "apply", "-f", "-")

	patch := `{"spec":{"containers":[{"name":"c","resources":{"requests":{"cpu":"200m"}}}]}}`
	out, errOut, err := run("", "patch", "pod", "web", "--subresource", "resize", "--patch", patch)
	if err != nil && strings.Contains(errOut, "subresource") && !strings.Contains(errOut, "Forbidden") {
		t.Skipf("this kubectl does not patch pods/resize: %s", errOut)
	}
	if err != nil || !strings.Contains(out, "pod/web patched") {
		t.Fatalf("kubectl patch --subresource resize: %v %q %q", err, out, errOut)
	}
	if got := must("", "get", "pod", "web", "-o", "jsonpath={.spec.containers[0].resources.requests.cpu} {.metadata.generation}"); got != "200m 2" {
		t.Errorf("after the resize: requests.cpu and generation %q, want \"200m 2\"", got)
	}
	_, errOut, err = run("", "patch", "pod", "web", "--subresource", "resize", "--patch",
		`{"spec":{"containers":[{"name":"c","resources":{"requests":{"ephemeral-storage":"1Gi"}}}]}}`)
	if err == nil || !strings.Contains(errOut, "spec: Forbidden: only cpu and memory resources are mutable") {
		t.Errorf("kubectl patch of ephemeral-storage: %v %q", err, errOut)
	}
}
