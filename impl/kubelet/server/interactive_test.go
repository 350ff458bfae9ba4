package server_test

import (
	"context"
	"errors"
	"io"
	"net/url"
	goruntime "runtime"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
	"github.com/kubeproof/kubeproof/impl/kubelet/server"
	"github.com/kubeproof/kubeproof/impl/kubelet/server/streamtest"
)

var _ server.DirectStreamingRuntime = (*sim.Runtime)(nil)

// streamQuery is the query of an interactive exec (cmd set) or attach.
func streamQuery(path string, flags string, cmd ...string) string {
	q := url.Values{"command": cmd}
	for _, f := range strings.Split(flags, ",") {
		q.Set(f, "1")
	}
	return path + "?" + q.Encode()
}

// exitCode is the command's exit code from an executor's error (0 for
// nil); other errors fail the test.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	var ee exec.CodeExitError
	switch {
	case err == nil:
		return 0
	case errors.As(err, &ee):
		return ee.Code
	}
	t.Fatalf("session failed: %v", err)
	return -1
}

// Stdin round trips over both transports: stdin's EOF reaches the
// program (the v5 close signal over WebSocket, the stream's half-close
// over SPDY), and the exit code comes back in the status.
func TestExecWithStdin(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", nil)
	for _, tc := range []struct {
		name     string
		cmd      []string
		stdin    string
		stdout   string
		stderr   string
		exitCode int
	}{
		{"cat echoes stdin until EOF", []string{"cat"}, "hello\nworld\n", "hello\nworld\n", "", 0},
		{"cat of empty stdin", []string{"cat"}, "", "", "", 0},
		{"shell runs lines until exit", []string{"sh"}, "echo one\necho two > /f\ncat /f\nexit 4\necho never\n", "one\ntwo\n", "", 4},
		{"shell ends at EOF with the last status", []string{"/bin/sh"}, "echo hi\nfalse\n", "hi\n", "", 1},
		{"shell errors on stderr", []string{"sh"}, "nope\n", "", "sh: nope: not found\n", 127},
		{"stty without a tty", []string{"stty", "size"}, "", "", "stty: standard input: Not a tty\n", 1},
		{"non-interactive commands ignore stdin", []string{"echo", "hi"}, "ignored\n", "hi\n", "", 0},
	} {
		for transport, ex := range executors(t, e, streamQuery("/exec/default/web/app", "stdin,stdout,stderr", tc.cmd...)) {
			t.Run(tc.name+"/"+transport, func(t *testing.T) {
				var stdout, stderr strings.Builder
				err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdin: strings.NewReader(tc.stdin), Stdout: &stdout, Stderr: &stderr})
				if code := exitCode(t, err); code != tc.exitCode || stdout.String() != tc.stdout || stderr.String() != tc.stderr {
					t.Errorf("exec %v: code %d stdout %q stderr %q; want %d %q %q", tc.cmd, code, stdout.String(), stderr.String(), tc.exitCode, tc.stdout, tc.stderr)
				}
			})
		}
	}
}

// An interactive shell on a TTY: prompt and echo, "\r\n" line ends, and
// the terminal size follows the client's resize events.
func TestExecTTYAndResize(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", nil)
	for transport, ex := range executors(t, e, streamQuery("/exec/default/web/app", "stdin,stdout,tty", "sh")) {
		t.Run(transport, func(t *testing.T) {
			tty := streamtest.StartTTY(e.ctx, ex, remotecommand.TerminalSize{Width: 80, Height: 24})
			// The size and the input travel on different streams: ask
			// until the shell has seen the size.
			e.eventually(func() bool {
				tty.Type("stty size")
				return strings.Contains(tty.Stdout.String(), "/ # stty size\r\n24 80\r\n")
			}, "stty size 24 80 over %s", transport)
			tty.Sizes <- remotecommand.TerminalSize{Width: 132, Height: 50}
			e.eventually(func() bool {
				tty.Type("stty size")
				return strings.Contains(tty.Stdout.String(), "50 132\r\n")
			}, "stty size after a resize")
			tty.Type("echo a b\nexit 2")
			if code := exitCode(t, <-tty.Done); code != 2 {
				t.Errorf("exit code %d, want 2", code)
			}
			tty.Close()
			if out := tty.Stdout.String(); !strings.Contains(out, "/ # echo a b\r\na b\r\n/ # exit 2\r\n") {
				t.Errorf("terminal output %q", out)
			}
		})
	}
}

