package audit

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// Plugin names, the plugin label of apiserver_audit_error_total and the
// name in the error log, as kube-apiserver's.
const (
	PluginLog      = "log"
	PluginWebhook  = "webhook"
	PluginBuffered = "buffered"
)

// Metrics are kube-apiserver's audit metrics. A nil *Metrics records
// nothing.
type Metrics struct {
	events   prometheus.Counter
	errors   *prometheus.CounterVec
	levels   *prometheus.CounterVec
	rejected prometheus.Counter
}

// NewMetrics makes apiserver_audit_event_total,
// apiserver_audit_error_total{plugin}, apiserver_audit_level_total{level}
// and apiserver_audit_requests_rejected_total; the Metrics is a
// prometheus.Collector to register where /metrics is served.
func NewMetrics() *Metrics {
	return &Metrics{
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_audit_event_total",
			Help: stability.Alpha.Help("Counter of audit events generated and sent to the audit backend."),
		}),
		levels: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_audit_level_total",
			Help: stability.Alpha.Help("Counter of policy levels for audit events (1 per request)."),
		}, []string{"level"}),
		errors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_audit_error_total",
			Help: stability.Alpha.Help("Counter of audit events that failed to be audited properly. Plugin identifies the plugin affected by the error."),
		}, []string{"plugin"}),
		rejected: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "apiserver_audit_requests_rejected_total",
			Help: stability.Alpha.Help("Counter of apiserver requests rejected due to an error in audit logging backend."),
		}),
	}
}

// Describe implements prometheus.Collector.
func (m *Metrics) Describe(ch chan<- *prometheus.Desc) {
	m.events.Describe(ch)
	m.errors.Describe(ch)
	m.levels.Describe(ch)
	m.rejected.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *Metrics) Collect(ch chan<- prometheus.Metric) {
	m.events.Collect(ch)
	m.errors.Collect(ch)
	m.levels.Collect(ch)
	m.rejected.Collect(ch)
}

// policyLevel counts a request's policy level (None included).
func (m *Metrics) policyLevel(l Level) {
	if m != nil {
		m.levels.WithLabelValues(string(l)).Inc()
	}
}

// eventSent counts an event handed to the backend.
func (m *Metrics) eventSent() {
	if m != nil {
		m.events.Inc()
	}
}

func (m *Metrics) requestRejected() {
	if m != nil {
		m.rejected.Inc()
	}
}

// pluginError is kube-apiserver's handling of a plugin failure: the
// impacted events are counted in apiserver_audit_error_total{plugin}
// and logged (in the legacy one-line form) with the error.
func pluginError(m *Metrics, plugin string, err error, impacted ...*Event) {
	if m != nil {
		m.errors.WithLabelValues(plugin).Add(float64(len(impacted)))
	}
	lines := make([]string, len(impacted))
	for i, ev := range impacted {
		lines[i] = legacyLine(ev)
	}
	slog.Error(fmt.Sprintf("Error in audit plugin '%s' affecting %d audit events", plugin, len(impacted)),
		"err", err, "impacted", strings.Join(lines, "\n"))
}
