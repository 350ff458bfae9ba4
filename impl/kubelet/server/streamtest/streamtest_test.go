package streamtest

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"

	"k8s.io/client-go/tools/remotecommand"
)

func TestSizeQueueHandsOutSizesInOrderThenEnds(t *testing.T) {
	q := make(SizeQueue, 2)
	q <- remotecommand.TerminalSize{Width: 80, Height: 24}
	q <- remotecommand.TerminalSize{Width: 132, Height: 50}
	close(q)
	for _, want := range []remotecommand.TerminalSize{{Width: 80, Height: 24}, {Width: 132, Height: 50}} {
		if got := q.Next(); got == nil || *got != want {
			t.Fatalf("Next = %v, want %v", got, want)
		}
	}
	if got := q.Next(); got != nil {
		t.Errorf("Next after close = %v, want nil", got)
	}
}

func TestBufferKeepsEveryConcurrentWrite(t *testing.T) {
	var b Buffer
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 100 {
				_, _ = b.Write([]byte("x"))
				_ = b.String()
			}
		})
	}
	wg.Wait()
	if got := b.String(); got != strings.Repeat("x", 800) {
		t.Errorf("%d bytes written, want 800", len(got))
	}
}

// scriptedExecutor answers a session by reading its stdin to the end and
// writing it back, then ends with err.
type scriptedExecutor struct{ err error }

func (s scriptedExecutor) Stream(opts remotecommand.StreamOptions) error {
	return s.StreamWithContext(context.Background(), opts)
}

func (s scriptedExecutor) StreamWithContext(_ context.Context, opts remotecommand.StreamOptions) error {
	in, _ := io.ReadAll(opts.Stdin)
	_, _ = opts.Stdout.Write(in)
	if !opts.Tty || opts.TerminalSizeQueue == nil {
		return errors.New("not a tty session")
	}
	if size := opts.TerminalSizeQueue.Next(); size == nil || size.Width != 100 {
		return errors.New("no initial size")
	}
	return s.err
}

func TestStartTTYRunsTheSessionAndReportsItsEnd(t *testing.T) {
	ended := errors.New("exit 3")
	tty := StartTTY(context.Background(), scriptedExecutor{err: ended}, remotecommand.TerminalSize{Width: 100, Height: 30})
	tty.Type("stty size")
	_ = tty.Stdin.Close()
	if err := <-tty.Done; !errors.Is(err, ended) {
		t.Fatalf("session ended with %v, want %v", err, ended)
	}
	tty.Close()
	if got := tty.Stdout.String(); got != "stty size\n" {
		t.Errorf("output %q", got)
	}
}
