package podgc

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// metrics are kube-controller-manager's pod GC counters, by namespace and
// reason (terminated, out-of-service, orphaned, unscheduled).
type metrics struct {
	deleting, failed *prometheus.CounterVec
}

func newMetrics() *metrics {
	return &metrics{
		deleting: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "pod_gc_collector", Name: "force_delete_pods_total",
			Help: stability.Alpha.Help("Number of pods that are being forcefully deleted since the Pod GC Controller started.")}, []string{"namespace", "reason"}),
		failed: prometheus.NewCounterVec(prometheus.CounterOpts{Subsystem: "pod_gc_collector", Name: "force_delete_pod_errors_total",
			Help: stability.Alpha.Help("Number of errors encountered when forcefully deleting the pods since the Pod GC Controller started.")}, []string{"namespace", "reason"}),
	}
}

// Describe implements prometheus.Collector.
func (m *metrics) Describe(ch chan<- *prometheus.Desc) {
	m.deleting.Describe(ch)
	m.failed.Describe(ch)
}

// Collect implements prometheus.Collector.
func (m *metrics) Collect(ch chan<- prometheus.Metric) {
	m.deleting.Collect(ch)
	m.failed.Collect(ch)
}

// Metrics is the collector's prometheus.Collector: register it to export
// pod_gc_collector_force_delete_pods_total and
// pod_gc_collector_force_delete_pod_errors_total.
func (c *Controller) Metrics() prometheus.Collector { return c.metrics }
