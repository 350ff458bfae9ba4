package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"golang.org/x/term"

	"github.com/kubeproof/kubeproof/bench"
)

// plainProgressInterval is how often a progress line is written where it
// cannot be rewritten in place (stderr not a terminal: a CI log, a file).
const plainProgressInterval = 10 * time.Second

// progressLine shows a workload's progress snapshots on w: on a terminal
// as one status line rewritten in place each time; elsewhere as plain
// lines, the first snapshot of each workload and then at most one every
// plainProgressInterval, so a log holds no escape codes and no wall of
// one-second updates.
type progressLine struct {
	w        io.Writer
	terminal bool
	now      func() time.Time

	mu           sync.Mutex
	printed      bool // a line was written since the last end
	lastWorkload string
	lastAt       time.Time
}

// newProgressLine is a progressLine on w, rewriting in place when w is a
// terminal.
func newProgressLine(w io.Writer) *progressLine {
	return &progressLine{w: w, terminal: isTerminal(w), now: time.Now}
}

// isTerminal reports whether w is a file open on a terminal.
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}

// print shows one snapshot (the workloads' Progress callback).
func (p *progressLine) print(pr bench.Progress) {
	p.mu.Lock()
	defer p.mu.Unlock()
	text := fmt.Sprintf("%s | %s | %d/%d | %.0f/s", pr.Workload, pr.Phase, pr.Done, pr.Total, pr.Rate)
	if p.terminal {
		fmt.Fprint(p.w, "\r\033[K"+text)
		p.printed = true
		return
	}
	now := p.now()
	if p.printed && pr.Workload == p.lastWorkload && now.Sub(p.lastAt) < plainProgressInterval {
		return
	}
	fmt.Fprintln(p.w, text)
	p.printed, p.lastWorkload, p.lastAt = true, pr.Workload, now
}

// end finishes the status line after a workload: a terminal's cursor
// moves past it; plain lines are finished already.
func (p *progressLine) end() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.terminal && p.printed {
		fmt.Fprintln(p.w)
	}
	p.printed, p.lastWorkload = false, ""
}
