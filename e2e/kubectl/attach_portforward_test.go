package kubectl

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/kubelet/server/streamtest"
)

// TestAttachAndPortForward starts a `kubeproof up` with the whole pipeline
// and one simulated node, and checks `kubectl attach` and `kubectl
// port-forward` go through the API server's pods/attach and
// pods/portforward to the kubelet API.
func TestAttachAndPortForward(t *testing.T) {
	t.Parallel()
	p, err := startUpWithNodes(filepath.Join(scratch, "data-attach"), 1)
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
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		_, _, err := p.kubectl(ctx, "", nil, "get", "node", "node-1")
		cancel()
		if err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("node-1 was not registered within 1m")
		}
	}
	must("wait", "--for=condition=Ready", "node/node-1", "--timeout=60s")

	t.Run("attach", func(t *testing.T) {
		// A simulated container writes its output when it starts and
		// nothing after, so an attach streams nothing; this one exits 20s
		// after its start, which ends the attach with success (kubectl exits
		// 0). An attach that could not connect, or came after the exit
		// (kubectl refuses completed pods), fails instead.
		must("run", "once", "--image=busybox", "--restart=Never", "--annotations=sim.kubeproof.io/exit-after=20s")
		must("wait", "--for=condition=Ready", "pod/once", "--timeout=60s")
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		out, errOut, err := p.kubectl(ctx, "", nil, "attach", "once")
		if err != nil {
			t.Fatalf("kubectl attach once: %v\nstdout: %s\nstderr: %s", err, out, errOut)
		}
		ended := time.Now()
		// The attach lasted until the container's exit, 20s after its start.
		started, err := time.Parse(time.RFC3339, must("get", "pod", "once", "-o", "jsonpath={.status.containerStatuses[0].state.*.startedAt}"))
		if err != nil {
			t.Fatalf("container start time: %v", err)
		}
		if ended.Before(started.Add(19 * time.Second)) {
			t.Errorf("kubectl attach ended at %v, before the container's exit (started %v, exits 20s later)", ended, started)
		}
		must("wait", "--for=jsonpath={.status.phase}=Succeeded", "pod/once", "--timeout=60s")
		if out != "" {
			t.Errorf("kubectl attach printed %q; the container wrote nothing after the attach", out)
		}
	})

	t.Run("port-forward", func(t *testing.T) {
		must("run", "web", "--image=nginx", "--annotations=sim.kubeproof.io/http-status=203")
		must("wait", "--for=condition=Ready", "pod/web", "--timeout=60s")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		cmd := exec.CommandContext(ctx, kubectlPath, "port-forward", "pod/web", ":80", "--address=127.0.0.1")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+p.kubeconfig, "KUBECACHEDIR="+filepath.Join(scratch, "cache"))
		stdout, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		var errOut streamtest.Buffer
		cmd.Stderr = &errOut
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		exited := make(chan struct{}) // closed when kubectl has exited
		defer func() {
			cancel()
			<-exited
		}()
		// "Forwarding from 127.0.0.1:PORT -> 80" once it listens.
		localPort := make(chan string, 1)
		go func() {
			re := regexp.MustCompile(`^Forwarding from 127\.0\.0\.1:(\d+) -> 80$`)
			sc := bufio.NewScanner(stdout)
			for sc.Scan() {
				if m := re.FindStringSubmatch(sc.Text()); m != nil {
					select {
					case localPort <- m[1]:
					default:
					}
				}
			}
			_ = cmd.Wait()
			close(exited)
		}()
		var port string
		select {
		case port = <-localPort:
		case <-exited:
			t.Fatalf("kubectl port-forward exited before forwarding; stderr: %s", errOut.String())
		case <-time.After(time.Minute):
			t.Fatalf("kubectl port-forward did not start forwarding within 1m; stderr: %s", errOut.String())
		}
		client := &http.Client{Timeout: 30 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		for i := range 2 { // each GET is a new forwarded connection
			resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%s/try/%d", port, i))
			if err != nil {
				t.Fatalf("GET through kubectl port-forward: %v; stderr: %s", err, errOut.String())
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			want := fmt.Sprintf("kubeproof simulated container web on port 80: GET /try/%d\n", i)
			if resp.StatusCode != 203 || string(body) != want {
				t.Errorf("GET through kubectl port-forward = %d %q, want 203 %q", resp.StatusCode, body, want)
			}
		}
		if strings.Contains(errOut.String(), "error") {
			t.Errorf("kubectl port-forward reported: %s", errOut.String())
		}
	})
}
