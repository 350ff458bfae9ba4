package props

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
)

// TestTraceSteps replays the observed steps kept in testdata/trace-steps:
// each must be explained by the model, or not, as its file says. A step a
// campaign's trace validation rejected is kept here once triaged: fixed in
// the model (explained) or in the implementation (not explained: the model
// must go on rejecting what the bug did).
func TestTraceSteps(t *testing.T) {
	m, err := NewModel(nodeMaxPods)
	if err != nil {
		t.Fatal(err)
	}
	files, err := filepath.Glob(filepath.Join("testdata", "trace-steps", "*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(files) == 0 {
		t.Fatal("no trace steps in testdata/trace-steps")
	}
	for _, file := range files {
		t.Run(filepath.Base(file), func(t *testing.T) {
			b, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			var step TraceStep
			if err := json.Unmarshal(b, &step); err != nil {
				t.Fatalf("%s: %v", file, err)
			}
			from, err := m.FromSnapshot(step.From)
			if err != nil {
				t.Fatalf("from: %v", err)
			}
			to, err := m.FromSnapshot(step.To)
			if err != nil {
				t.Fatalf("to: %v", err)
			}
			v := newTraceValidator(m)
			for _, sn := range step.Earlier {
				e, err := m.FromSnapshot(sn)
				if err != nil {
					t.Fatalf("earlier: %v", err)
				}
				v.remember(e)
			}
			v.Step(from)
			v.allowed = step.Allowed
			msg := v.Step(to)
			if explained := msg == ""; explained != step.Explained {
				t.Fatalf("explained %v, the file says %v (%s)\n%s", explained, step.Explained, step.Note, msg)
			}
			t.Logf("explained %v: longest path %d actions, %d states searched", step.Explained, v.Longest, v.Explored)
		})
	}
}
