package cri

import (
	"strings"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

func TestParseLogs(t *testing.T) {
	in := "2026-01-01T00:00:01.5Z stdout F one\n" +
		"2026-01-01T00:00:02Z stderr P tw\n" +
		"2026-01-01T00:00:02.1Z stderr F o\n" +
		"2026-01-01T00:00:03Z stdout F \n"
	lines, err := ParseLogs(strings.NewReader(in), runtime.LogOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(lines) != 3 || lines[0].Text != "one" || lines[1].Text != "two" || lines[1].Stream != "stderr" || lines[2].Text != "" {
		t.Fatalf("%+v", lines)
	}
	since := time.Date(2026, 1, 1, 0, 0, 2, 0, time.UTC)
	if lines, _ = ParseLogs(strings.NewReader(in), runtime.LogOptions{Since: since, TailLines: 1}); len(lines) != 1 || lines[0].Text != "" {
		t.Fatalf("since+tail: %+v", lines)
	}
	if _, err := ParseLogs(strings.NewReader("garbage\n"), runtime.LogOptions{}); err == nil {
		t.Fatal("malformed line accepted")
	}
	l := runtime.LogLine{Time: since, Stream: "stdout", Text: "x y"}
	if got, _ := ParseLogs(strings.NewReader(FormatLogLine(l)), runtime.LogOptions{}); len(got) != 1 || got[0] != l {
		t.Fatalf("round trip: %+v", got)
	}
}
