// Package metrics holds the scheduler's Prometheus metrics, named as
// kube-scheduler names them, all STABLE there (their help texts say so as
// component-base writes it). Each Scheduler has its own registry, so that
// several schedulers can run in one process.
package metrics

import (
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Attempt results.
const (
	ResultScheduled     = "scheduled"
	ResultUnschedulable = "unschedulable"
	ResultError         = "error"
)

// Metrics is one scheduler's metrics.
type Metrics struct {
	Registry *prometheus.Registry

	AttemptDuration        *prometheus.HistogramVec
	ExtensionPointDuration *prometheus.HistogramVec
	ScheduleAttempts       *prometheus.CounterVec
	PendingPods            *prometheus.GaugeVec
	PreemptionVictims      prometheus.Histogram
}

// New registers the metrics in a fresh registry (with Go and process
// collectors).
func New() *Metrics {
	m := &Metrics{Registry: prometheus.NewRegistry()}
	m.AttemptDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "scheduler", Name: "scheduling_attempt_duration_seconds",
		Help:    stability.Stable.Help("Scheduling attempt latency in seconds (scheduling algorithm + binding)"),
		Buckets: prometheus.ExponentialBuckets(0.001, 2, 15),
	}, []string{"result", "profile"})
	m.ExtensionPointDuration = prometheus.NewHistogramVec(prometheus.HistogramOpts{
		Subsystem: "scheduler", Name: "framework_extension_point_duration_seconds",
		Help:    stability.Stable.Help("Latency for running all plugins of a specific extension point."),
		Buckets: prometheus.ExponentialBuckets(0.0001, 2, 12),
	}, []string{"extension_point", "status", "profile"})
	m.ScheduleAttempts = prometheus.NewCounterVec(prometheus.CounterOpts{
		Subsystem: "scheduler", Name: "schedule_attempts_total",
		Help: stability.Stable.Help("Number of attempts to schedule pods, by the result. 'unschedulable' means a pod could not be scheduled, while 'error' means an internal scheduler problem."),
	}, []string{"result", "profile"})
	m.PendingPods = prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Subsystem: "scheduler", Name: "pending_pods",
		Help: stability.Stable.Help("Number of pending pods, by the queue type. 'active' means number of pods in activeQ; 'backoff' means number of pods in backoffQ; 'unschedulable' means number of pods in unschedulablePods; 'gated' is the number of pods with scheduling gates."),
	}, []string{"queue"})
	m.PreemptionVictims = prometheus.NewHistogram(prometheus.HistogramOpts{
		Subsystem: "scheduler", Name: "preemption_victims",
		Help: stability.Stable.Help("Number of selected preemption victims"), Buckets: prometheus.ExponentialBuckets(1, 2, 7),
	})
	m.Registry.MustRegister(m.AttemptDuration, m.ExtensionPointDuration, m.ScheduleAttempts, m.PendingPods, m.PreemptionVictims,
		collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return m
}

// ObserveExtensionPoint implements fw.MetricsRecorder.
func (m *Metrics) ObserveExtensionPoint(point string, s *fw.Status, profile string, d time.Duration) {
	m.ExtensionPointDuration.WithLabelValues(point, s.Code().String(), profile).Observe(d.Seconds())
}

// ObserveAttempt records one scheduling attempt.
func (m *Metrics) ObserveAttempt(result, profile string, d time.Duration) {
	m.ScheduleAttempts.WithLabelValues(result, profile).Inc()
	m.AttemptDuration.WithLabelValues(result, profile).Observe(d.Seconds())
}

// SetPending records the queue sizes.
func (m *Metrics) SetPending(active, backoff, unschedulable, gated int) {
	m.PendingPods.WithLabelValues("gated").Set(float64(gated))
	m.PendingPods.WithLabelValues("active").Set(float64(active))
	m.PendingPods.WithLabelValues("backoff").Set(float64(backoff))
	m.PendingPods.WithLabelValues("unschedulable").Set(float64(unschedulable))
}

// Handler serves /metrics.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.Registry, promhttp.HandlerOpts{})
}
