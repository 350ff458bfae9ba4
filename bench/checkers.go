package bench

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/kubeproof/kubeproof/linearizability"
	"github.com/kubeproof/kubeproof/model"
	"github.com/kubeproof/kubeproof/model/checker"
)

// DefaultHistorySizes are the history sizes the checkers workload checks
// by default.
var DefaultHistorySizes = []int{1000, 2000, 5000, 10000, 20000}

// CheckersConfig configures the checkers workload.
type CheckersConfig struct {
	// Configs are the model-checker configurations (spec/*.cfg) to run;
	// nil: model.StandardConfigs. An empty non-nil slice runs none.
	Configs []string
	// Workers are the model checker's parallel workers (0: GOMAXPROCS).
	Workers int
	// MaxStates aborts a configuration beyond this many states (0: none).
	MaxStates int64
	// HistorySizes are the operation counts of the generated histories
	// porcupine checks; nil: DefaultHistorySizes. Empty non-nil: none.
	HistorySizes []int
	// HistoryClients and HistoryKeys shape the histories (16 and 5).
	HistoryClients, HistoryKeys int
	// CheckRepeats is how often each history is checked (default 3); the
	// median check time is reported, with the fastest and slowest.
	CheckRepeats int
	// Progress, if set, gets a live progress snapshot once a second.
	Progress func(Progress)
}

// ModelCheckResult is one configuration's model-checker run (symmetry on,
// every property of the configuration including liveness, as `kubeproof
// model check`).
type ModelCheckResult struct {
	Config          string        `json:"config"`
	Workers         int           `json:"workers"`
	Distinct        int64         `json:"distinctStates"`
	Transitions     int64         `json:"transitions"`
	Depth           int           `json:"depth"`
	Duration        time.Duration `json:"duration"`
	StatesPerSecond float64       `json:"statesPerSecond"`
	BytesPerState   float64       `json:"bytesPerState"`
}

// PorcupineResult is the check time of one generated history: the whole
// of linearizability.Check, the same checks `kubeproof check
// linearizability` runs (porcupine's per-key model plus the revision and
// read checks).
type PorcupineResult struct {
	Ops     int `json:"ops"`
	Clients int `json:"clients"`
	Keys    int `json:"keys"`
	// CheckTime is the median of Checks checks; MinCheckTime and
	// MaxCheckTime are the fastest and the slowest.
	CheckTime    time.Duration `json:"checkTime"`
	MinCheckTime time.Duration `json:"minCheckTime"`
	MaxCheckTime time.Duration `json:"maxCheckTime"`
	Checks       int           `json:"checks"`
	// OpsPerSecond is Ops divided by CheckTime.
	OpsPerSecond float64 `json:"opsPerSecond"`
}

// CheckersResult is one run of the checkers workload.
type CheckersResult struct {
	Model     []ModelCheckResult `json:"model,omitempty"`
	Porcupine []PorcupineResult  `json:"porcupine,omitempty"`
}

// RunCheckers runs the model checker on each configuration and then
// checks a generated linearizable history of each size. A property
// violation or a rejected history is an error: the numbers of a checker
// that is wrong are not worth reporting.
func RunCheckers(ctx context.Context, cfg CheckersConfig) (CheckersResult, error) {
	configs := cfg.Configs
	if configs == nil {
		configs = model.StandardConfigs
	}
	sizes := cfg.HistorySizes
	if sizes == nil {
		sizes = DefaultHistorySizes
	}
	if cfg.HistoryClients <= 0 {
		cfg.HistoryClients = 16
	}
	if cfg.CheckRepeats <= 0 {
		cfg.CheckRepeats = 3
	}
	if cfg.Workers <= 0 {
		cfg.Workers = runtime.GOMAXPROCS(0)
	}
	if cfg.HistoryKeys <= 0 {
		cfg.HistoryKeys = 5
	}
	var res CheckersResult
	line := &progressLine{workload: "checkers"}
	if cfg.Progress != nil {
		stop := line.report(ctx, cfg.Progress)
		defer stop()
	}
	for i, name := range configs {
		c, err := model.LoadConfig(name)
		if err != nil {
			return res, err
		}
		m, err := model.New(c, "")
		if err != nil {
			return res, fmt.Errorf("model %s: %w", name, err)
		}
		phase := fmt.Sprintf("model check %s (%d of %d configurations)", name, i+1, len(configs))
		done := func() int { return i }
		line.set(phase, done, len(configs))
		opts := checker.Options{Symmetry: true, Workers: cfg.Workers, MaxStates: cfg.MaxStates}
		if cfg.Progress != nil {
			// The checker's own progress lines become the phase.
			opts.Progress, opts.ProgressInterval = checkerProgress(func(text string) { line.set(phase+": "+text, done, len(configs)) }), time.Second
		}
		r, err := checker.Check(ctx, m, opts)
		if err != nil {
			return res, fmt.Errorf("model check %s: %w", name, err)
		}
		if r.Violation != nil {
			return res, fmt.Errorf("model check %s: property %s violated:\n%s", name, r.Violation.Property, checker.FormatViolation(m, r.Violation))
		}
		mr := ModelCheckResult{Config: name, Workers: cfg.Workers, Distinct: r.Distinct, Transitions: r.Transitions, Depth: r.Depth,
			Duration: r.Duration, BytesPerState: r.BytesPerState}
		if r.Duration > 0 {
			mr.StatesPerSecond = float64(r.Distinct) / r.Duration.Seconds()
		}
		res.Model = append(res.Model, mr)
	}
	for i, n := range sizes {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if n <= 0 {
			return res, errors.New("checkers: history sizes must be positive")
		}
		line.set(fmt.Sprintf("porcupine %d ops (%d of %d histories)", n, i+1, len(sizes)), func() int { return i }, len(sizes))
		h := GenerateHistory(HistoryConfig{Ops: n, Clients: cfg.HistoryClients, Keys: cfg.HistoryKeys, Seed: uint64(n)})
		times := make([]time.Duration, 0, cfg.CheckRepeats)
		for range cfg.CheckRepeats {
			v := linearizability.Check(h, linearizability.CheckOptions{PorcupineTimeout: 5 * time.Minute})
			if !v.OK() {
				return res, fmt.Errorf("checkers: the generated %d-operation history was rejected: %s", n, linearizability.Summary(h, v))
			}
			times = append(times, v.CheckTime)
		}
		slices.Sort(times)
		pr := PorcupineResult{Ops: n, Clients: cfg.HistoryClients, Keys: cfg.HistoryKeys, CheckTime: times[len(times)/2],
			MinCheckTime: times[0], MaxCheckTime: times[len(times)-1], Checks: len(times)}
		if len(times)%2 == 0 {
			pr.CheckTime = (times[len(times)/2-1] + times[len(times)/2]) / 2
		}
		if pr.CheckTime > 0 {
			pr.OpsPerSecond = float64(n) / pr.CheckTime.Seconds()
		}
		res.Porcupine = append(res.Porcupine, pr)
	}
	return res, nil
}

// checkerProgress is an io.Writer for the model checker's progress lines
// that hands each line's text to f.
type checkerProgress func(text string)

func (f checkerProgress) Write(p []byte) (int, error) {
	for _, l := range strings.Split(string(p), "\n") {
		if l = strings.TrimSpace(strings.TrimPrefix(strings.TrimSpace(l), "progress:")); l != "" {
			f(l)
		}
	}
	return len(p), nil
}
