package flowcontrol

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"
)

// metrics are API Priority and Fairness's Prometheus metrics, with
// kube-apiserver's names and labels.
type metrics struct {
	executing  *prometheus.GaugeVec
	seats      *prometheus.GaugeVec
	inQueue    *prometheus.GaugeVec
	rejected   *prometheus.CounterVec
	dispatched *prometheus.CounterVec
	wait       *prometheus.HistogramVec
	nominal    *prometheus.GaugeVec
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	labels := []string{"priority_level", "flow_schema"}
	m := &metrics{
		executing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_executing_requests",
			Help: "Requests holding a seat now (a watch only until it starts streaming), by priority level and flow schema.",
		}, labels),
		seats: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_executing_seats",
			Help: "Seats held now by executing requests, and by finished ones still holding their final seats, by priority level and flow schema.",
		}, labels),
		inQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_inqueue_requests",
			Help: "Requests waiting in a priority level's queues now.",
		}, labels),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_flowcontrol_rejected_requests_total",
			Help: "Requests turned away with 429, by reason (queue-full, concurrency-limit, time-out, cancelled).",
		}, append(labels, "reason")),
		dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_flowcontrol_dispatched_requests_total",
			Help: "Requests that got a seat and went on to execute.",
		}, labels),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_flowcontrol_request_wait_duration_seconds",
			Help:    "Seconds from arrival to getting a seat (execute=true) or being turned away (execute=false).",
			Buckets: []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30},
		}, append(labels, "execute")),
		nominal: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_nominal_limit_seats",
			Help: "Seats of each priority level: its share of the server's total.",
		}, []string{"priority_level"}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.executing, m.seats, m.inQueue, m.rejected, m.dispatched, m.wait, m.nominal} {
			if err := reg.Register(c); err != nil {
				return nil, fmt.Errorf("registering flow control metrics: %w", err)
			}
		}
	}
	return m, nil
}

// flowMetrics are the children of one flow schema (and its level), looked
// up once so that a request does not hash label values.
type flowMetrics struct {
	executing, inQueue prometheus.Gauge
	executingSeats     prometheus.Gauge
	dispatched         prometheus.Counter
	waitExecuted       prometheus.Observer
	waitRejected       prometheus.Observer
	rejected           map[RejectReason]prometheus.Counter
}

func (m *metrics) forFlow(level, schema string) *flowMetrics {
	fm := &flowMetrics{
		executing:      m.executing.WithLabelValues(level, schema),
		executingSeats: m.seats.WithLabelValues(level, schema),
		inQueue:        m.inQueue.WithLabelValues(level, schema),
		dispatched:     m.dispatched.WithLabelValues(level, schema),
		waitExecuted:   m.wait.WithLabelValues(level, schema, "true"),
		waitRejected:   m.wait.WithLabelValues(level, schema, "false"),
		rejected:       map[RejectReason]prometheus.Counter{},
	}
	for _, r := range []RejectReason{ReasonQueueFull, ReasonConcurrencyLimit, ReasonTimeout, ReasonCancelled} {
		fm.rejected[r] = m.rejected.WithLabelValues(level, schema, string(r))
	}
	return fm
}
