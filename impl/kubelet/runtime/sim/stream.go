package sim

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/util/exec"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// This file is the simulation's interactive exec and attach: the kubelet
// API serves the remote command protocol and hands the streams here (the
// shape of upstream's streaming.Runtime).
//
// Exec runs a simulated program with the client's stdin:
//   - sh, bash (without -c): a shell reading command lines from stdin and
//     running each as `sh -c` would; `exit N` ends it with N, EOF with the
//     last command's status; with a TTY it prints a "/ # " prompt.
//   - cat (without files): copies stdin to stdout until EOF.
//   - stty size: the terminal's "rows columns" (after the latest resize);
//     without a TTY it fails as stty does.
//   - anything else runs as ExecSync would, ignoring stdin.
//
// With a TTY the terminal's line discipline is simulated the way a user
// sees it: input is echoed, output lines end in "\r\n", and stderr is
// merged into stdout.
//
// Attach connects to the container's main process: what it writes from
// the moment of attaching goes to the client (output written before is
// `logs`); with stdin, every line the client sends is echoed into the
// container's output, as a main process running `cat` would; when the
// container was created with stdinOnce, the end of that stdin ends the
// main process (exit 0), as `cat` at EOF.

// attachPollInterval is how often an attached session looks for new
// output and for the container's exit.
const attachPollInterval = 20 * time.Millisecond

// Exec implements the kubelet API's DirectStreamingRuntime.
func (r *Runtime) Exec(ctx context.Context, id string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	r.mu.Lock()
	_, err := r.runningContainer(id)
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("exec in container %s: %w", id, err)
	}
	term := newTerminal(stdout, stderr, tty, resize)
	var code int32
	switch program := programName(cmd); {
	case (program == "sh" || program == "bash") && !hasFlag(cmd, "-c"):
		code = r.interactiveShell(ctx, id, term, stdin)
		r.recordExec(id, cmd, code)
	case program == "cat" && len(cmd) == 1:
		code = term.cat(ctx, stdin)
		r.recordExec(id, cmd, code)
	case program == "stty" && len(cmd) == 2 && cmd[1] == "size":
		code = term.sttySize()
		r.recordExec(id, cmd, code)
	default: // ExecSync records it
		out, errOut, c, err := r.ExecSync(ctx, id, cmd, 0)
		if err != nil {
			return err
		}
		_ = term.write(string(out), false)
		_ = term.write(string(errOut), true)
		code = c
	}
	if code != 0 {
		return exec.CodeExitError{Err: fmt.Errorf("command %v exited with %d", cmd, code), Code: int(code)}
	}
	return nil
}

// recordExec adds an interactive exec to the log Execs returns.
func (r *Runtime) recordExec(id string, cmd []string, code int32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.execLog = appendLatest(r.execLog, Exec{ContainerID: id, Cmd: cmd, ExitCode: code}, maxExecLog)
}

func programName(cmd []string) string {
	if len(cmd) == 0 {
		return ""
	}
	name := cmd[0]
	if i := strings.LastIndex(name, "/"); i >= 0 {
		name = name[i+1:]
	}
	return name
}

func hasFlag(cmd []string, flag string) bool {
	for _, a := range cmd[1:] {
		if a == flag {
			return true
		}
	}
	return false
}

// interactiveShell runs command lines from stdin until exit or EOF.
func (r *Runtime) interactiveShell(ctx context.Context, id string, term *terminal, stdin io.Reader) int32 {
	lines, stop := readLines(stdin)
	defer stop()
	var code int32
	for {
		if term.tty {
			_ = term.write("/ # ", false)
		}
		line, ok := term.next(ctx, lines)
		if !ok {
			return code
		}
		term.echo(line)
		fields := strings.Fields(line)
		switch {
		case len(fields) == 0:
			continue
		case fields[0] == "exit":
			_, errOut, c := runCommand(&shell{}, fields)
			_ = term.write(errOut, true)
			return c
		case len(fields) == 2 && fields[0] == "stty" && fields[1] == "size":
			code = term.sttySize()
			continue
		}
		out, errOut, c, err := r.runScriptIn(id, line)
		if err != nil {
			_ = term.write(fmt.Sprintf("sh: %v\n", err), true)
			return 137 // the container went away under the shell
		}
		if term.write(out, false) != nil || term.write(errOut, true) != nil {
			return c // the client went away
		}
		code = c
	}
}

// runScriptIn runs one shell line against the container's files.
func (r *Runtime) runScriptIn(id, script string) (string, string, int32, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, err := r.runningContainer(id)
	if err != nil {
		return "", "", 0, err
	}
	sh, done := c.shell()
	out, errOut, code := runScript(sh, script)
	done()
	return out, errOut, code, nil
}

// readLines delivers the lines read from r (a final unterminated one
// too) on a channel closed at EOF or a read error. stop lets the reader
// goroutine end when nobody reads any more; a Read it is blocked in ends
// when the session's connection closes.
func readLines(r io.Reader) (<-chan string, func()) {
	ch := make(chan string)
	done := make(chan struct{})
	if r == nil {
		close(ch)
		return ch, func() { close(done) }
	}
	go func() {
		defer close(ch)
		br := bufio.NewReader(r)
		for {
			line, err := br.ReadString('\n')
			if line != "" {
				select {
				case ch <- strings.TrimRight(line, "\r\n"):
				case <-done:
					return
				}
			}
			if err != nil {
				return
			}
		}
	}()
	return ch, func() { close(done) }
}

