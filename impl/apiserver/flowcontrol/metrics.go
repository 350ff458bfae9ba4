package flowcontrol

import (
	"fmt"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// metrics are API Priority and Fairness's Prometheus metrics, with
// kube-apiserver's names, labels and stability levels: BETA for the
// request and seat counts, waits and nominal limits upstream promoted,
// ALPHA for the rest.
type metrics struct {
	executing  *prometheus.GaugeVec
	seats      *prometheus.GaugeVec
	inQueue    *prometheus.GaugeVec
	rejected   *prometheus.CounterVec
	dispatched *prometheus.CounterVec
	wait       *prometheus.HistogramVec
	// workSeats: each request's estimated seats (the larger of initial
	// and final); watchCount: the interested watches of each write.
	workSeats, watchCount *prometheus.HistogramVec
	// Borrowing, by priority level: the limits, the target and demand
	// statistics of the last adjustment and the fair fraction. (The
	// demand histogram is the Controller's demandCollector.)
	nominal, lower, upper, current, target *prometheus.GaugeVec
	demandHigh, demandAvg, demandDev       *prometheus.GaugeVec
	demandSmoothed                         *prometheus.GaugeVec
	fairFrac                               prometheus.Gauge
}

// levelGauge is a gauge per priority level, of stability level l.
func levelGauge(l stability.Level, name, help string) *prometheus.GaugeVec {
	return prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: name, Help: l.Help(help)}, []string{"priority_level"})
}

func newMetrics(reg prometheus.Registerer) (*metrics, error) {
	labels := []string{"priority_level", "flow_schema"}
	m := &metrics{
		executing: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_executing_requests",
			Help: stability.Beta.Help("Requests holding seats now (a watch until its initial events are sent), by priority level and flow schema."),
		}, labels),
		seats: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_executing_seats",
			Help: stability.Beta.Help("Seats held now by executing requests, and by finished ones still holding their final seats, by priority level and flow schema."),
		}, labels),
		inQueue: prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_current_inqueue_requests",
			Help: stability.Beta.Help("Requests waiting in a priority level's queues now."),
		}, labels),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_flowcontrol_rejected_requests_total",
			Help: stability.Beta.Help("Requests turned away with 429, by reason (queue-full, concurrency-limit, time-out, cancelled)."),
		}, append(labels, "reason")),
		dispatched: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "apiserver_flowcontrol_dispatched_requests_total",
			Help: stability.Beta.Help("Requests that got a seat and went on to execute."),
		}, labels),
		wait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_flowcontrol_request_wait_duration_seconds",
			Help:    stability.Beta.Help("Seconds from arrival to getting a seat (execute=true) or being turned away (execute=false)."),
			Buckets: []float64{0, 0.005, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30},
		}, append(labels, "execute")),
		workSeats: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_flowcontrol_work_estimated_seats",
			Help:    stability.Alpha.Help("Seats the work estimate gave each request (the larger of its initial and final seats)."),
			Buckets: []float64{1, 2, 4, 10},
		}, labels),
		watchCount: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "apiserver_flowcontrol_watch_count_samples",
			Help:    stability.Alpha.Help("Open watches that a create, update, patch or delete may have to notify, per request."),
			Buckets: []float64{0, 1, 10, 100, 1000, 10000},
		}, labels),
		nominal: levelGauge(stability.Beta, "apiserver_flowcontrol_nominal_limit_seats", "Nominal seats of each priority level: its share of the server's total."),
		lower:   levelGauge(stability.Alpha, "apiserver_flowcontrol_lower_limit_seats", "The least a priority level's current limit may be: nominal less what it lends."),
		upper:   levelGauge(stability.Alpha, "apiserver_flowcontrol_upper_limit_seats", "The most a priority level's current limit may be: nominal plus what it may borrow."),
		current: levelGauge(stability.Alpha, "apiserver_flowcontrol_current_limit_seats", "Seats a priority level may use now, as the last borrowing adjustment divided them."),
		target:  levelGauge(stability.Alpha, "apiserver_flowcontrol_target_seats", "The seats the last borrowing adjustment aimed to give a priority level."),
		demandHigh: levelGauge(stability.Alpha, "apiserver_flowcontrol_demand_seats_high_watermark",
			"The most seats (in use and waiting) a priority level demanded in the last adjustment period."),
		demandAvg: levelGauge(stability.Alpha, "apiserver_flowcontrol_demand_seats_average",
			"The time-weighted average of a priority level's seat demand in the last adjustment period."),
		demandDev: levelGauge(stability.Alpha, "apiserver_flowcontrol_demand_seats_stdev",
			"The time-weighted standard deviation of a priority level's seat demand in the last adjustment period."),
		demandSmoothed: levelGauge(stability.Alpha, "apiserver_flowcontrol_demand_seats_smoothed",
			"A priority level's smoothed seat demand envelope (average plus standard deviation)."),
		fairFrac: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "apiserver_flowcontrol_seat_fair_frac",
			Help: stability.Alpha.Help("The proportion of their targets the last borrowing adjustment gave the priority levels."),
		}),
	}
	if reg != nil {
		for _, c := range []prometheus.Collector{m.executing, m.seats, m.inQueue, m.rejected, m.dispatched, m.wait,
			m.workSeats, m.watchCount,
			m.nominal, m.lower, m.upper, m.current, m.target, m.demandHigh, m.demandAvg, m.demandDev, m.demandSmoothed,
			m.fairFrac} {
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
	workSeats          prometheus.Observer
	watchCount         prometheus.Observer
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
		workSeats:      m.workSeats.WithLabelValues(level, schema),
		watchCount:     m.watchCount.WithLabelValues(level, schema),
		rejected:       map[RejectReason]prometheus.Counter{},
	}
	for _, r := range []RejectReason{ReasonQueueFull, ReasonConcurrencyLimit, ReasonTimeout, ReasonCancelled} {
		fm.rejected[r] = m.rejected.WithLabelValues(level, schema, string(r))
	}
	return fm
}

// demandDesc describes apiserver_flowcontrol_demand_seats.
var demandDesc = prometheus.NewDesc("apiserver_flowcontrol_demand_seats",
	stability.Alpha.Help("Observations, at the end of every nanosecond, of the seats each priority level could use (in use and waiting) over its current limit: counts in nanoseconds."),
	[]string{"priority_level"}, nil)

// demandCollector serves the levels' demand timing histograms, brought up
// to the time of the scrape.
type demandCollector struct{ c *Controller }

func (dc demandCollector) Describe(ch chan<- *prometheus.Desc) { ch <- demandDesc }

func (dc demandCollector) Collect(ch chan<- prometheus.Metric) {
	c := dc.c
	c.mu.Lock()
	c.d.sync(c.now())
	ms := make([]prometheus.Metric, 0, len(c.d.levels))
	for _, l := range c.d.levels {
		ms = append(ms, l.demandHist.metric(l.name))
	}
	c.mu.Unlock()
	for _, m := range ms {
		ch <- m
	}
}

// metric is h as the named level's apiserver_flowcontrol_demand_seats
// (its buckets cumulative).
func (h *demandHistogram) metric(level string) prometheus.Metric {
	buckets := make(map[float64]uint64, len(demandBuckets))
	var c uint64
	for i, b := range demandBuckets {
		c += h.counts[i]
		buckets[b] = c
	}
	return prometheus.MustNewConstHistogram(demandDesc, h.count, h.sum, buckets, level)
}
