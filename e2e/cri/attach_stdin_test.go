package cri

import (
	"io"
	"net/url"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kubeproof/kubeproof/impl/kubelet/server/streamtest"
)

// TestAttachStdin: attaching to a real container's main process started
// with stdin (as `kubectl attach -i` and `kubectl run -i` do, through the
// API server's proxy to the kubelet's attach and containerd's streaming
// server), over both transports kubectl chooses between. Without a TTY,
// what the client writes reaches the process and its answer comes back;
// with stdinOnce, the client's leaving closes the process's stdin, so it
// sees EOF and ends. With a TTY, a shell on the terminal runs the typed
// line and its exit ends the session.
func TestAttachStdin(t *testing.T) {
	for _, transport := range []string{"spdy", "websocket"} {
		t.Run("stdinOnce-"+transport, func(t *testing.T) {
			ns := newNamespace(t)
			p := podSpec("once", `while read -r line; do echo "got $line"; done; echo "stdin closed"`)
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
			p.Spec.Containers[0].Stdin, p.Spec.Containers[0].StdinOnce = true, true
			createPod(t, ns, p)
			waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)

			q := url.Values{"container": {"main"}, "stdin": {"true"}, "stdout": {"true"}, "stderr": {"true"}}
			ex := streamtest.Executors(t, env.Cluster.AdminConfig, env.Cluster.URL+"/api/v1/namespaces/"+ns+"/pods/"+p.Name+"/attach?"+q.Encode())[transport]
			stdinR, stdinW := io.Pipe()
			t.Cleanup(func() { stdinW.Close() })
			out := &streamtest.Buffer{}
			done := streamtest.Start(ctxFor(t, 60*time.Second), ex, remotecommand.StreamOptions{Stdin: stdinR, Stdout: out, Stderr: out})
			if !typeUntil(t, stdinW, "hello", func() bool { return strings.Contains(out.String(), "got hello") }) {
				t.Fatalf("attach -i: no %q back from the process: %q", "got hello", out.String())
			}
			// The client leaves: with stdinOnce the process's stdin is
			// closed and it ends.
			stdinW.Close()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("attach session ended with %v", err)
				}
			case <-time.After(30 * time.Second):
				t.Fatal("attach session did not end after stdin closed")
			}
			got := waitPod(t, ns, p.Name, 60*time.Second, "Succeeded", phaseIs(v1.PodSucceeded))
			if cs := containerStatus(got, "main"); cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 0 {
				t.Errorf("container status %v, want terminated with exit code 0", containerStates(got.Status.ContainerStatuses))
			}
			if logs := mustKubectl(t, "logs", "-n", ns, p.Name); !strings.Contains(logs, "got hello\n") || !strings.HasSuffix(logs, "stdin closed\n") {
				t.Errorf("logs %q: want the echoes, then %q", logs, "stdin closed\n")
			}
		})
		t.Run("tty-"+transport, func(t *testing.T) {
			ns := newNamespace(t)
			p := podSpec("tty", "")
			p.Spec.Containers[0].Command = []string{"sh"}
			p.Spec.RestartPolicy = v1.RestartPolicyNever
			p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
			p.Spec.Containers[0].Stdin, p.Spec.Containers[0].TTY = true, true
			createPod(t, ns, p)
			waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)

			q := url.Values{"container": {"main"}, "stdin": {"true"}, "stdout": {"true"}, "tty": {"true"}}
			ex := streamtest.Executors(t, env.Cluster.AdminConfig, env.Cluster.URL+"/api/v1/namespaces/"+ns+"/pods/"+p.Name+"/attach?"+q.Encode())[transport]
			tty := streamtest.StartTTY(ctxFor(t, 60*time.Second), ex, remotecommand.TerminalSize{Width: 100, Height: 30})
			defer tty.Close()
			// The typed line echoes as typed; only the shell running it
			// prints got-42.
			if !typeUntil(t, tty.Stdin, "echo got-$((6*7))", func() bool { return strings.Contains(tty.Stdout.String(), "got-42") }) {
				t.Fatalf("attach -it: the shell did not run the typed line: %q", tty.Stdout.String())
			}
			tty.Type("exit 3")
			select {
			case <-tty.Done:
			case <-time.After(30 * time.Second):
				t.Fatal("attach -it session did not end after the shell exited")
			}
			got := waitPod(t, ns, p.Name, 60*time.Second, "Failed", phaseIs(v1.PodFailed))
			if cs := containerStatus(got, "main"); cs == nil || cs.State.Terminated == nil || cs.State.Terminated.ExitCode != 3 {
				t.Errorf("container status %v, want terminated with exit code 3", containerStates(got.Status.ContainerStatuses))
			}
		})
	}
}

// typeUntil writes line and a newline to w every 200 ms until seen
// holds, for up to 20 s, and reports whether it did. The writes are made
// in the background: a session that stopped reading its stdin blocks
// them until w is closed (the caller's clean-up), not the test.
func typeUntil(t *testing.T, w io.Writer, line string, seen func() bool) bool {
	t.Helper()
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		tick := time.NewTicker(200 * time.Millisecond)
		defer tick.Stop()
		for {
			if _, err := io.WriteString(w, line+"\n"); err != nil {
				return
			}
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	}()
	return waitUntil(20*time.Second, seen)
}
