package etcd3

import (
	"context"
	"errors"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/reqlatency"
	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// Metrics are the etcd request metrics kube-apiserver exports, shared by
// every store of one API server, labelled as kube-apiserver's by
// operation (get, list, create, update, delete, listWithCount,
// getCurrentResourceVersion), group and resource.
type Metrics struct {
	// RequestDuration is etcd_request_duration_seconds{operation,group,resource}.
	RequestDuration *prometheus.HistogramVec
	// RequestCount is etcd_requests_total{operation,group,resource}.
	RequestCount *prometheus.CounterVec
	// RequestErrors is etcd_request_errors_total{operation,group,resource}.
	RequestErrors *prometheus.CounterVec
}

// metricLabels are the labels naming a store's resource in the metrics.
type metricLabels struct{ group, resource string }

// NewMetrics creates the metrics and registers them on reg (nil: not
// registered). Registering twice on one registerer reuses the collectors
// registered first.
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	labels := []string{"operation", "group", "resource"}
	m := &Metrics{
		RequestDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name: "etcd_request_duration_seconds",
			Help: stability.Alpha.Help("Etcd request latency in seconds for each operation and object type."),
			// The API server request latency buckets, as upstream.
			Buckets: []float64{0.005, 0.025, 0.05, 0.1, 0.2, 0.4, 0.6, 0.8, 1.0, 1.25, 1.5, 2, 3,
				4, 5, 6, 8, 10, 15, 20, 30, 45, 60},
		}, labels),
		RequestCount: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_requests_total",
			Help: stability.Alpha.Help("Etcd request counts for each operation and object type."),
		}, labels),
		RequestErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "etcd_request_errors_total",
			Help: stability.Alpha.Help("Etcd failed request counts for each operation and object type."),
		}, labels),
	}
	if reg == nil {
		return m, nil
	}
	var err error
	if m.RequestDuration, err = Register(reg, m.RequestDuration); err != nil {
		return nil, err
	}
	if m.RequestCount, err = Register(reg, m.RequestCount); err != nil {
		return nil, err
	}
	if m.RequestErrors, err = Register(reg, m.RequestErrors); err != nil {
		return nil, err
	}
	return m, nil
}

// Register registers c on reg and returns it, or returns the collector of
// the same description registered there already (stores and factories of
// one API server share a registry); on another failure, C's zero value.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) (C, error) {
	var none C
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if !errors.As(err, &are) {
			return none, err
		}
		existing, ok := are.ExistingCollector.(C)
		if !ok {
			return none, err
		}
		return existing, nil
	}
	return c, nil
}

// observe records one etcd request of operation op on resource l, made
// for the API request of ctx: its duration is added to that request's
// etcd latency (kube-apiserver's apiserver.latency.k8s.io/etcd audit
// annotation sums every key-value call), with or without metrics.
func (m *Metrics) observe(ctx context.Context, op string, l metricLabels, start time.Time, err error) {
	took := time.Since(start)
	reqlatency.From(ctx).AddEtcd(took)
	if m == nil {
		return
	}
	m.RequestDuration.WithLabelValues(op, l.group, l.resource).Observe(took.Seconds())
	m.RequestCount.WithLabelValues(op, l.group, l.resource).Inc()
	if err != nil {
		m.RequestErrors.WithLabelValues(op, l.group, l.resource).Inc()
	}
}
