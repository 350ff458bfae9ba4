package controllermanager

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// workqueueMetrics exposes client-go work-queue metrics under upstream's
// names (workqueue_depth, workqueue_adds_total, ...), labelled by queue;
// all are BETA in component-base's work queue metrics, whose help texts
// and buckets they repeat.
type workqueueMetrics struct {
	depth                      *prometheus.GaugeVec
	addsTotal, retriesTotal    *prometheus.CounterVec
	latency, workDuration      *prometheus.HistogramVec
	unfinished, longestRunning *prometheus.GaugeVec
}

var queueMetricsOnce sync.Once

// registerWorkqueueMetrics installs the provider once per process (client-go
// allows only one) and registers its collectors with reg.
func registerWorkqueueMetrics(reg prometheus.Registerer) {
	queueMetricsOnce.Do(func() {
		m := newWorkqueueMetrics()
		for _, c := range m.collectors() {
			_ = reg.Register(c)
		}
		workqueue.SetProvider(m)
	})
}

// newWorkqueueMetrics makes the work queue metrics, unregistered.
func newWorkqueueMetrics() *workqueueMetrics {
	// Ten buckets from 10 ns by factor 10 (up to 10 s), as component-base.
	buckets := prometheus.ExponentialBuckets(10e-9, 10, 10)
	return &workqueueMetrics{
		depth:          prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_depth", Help: stability.Beta.Help("Current depth of workqueue")}, []string{"name"}),
		addsTotal:      prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_adds_total", Help: stability.Beta.Help("Total number of adds handled by workqueue")}, []string{"name"}),
		retriesTotal:   prometheus.NewCounterVec(prometheus.CounterOpts{Name: "workqueue_retries_total", Help: stability.Beta.Help("Total number of retries handled by workqueue")}, []string{"name"}),
		latency:        prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "workqueue_queue_duration_seconds", Help: stability.Beta.Help("How long in seconds an item stays in workqueue before being requested."), Buckets: buckets}, []string{"name"}),
		workDuration:   prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "workqueue_work_duration_seconds", Help: stability.Beta.Help("How long in seconds processing an item from workqueue takes."), Buckets: buckets}, []string{"name"}),
		unfinished:     prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_unfinished_work_seconds", Help: stability.Beta.Help("How many seconds of work has done that is in progress and hasn't been observed by work_duration. Large values indicate stuck threads. One can deduce the number of stuck threads by observing the rate at which this increases.")}, []string{"name"}),
		longestRunning: prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "workqueue_longest_running_processor_seconds", Help: stability.Beta.Help("How many seconds has the longest running processor for workqueue been running.")}, []string{"name"}),
	}
}

// collectors are m's metric vectors.
func (m *workqueueMetrics) collectors() []prometheus.Collector {
	return []prometheus.Collector{m.depth, m.addsTotal, m.retriesTotal, m.latency, m.workDuration, m.unfinished, m.longestRunning}
}

func (m *workqueueMetrics) NewDepthMetric(name string) workqueue.GaugeMetric {
	return m.depth.WithLabelValues(name)
}
func (m *workqueueMetrics) NewAddsMetric(name string) workqueue.CounterMetric {
	return m.addsTotal.WithLabelValues(name)
}
func (m *workqueueMetrics) NewLatencyMetric(name string) workqueue.HistogramMetric {
	return m.latency.WithLabelValues(name)
}
func (m *workqueueMetrics) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	return m.workDuration.WithLabelValues(name)
}
func (m *workqueueMetrics) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.unfinished.WithLabelValues(name)
}
func (m *workqueueMetrics) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	return m.longestRunning.WithLabelValues(name)
}
func (m *workqueueMetrics) NewRetriesMetric(name string) workqueue.CounterMetric {
	return m.retriesTotal.WithLabelValues(name)
}
