package main

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/bench"
)

// TestBenchProgressPlainLines: where stderr is not a terminal (a CI log)
// progress comes as plain lines, the first snapshot and then one every
// 10 s, without the terminal's carriage returns and erase-line escapes.
// Before, every one-second snapshot was written as "\r\033[K..." and a CI
// log got one long line of escape codes.
func TestBenchProgressPlainLines(t *testing.T) {
	var out bytes.Buffer
	clock := time.Unix(0, 0)
	p := newProgressLine(&out)
	p.now = func() time.Time { return clock }
	for i := 0; i <= 25; i++ {
		p.print(bench.Progress{Workload: "startup", Phase: "create pods", Done: i, Total: 25, Rate: 1})
		clock = clock.Add(time.Second)
	}
	p.end()
	p.print(bench.Progress{Workload: "checkers", Phase: "porcupine", Done: 0, Total: 2})
	p.end()
	want := "startup | create pods | 0/25 | 1/s\n" +
		"startup | create pods | 10/25 | 1/s\n" +
		"startup | create pods | 20/25 | 1/s\n" +
		"checkers | porcupine | 0/2 | 0/s\n"
	if out.String() != want {
		t.Errorf("progress on a non-terminal:\n%q\nwant\n%q", out.String(), want)
	}
}

// TestBenchProgressTerminal: on a terminal the status line is rewritten
// in place each time, and end moves past it.
func TestBenchProgressTerminal(t *testing.T) {
	var out bytes.Buffer
	p := &progressLine{w: &out, terminal: true, now: time.Now}
	p.print(bench.Progress{Workload: "startup", Phase: "settle"})
	p.print(bench.Progress{Workload: "startup", Phase: "nodes ready", Done: 1, Total: 2})
	p.end()
	p.end()
	want := "\r\033[Kstartup | settle | 0/0 | 0/s\r\033[Kstartup | nodes ready | 1/2 | 0/s\n"
	if out.String() != want {
		t.Errorf("progress on a terminal: %q, want %q", out.String(), want)
	}
	if strings.Count(out.String(), "\n") != 1 {
		t.Errorf("end wrote more than one newline")
	}
}
