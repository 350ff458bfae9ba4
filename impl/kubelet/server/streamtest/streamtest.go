// Package streamtest holds what tests of exec, attach and port-forward
// sessions share: both client-go executors, a buffer a session may write
// while the test reads it, a terminal size queue fed from the test, and
// starting a session (or a TTY session) in the background. The kubelet API, the API server's proxy, the simulated
// runtime and the end-to-end tests use it.
package streamtest

import (
	"bytes"
	"context"
	"io"
	"net/url"
	"sync"
	"testing"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
)

// Buffer collects a session's or a process's output; it is safe for the
// writer goroutine and the test reading it at the same time.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *Buffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

// Close does nothing: it lets a Buffer stand where a runtime takes an
// io.WriteCloser.
func (b *Buffer) Close() error { return nil }

// String is everything written so far.
func (b *Buffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// SizeQueue hands client-go the terminal sizes sent on it; closing it
// ends the resize stream.
type SizeQueue chan remotecommand.TerminalSize

// Next is the next size sent, or nil once the queue is closed.
func (q SizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q
	if !ok {
		return nil
	}
	return &s
}

// Executors are the two client-go executors kubectl chooses between for
// the exec or attach at rawURL, by transport: "spdy" (a POST upgraded to
// SPDY) and "websocket" (a GET upgraded to WebSocket).
func Executors(t testing.TB, cfg *rest.Config, rawURL string) map[string]remotecommand.Executor {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	spdyExec, err := remotecommand.NewSPDYExecutor(cfg, "POST", u)
	if err != nil {
		t.Fatal(err)
	}
	wsExec, err := remotecommand.NewWebSocketExecutor(cfg, "GET", rawURL)
	if err != nil {
		t.Fatal(err)
	}
	return map[string]remotecommand.Executor{"spdy": spdyExec, "websocket": wsExec}
}

// Start runs ex's session in its own goroutine; the session's result
// arrives on the returned channel.
func Start(ctx context.Context, ex remotecommand.Executor, opts remotecommand.StreamOptions) <-chan error {
	done := make(chan error, 1)
	go func() { done <- ex.StreamWithContext(ctx, opts) }()
	return done
}

// TTY is an interactive session on a terminal: the test writes the
// keyboard to Stdin, reads the screen from Stdout and resizes through
// Sizes.
type TTY struct {
	Stdin  *io.PipeWriter
	Stdout *Buffer
	Sizes  SizeQueue
	Done   <-chan error // the session's result
}

// StartTTY starts a TTY session on ex whose terminal is size at first.
func StartTTY(ctx context.Context, ex remotecommand.Executor, size remotecommand.TerminalSize) *TTY {
	stdinR, stdinW := io.Pipe()
	s := &TTY{Stdin: stdinW, Stdout: &Buffer{}, Sizes: make(SizeQueue, 4)}
	s.Sizes <- size
	s.Done = Start(ctx, ex, remotecommand.StreamOptions{Stdin: stdinR, Stdout: s.Stdout, Tty: true, TerminalSizeQueue: s.Sizes})
	return s
}

// Type writes line and a newline to the terminal, ignoring a session
// that has already ended (the caller checks its result).
func (s *TTY) Type(line string) { _, _ = io.WriteString(s.Stdin, line+"\n") }

// Close ends the resize stream and the keyboard once the session is over.
func (s *TTY) Close() {
	close(s.Sizes)
	_ = s.Stdin.Close()
}
