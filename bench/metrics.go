package bench

import (
	"fmt"
	"sort"
	"time"
)

// Metric is one number a report yields, with one value per run.
type Metric struct {
	// Name identifies the metric across reports, e.g.
	// "SchedulingBasic/500Nodes_1000Pods SchedulingThroughput.Average".
	Name           string
	Unit           string
	HigherIsBetter bool
	Values         []float64
}

// Spread is min, median and max of a metric's runs.
type Spread struct {
	N                int
	Min, Median, Max float64
}

// Spread summarizes the metric's values (benchstat-like: the median of
// the runs, and the range around it).
func (m Metric) Spread() Spread {
	if len(m.Values) == 0 {
		return Spread{}
	}
	v := append([]float64(nil), m.Values...)
	sort.Float64s(v)
	med := v[len(v)/2]
	if len(v)%2 == 0 {
		med = (v[len(v)/2-1] + v[len(v)/2]) / 2
	}
	return Spread{N: len(v), Min: v[0], Median: med, Max: v[len(v)-1]}
}

// RelativeRange is (max-min)/median, the run-to-run noise of the metric.
func (s Spread) RelativeRange() float64 {
	if s.Median == 0 {
		return 0
	}
	return (s.Max - s.Min) / s.Median
}

func msOf(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Metrics lists the report's metrics in a stable order; repeated runs of
// the same workload add values to the same metric.
func (r Report) Metrics() []Metric {
	byName := map[string]*Metric{}
	var order []string
	add := func(name, unit string, higher bool, v float64) {
		m, ok := byName[name]
		if !ok {
			m = &Metric{Name: name, Unit: unit, HigherIsBetter: higher}
			byName[name] = m
			order = append(order, name)
		}
		m.Values = append(m.Values, v)
	}
	for _, w := range r.Writes {
		key := fmt.Sprintf("writes %s clients=%d", w.Target, w.Clients)
		add(key+" rate", "ops/s", true, w.Rate)
		add(key+" p99", "ms", false, msOf(w.Latencies.P99))
	}
	for _, s := range r.Scheduling {
		key := s.Workload
		t := s.SchedulingThroughput
		add(key+" SchedulingThroughput.Average", "pods/s", true, t.Average)
		add(key+" SchedulingThroughput.Perc50", "pods/s", true, t.Perc50)
		if s.AttemptLatencyP99 > 0 {
			add(key+" attempt p99", "ms", false, msOf(s.AttemptLatencyP99))
		}
		if s.RSSBytes > 0 {
			add(key+" scheduler CPU time", "s", false, s.CPUTime.Seconds())
			add(key+" scheduler RSS", "MiB", false, float64(s.RSSBytes)/(1<<20))
		}
	}
	for _, s := range r.Startup {
		key := fmt.Sprintf("startup %dnodes_%dpods@%.0f/s", s.Nodes, s.Pods, s.Rate)
		add(key+" create→Running p50", "ms", false, msOf(s.CreateToRunning.P50))
		add(key+" create→Running p99", "ms", false, msOf(s.CreateToRunning.P99))
	}
	for _, m := range r.APIServerMemory {
		add(fmt.Sprintf("apiserver-memory %dpods RSS", m.Pods), "MiB", false, float64(m.RSSBytes)/(1<<20))
	}
	for _, m := range r.NodeMemory {
		key := fmt.Sprintf("node-memory %dnodes_%dpods", m.Nodes, m.Pods)
		add(key+" agent heap/node", "KiB", false, m.AgentHeapPerNode/1024)
		add(key+" agent heap/pod", "KiB", false, m.AgentHeapPerPod/1024)
		add(key+" apiserver RSS/pod", "KiB", false, m.APIServerRSSPerPod/1024)
	}
	checkersMetrics(r.Checkers, add)
	WatchFanoutMetrics(r.WatchFanout, add)
	out := make([]Metric, 0, len(order))
	for _, n := range order {
		out = append(out, *byName[n])
	}
	return out
}
