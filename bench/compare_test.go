package bench

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

func TestSpread(t *testing.T) {
	for _, tc := range []struct {
		values           []float64
		min, median, max float64
	}{
		{[]float64{3, 1, 2}, 1, 2, 3},
		{[]float64{4, 1, 3, 2}, 1, 2.5, 4},
		{[]float64{7}, 7, 7, 7},
	} {
		s := Metric{Values: tc.values}.Spread()
		if s.Min != tc.min || s.Median != tc.median || s.Max != tc.max || s.N != len(tc.values) {
			t.Errorf("%v: got %+v", tc.values, s)
		}
	}
}

func TestCompareVerdicts(t *testing.T) {
	tp := func(vs ...float64) Metric {
		return Metric{Name: "tp", Unit: "pods/s", HigherIsBetter: true, Values: vs}
	}
	lat := func(vs ...float64) Metric { return Metric{Name: "lat", Unit: "ms", Values: vs} }
	for name, tc := range map[string]struct {
		base, cur Metric
		want      string
	}{
		"throughput down 40%":           {tp(1000), tp(600), VerdictRegression},
		"throughput up 40%":             {tp(1000), tp(1400), VerdictImprovement},
		"throughput down 5%":            {tp(1000), tp(950), VerdictNoise},
		"latency up 50%":                {lat(100), lat(150), VerdictRegression},
		"latency down 50%":              {lat(100), lat(50), VerdictImprovement},
		"noisy baseline widens noise":   {tp(500, 1000, 1500), tp(700, 700, 700), VerdictNoise},
		"overlapping repeats are noise": {tp(900, 1000, 1400), tp(500, 600, 950), VerdictNoise},
		"separated repeats regress":     {tp(990, 1000, 1010), tp(790, 800, 810), VerdictRegression},
	} {
		tc.cur.Name = tc.base.Name
		got := Compare([]Metric{tc.base}, []Metric{tc.cur}, DefaultNoise)
		if len(got) != 1 || got[0].Verdict != tc.want {
			t.Errorf("%s: got %+v, want %s", name, got, tc.want)
		}
	}
	got := Compare(nil, []Metric{tp(1)}, DefaultNoise)
	if got[0].Verdict != VerdictNew || Regressions(got) != 0 {
		t.Errorf("metric without baseline: %+v", got)
	}
}

func TestReportMetricsGroupRepeats(t *testing.T) {
	run := func(avg float64) SchedulingResult {
		return SchedulingResult{Workload: "SchedulingBasic/50Nodes_100Pods", SchedulingThroughput: Throughput{Average: avg, Perc50: avg}}
	}
	r := Report{Scheduling: []SchedulingResult{run(100), run(300), run(200)},
		Startup: []StartupResult{{Nodes: 10, Pods: 20, Rate: 100, CreateToRunning: Latencies{P50: 5 * time.Millisecond, P99: 20 * time.Millisecond}}}}
	ms := r.Metrics()
	if ms[0].Name != "SchedulingBasic/50Nodes_100Pods SchedulingThroughput.Average" || ms[0].Spread().Median != 200 || ms[0].Spread().N != 3 {
		t.Errorf("first metric %+v", ms[0])
	}
	var b bytes.Buffer
	WriteSpreadTable(&b, ms)
	if !strings.Contains(b.String(), "| SchedulingBasic/50Nodes_100Pods SchedulingThroughput.Average | pods/s | 200 | 100 | 300 | ±50% | 3 |") {
		t.Errorf("spread table:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "startup 10nodes_20pods@100/s create→Running p99 | ms | 20.0 |") {
		t.Errorf("spread table:\n%s", b.String())
	}
}

// TestLoadBaselineDirectory reads the committed baseline directory (its
// apiserver-memory file holds one object, not a list) and compares it
// with itself: nothing regresses.
func TestLoadBaselineDirectory(t *testing.T) {
	r, err := LoadReport("baselines/2026-11-21")
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Writes) == 0 || len(r.Scheduling) == 0 || len(r.Startup) == 0 || len(r.APIServerMemory) != 1 {
		t.Fatalf("loaded %d writes, %d scheduling, %d startup, %d memory results", len(r.Writes), len(r.Scheduling), len(r.Startup), len(r.APIServerMemory))
	}
	cs := Compare(r.Metrics(), r.Metrics(), DefaultNoise)
	if len(cs) == 0 || Regressions(cs) != 0 {
		t.Errorf("self-comparison: %d comparisons, %d regressions", len(cs), Regressions(cs))
	}
	var b bytes.Buffer
	WriteComparisonTable(&b, cs)
	if !strings.Contains(b.String(), "SchedulingBasic/5000Nodes_10000Pods SchedulingThroughput.Average | pods/s | higher | 1236 (1) | 1236 (1) | 1.00 | ±15% | within noise |") {
		t.Errorf("comparison table:\n%s", b.String())
	}
	if _, err := LoadReport("baselines/does-not-exist"); err == nil {
		t.Error("missing baseline loaded")
	}
}

func TestMachineWarnings(t *testing.T) {
	quiet := Machine{Cores: 2, CPUModel: "AMD EPYC", LoadAverage: "0.42 0.50 0.61"}
	busy := quiet
	busy.LoadAverage = "12.48 19.44 25.92"
	other := quiet
	other.Cores = 8
	if w := MachineWarnings(quiet, quiet); len(w) != 0 {
		t.Errorf("quiet vs quiet: %q", w)
	}
	if w := MachineWarnings(quiet, busy); len(w) != 1 || !strings.Contains(w[0], "this run started at load average 12.48") {
		t.Errorf("quiet vs busy: %q", w)
	}
	if w := MachineWarnings(other, quiet); len(w) != 1 || !strings.Contains(w[0], "different machines") {
		t.Errorf("8 cores vs 2: %q", w)
	}
	if w := MachineWarnings(Machine{Cores: 2, CPUModel: "AMD EPYC"}, quiet); len(w) != 0 {
		t.Errorf("baseline without load average: %q", w)
	}
	always, madvise := quiet, quiet
	always.TransparentHugePages, madvise.TransparentHugePages = "always", "madvise"
	if w := MachineWarnings(always, madvise); len(w) != 1 || !strings.Contains(w[0], "transparent huge pages: baseline always, this run madvise") {
		t.Errorf("THP always vs madvise: %q", w)
	}
	if w := MachineWarnings(quiet, madvise); len(w) != 0 {
		t.Errorf("baseline without THP mode: %q", w)
	}
}

func TestMachineFiles(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"always [madvise] never\n", "madvise"},
		{"[always] madvise never", "always"},
		{"always madvise never", ""},
		{"always [madvise", ""},
	} {
		if got := selectedMode(c.in); got != c.want {
			t.Errorf("selectedMode(%q) = %q, want %q", c.in, got, c.want)
		}
	}
	meminfo := "MemTotal:        8130076 kB\nMemFree:  1 kB\n"
	if got := memTotalMiB(meminfo); got != 7939 {
		t.Errorf("memTotalMiB = %d, want 7939", got)
	}
	if got := memTotalMiB("MemFree: 1 kB\n"); got != 0 {
		t.Errorf("memTotalMiB without MemTotal = %d", got)
	}
}
