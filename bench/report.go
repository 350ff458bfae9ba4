package bench

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// Report is a results directory's results.json: the machine and every
// run's results. With repeats, each workload appears once per run, in run
// order.
type Report struct {
	Machine         Machine             `json:"machine"`
	Repeat          int                 `json:"repeat,omitempty"`
	Writes          []WriteResult       `json:"writes,omitempty"`
	Scheduling      []SchedulingResult  `json:"scheduling,omitempty"`
	Startup         []StartupResult     `json:"startup,omitempty"`
	APIServerMemory MemoryResults       `json:"apiserverMemory,omitempty"`
	NodeMemory      []NodeMemoryResult  `json:"nodeMemory,omitempty"`
	Checkers        []CheckersResult    `json:"checkers,omitempty"`
	WatchFanout     []WatchFanoutResult `json:"watchFanout,omitempty"`
	// BaselineWarnings are MachineWarnings against the baseline compared
	// with, if any.
	BaselineWarnings []string `json:"baselineWarnings,omitempty"`
}

// MemoryResults reads either one MemoryResult (results written before
// repeats existed) or a list.
type MemoryResults []MemoryResult

// UnmarshalJSON accepts an object or an array.
func (m *MemoryResults) UnmarshalJSON(data []byte) error {
	if s := strings.TrimSpace(string(data)); strings.HasPrefix(s, "{") {
		var one MemoryResult
		if err := json.Unmarshal(data, &one); err != nil {
			return err
		}
		*m = MemoryResults{one}
		return nil
	}
	var many []MemoryResult
	err := json.Unmarshal(data, &many)
	*m = many
	return err
}

// Merge appends other's results to r (the machine of the first report is
// kept).
func (r *Report) Merge(other Report) {
	if r.Machine == (Machine{}) {
		r.Machine = other.Machine
	}
	r.Repeat = max(r.Repeat, other.Repeat)
	r.Writes = append(r.Writes, other.Writes...)
	r.Scheduling = append(r.Scheduling, other.Scheduling...)
	r.Startup = append(r.Startup, other.Startup...)
	r.APIServerMemory = append(r.APIServerMemory, other.APIServerMemory...)
	r.NodeMemory = append(r.NodeMemory, other.NodeMemory...)
	r.Checkers = append(r.Checkers, other.Checkers...)
	r.WatchFanout = append(r.WatchFanout, other.WatchFanout...)
}

// LoadReport reads a results JSON file, or every *.json file of a
// directory merged into one report (a baseline directory such as
// bench/baselines/2026-11-21).
func LoadReport(path string) (Report, error) {
	st, err := os.Stat(path)
	if err != nil {
		return Report{}, fmt.Errorf("reading baseline: %w", err)
	}
	files := []string{path}
	if st.IsDir() {
		if files, err = filepath.Glob(filepath.Join(path, "*.json")); err != nil {
			return Report{}, err
		}
		if len(files) == 0 {
			return Report{}, fmt.Errorf("reading baseline: no *.json in %s", path)
		}
		sort.Strings(files)
	}
	var merged Report
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return Report{}, fmt.Errorf("reading baseline: %w", err)
		}
		var r Report
		if err := json.Unmarshal(data, &r); err != nil {
			return Report{}, fmt.Errorf("reading baseline %s: %w", f, err)
		}
		merged.Merge(r)
	}
	return merged, nil
}
