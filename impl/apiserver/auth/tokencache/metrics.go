package tokencache

import (
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// Metrics are kube-apiserver's token cache metrics (namespace
// authentication, subsystem token_cache; alpha, with no help text beyond
// the stability level): lookups by whether the cache held the result
// (status hit or miss) and how long they took, in whole milliseconds
// (default buckets); finished fetches by whether they ended in an error
// (status ok or error); fetches running (status in_flight) and lookups
// waiting for one (status blocked). Several caches may share them.
type Metrics struct {
	requests *prometheus.CounterVec
	duration *prometheus.HistogramVec
	fetches  *prometheus.CounterVec
	active   *prometheus.GaugeVec
}

// alphaHelp is the help text of a kube-apiserver alpha metric that has
// none of its own: the level's prefix alone.
var alphaHelp = stability.Alpha.Help("")

// NewMetrics registers the metrics on reg.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	const ns, sub = "authentication", "token_cache"
	m := &Metrics{
		requests: prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "request_total", Help: alphaHelp}, []string{"status"}),
		duration: prometheus.NewHistogramVec(prometheus.HistogramOpts{Namespace: ns, Subsystem: sub, Name: "request_duration_seconds", Help: alphaHelp}, []string{"status"}),
		fetches:  prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Subsystem: sub, Name: "fetch_total", Help: alphaHelp}, []string{"status"}),
		active:   prometheus.NewGaugeVec(prometheus.GaugeOpts{Namespace: ns, Subsystem: sub, Name: "active_fetch_count", Help: alphaHelp}, []string{"status"}),
	}
	for _, c := range []prometheus.Collector{m.requests, m.duration, m.fetches, m.active} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

// requested counts a lookup begun at start.
func (m *Metrics) requested(hit bool, start time.Time) {
	if m == nil {
		return
	}
	status := "miss"
	if hit {
		status = "hit"
	}
	m.requests.WithLabelValues(status).Inc()
	m.duration.WithLabelValues(status).Observe(float64(time.Since(start).Milliseconds()) / 1000)
}

// blocking counts a lookup waiting for a fetch; the returned function
// ends the wait.
func (m *Metrics) blocking() func() {
	if m == nil {
		return func() {}
	}
	g := m.active.WithLabelValues("blocked")
	g.Inc()
	return g.Dec
}

// fetching counts a fetch in flight; the returned function ends it,
// counting it by whether it ended without an error.
func (m *Metrics) fetching() func(ok bool) {
	if m == nil {
		return func(bool) {}
	}
	g := m.active.WithLabelValues("in_flight")
	g.Inc()
	return func(ok bool) {
		status := "error"
		if ok {
			status = "ok"
		}
		m.fetches.WithLabelValues(status).Inc()
		g.Dec()
	}
}