// terminal is an exec or attach session's view of the client: its output
// streams and, with a TTY, its size.
type terminal struct {
	stdout, stderr io.Writer
	tty            bool
	resize         <-chan remotecommand.TerminalSize
	size           *remotecommand.TerminalSize
}

func newTerminal(stdout, stderr io.Writer, tty bool, resize <-chan remotecommand.TerminalSize) *terminal {
	t := &terminal{stdout: stdout, stderr: stderr, tty: tty, resize: resize}
	if tty {
		t.stderr = stdout
	}
	return t
}

// write sends output to stdout or stderr (dropped if that stream was not
// requested), with "\r\n" line ends on a TTY.
// An error means the client went away.
func (t *terminal) write(s string, toStderr bool) error {
	w := t.stdout
	if toStderr {
		w = t.stderr
	}
	if s == "" || w == nil {
		return nil
	}
	if t.tty {
		s = strings.ReplaceAll(s, "\n", "\r\n")
	}
	_, err := io.WriteString(w, s)
	return err
}

// echo is the TTY's echo of an input line.
func (t *terminal) echo(line string) {
	if t.tty {
		_ = t.write(line+"\n", false)
	}
}

// next waits for the next input line, applying resizes meanwhile; false
// at EOF or when ctx ends.
func (t *terminal) next(ctx context.Context, lines <-chan string) (string, bool) {
	for {
		select {
		case l, ok := <-lines:
			return l, ok
		case s, ok := <-t.resize:
			if !ok {
				t.resize = nil
				continue
			}
			t.size = &s
		case <-ctx.Done():
			return "", false
		}
	}
}

// drainResizes applies the resizes already sent.
func (t *terminal) drainResizes() {
	for {
		select {
		case s, ok := <-t.resize:
			if !ok {
				t.resize = nil
				return
			}
			t.size = &s
		default:
			return
		}
	}
}

func (t *terminal) sttySize() int32 {
	if !t.tty {
		_ = t.write("stty: standard input: Not a tty\n", true)
		return 1
	}
	t.drainResizes()
	rows, cols := 0, 0
	if t.size != nil {
		rows, cols = int(t.size.Height), int(t.size.Width)
	}
	_ = t.write(fmt.Sprintf("%d %d\n", rows, cols), false)
	return 0
}

// cat copies stdin to stdout line by line until EOF.
func (t *terminal) cat(ctx context.Context, stdin io.Reader) int32 {
	lines, stop := readLines(stdin)
	defer stop()
	for {
		line, ok := t.next(ctx, lines)
		if !ok {
			return 0
		}
		t.echo(line)
		if t.write(line+"\n", false) != nil {
			return 0 // the client went away
		}
	}
}

// Attach implements the kubelet API's DirectStreamingRuntime.
func (r *Runtime) Attach(ctx context.Context, id string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error {
	r.mu.Lock()
	c, err := r.runningContainer(id)
	var sent int
	if err == nil {
		sent = len(c.output())
	}
	r.mu.Unlock()
	if err != nil {
		return fmt.Errorf("attach to container %s: %w", id, err)
	}
	term := newTerminal(stdout, stderr, tty, resize)
	lines, stop := readLines(stdin)
	defer stop()
	ticker := time.NewTicker(attachPollInterval)
	defer ticker.Stop()
	for {
		out, running := r.outputSince(id, &sent)
		for _, l := range out {
			if term.write(l.Text+"\n", l.Stream == "stderr") != nil {
				return nil // the client went away
			}
		}
		if !running {
			return nil
		}
		select {
		case l, ok := <-lines:
			if !ok {
				lines = nil // stdin closed: keep streaming output
				if stdin != nil {
					r.stdinClosed(id)
				}
				continue
			}
			term.echo(l)
			r.appendOutput(id, l)
		case s, ok := <-term.resize:
			if !ok {
				term.resize = nil
				continue
			}
			term.size = &s
		case <-ticker.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// outputSince returns the container's output lines after the first *sent
// (advancing it) and whether the container still runs.
func (r *Runtime) outputSince(id string, sent *int) ([]runtime.LogLine, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.containerByID(id)
	if !ok {
		return nil, false
	}
	c.refresh(r.clock.Now())
	var out []runtime.LogLine
	if logs := c.output(); *sent < len(logs) {
		out = append(out, logs[*sent:]...)
		*sent = len(logs)
	}
	return out, c.state == runtimeapi.ContainerState_CONTAINER_RUNNING
}

// stdinClosed is the end of an attached stdin: a stdinOnce container's
// main process (`cat`) reads EOF and exits 0.
func (r *Runtime) stdinClosed(id string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.containerByID(id); ok && c.stdinOnce && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		r.states.changed()
		c.exit(r.clock.Now(), 0, "Completed", "")
	}
}

// appendOutput is the main process writing line to its stdout.
func (r *Runtime) appendOutput(id, line string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if c, ok := r.containerByID(id); ok && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING {
		logs := append(c.output(), runtime.LogLine{Time: r.clock.Now(), Stream: "stdout", Text: line})
		c.set().logs = logs
	}
}