// Attach with stdin: what the client sends reaches the main process (which
// echoes it, as `cat` would), only output written after the attach is
// streamed, and the session ends cleanly when the container stops.
func TestAttach(t *testing.T) {
	for _, transport := range []string{"spdy", "websocket"} {
		t.Run(transport, func(t *testing.T) {
			e := newEnv(t, "node-a")
			e.runStdinPodOn("node-a", "web", map[string]string{sim.AnnotationLogs: "before-attach"})
			ex := executors(t, e, streamQuery("/attach/default/web/app", "stdin,stdout,stderr"))[transport]
			stdinR, stdinW := io.Pipe()
			defer stdinW.Close()
			var stdout streamtest.Buffer
			done := streamtest.Start(e.ctx, ex, remotecommand.StreamOptions{Stdin: stdinR, Stdout: &stdout, Stderr: io.Discard})
			if _, err := io.WriteString(stdinW, "ping\n"); err != nil {
				t.Fatal(err)
			}
			e.eventually(func() bool { return stdout.String() == "ping\n" }, "the echoed line, got %q", stdout.String())
			// A second, output-only attach sees what the first one sends.
			watcher := executors(t, e, streamQuery("/attach/default/web/app", "stdout"))[transport]
			var watched streamtest.Buffer
			wdone := streamtest.Start(e.ctx, watcher, remotecommand.StreamOptions{Stdout: &watched})
			e.eventually(func() bool {
				_, _ = io.WriteString(stdinW, "pong\n")
				return strings.Contains(watched.String(), "pong\n")
			}, "output seen by a second attach")
			if err := e.client.CoreV1().Pods("default").Delete(e.ctx, "web", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			for _, ch := range []<-chan error{done, wdone} {
				if err := <-ch; err != nil {
					t.Fatalf("attach ended with %v", err)
				}
			}
			if strings.Contains(stdout.String(), "before-attach") {
				t.Errorf("output from before the attach was replayed: %q", stdout.String())
			}
		})
	}
}

func TestAttachRefusals(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", nil)
	for name, tc := range map[string]struct{ path, want string }{
		"stdin without stdin: true": {"/attach/default/web/app?stdout=1&stdin=1", "the container does not accept stdin"},
		"no stream":                 {"/attach/default/web/app?tty=1", "at least 1 of stdin, stdout, stderr"},
		"true is not 1":             {"/attach/default/web/app?stdout=true&stdin=TRUE", "at least 1 of stdin, stdout, stderr"},
		"unknown container":         {"/attach/default/web/nope?stdout=1", `container "nope" not found in pod "web"`},
		"unknown pod":               {"/attach/default/gone/app?stdout=1", `pod "gone" does not exist`},
	} {
		for transport, ex := range executors(t, e, tc.path) {
			err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdin: strings.NewReader(""), Stdout: &streamtest.Buffer{}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s over %s: %v, want %q", name, transport, err, tc.want)
			}
		}
	}
}

// The exec and attach sessions leave no goroutine behind when the client
// goes away mid-session (newEnv's cleanup counts them).
func TestExecClientLeavesMidSession(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", nil)
	for transport, ex := range executors(t, e, streamQuery("/exec/default/web/app", "stdin,stdout", "cat")) {
		e.echoThenLeave(ex, "x", "cat over "+transport)
	}
}

// An attached client that goes away ends the session at once, not when
// the container stops: its goroutines are gone while the pod still runs.
func TestAttachEndsWhenTheClientLeaves(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runStdinPodOn("node-a", "web", nil)
	for transport, ex := range executors(t, e, streamQuery("/attach/default/web/app", "stdin,stdout")) {
		e.echoThenLeave(ex, "x", "attach over "+transport)
	}
	e.eventually(func() bool {
		buf := make([]byte, 1<<20)
		return !strings.Contains(string(buf[:goruntime.Stack(buf, true)]), "sim.(*Runtime).Attach")
	}, "the attach sessions to end")
	if !e.kubelets["node-a"].ContainerRunning(e.ctx, "default", "web", "app") {
		t.Fatal("the container stopped")
	}
}

// echoThenLeave opens a stdin/stdout session on ex whose process echoes
// its input (cat, or a stdin container's main process), sends line until
// it comes back, then leaves: the client's context is cancelled and the
// test waits for the session to end. what names the session in a failure.
func (e *env) echoThenLeave(ex remotecommand.Executor, line, what string) {
	e.t.Helper()
	ctx, cancel := context.WithCancel(e.ctx)
	stdinR, stdinW := io.Pipe()
	var stdout streamtest.Buffer
	done := streamtest.Start(ctx, ex, remotecommand.StreamOptions{Stdin: stdinR, Stdout: &stdout})
	e.eventually(func() bool {
		_, _ = io.WriteString(stdinW, line+"\n")
		return strings.Contains(stdout.String(), line+"\n")
	}, "%s", what)
	cancel()
	<-done
	_ = stdinW.Close()
}
