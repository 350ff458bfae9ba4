package server

import (
	"math"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// CertificateMetrics is what a kubelet's certificate managers report to
// /metrics: Client is --rotate-certificates' manager, Server
// --rotate-server-certificates' (serverTLSBootstrap); nil when the
// kubelet has no such manager, as upstream registers each manager's
// metrics only when it is on.
type CertificateMetrics struct {
	Client, Server *CertificateManagerMetrics
}

// CertificateManagerMetrics is one certificate manager's state.
type CertificateManagerMetrics struct {
	// NotAfter is the current (unexpired) certificate's expiry; zero when
	// there is none, a TTL of +Inf as upstream reports it.
	NotAfter time.Time
	// RenewErrors counts the failed requests for a new certificate.
	RenewErrors uint64
	// Rotations are the rotations that replaced a certificate: how many,
	// the sum of the replaced certificates' ages in seconds (from their
	// NotBefore), and cumulative counts per CertificateRotationBuckets
	// upper bound.
	Rotations       uint64
	RotationSeconds float64
	RotationBuckets map[float64]uint64
}

// CertificateRotationBuckets are upstream's buckets of
// kubelet_certificate_manager_server_rotation_seconds: a minute, an
// hour, 4 hours, a day, a week, 30 days, 90, 180, 360 and 1440 days.
var CertificateRotationBuckets = []float64{60, 3600, 14400, 86400, 604800, 2592000, 7776000, 15552000, 31104000, 124416000}

// CertificateReporter is a Kubelet that keeps certificates current;
// /metrics reports its managers per node.
type CertificateReporter interface {
	CertificateMetrics() CertificateMetrics
}

// certificateCollector reports upstream's certificate manager metrics
// (ALPHA, their help texts as component-base exposes them) per node.
type certificateCollector struct {
	m   *Mux
	now func() time.Time
}

var (
	clientTTLDesc = prometheus.NewDesc("kubelet_certificate_manager_client_ttl_seconds",
		stability.Alpha.Help("Gauge of the TTL (time-to-live) of the Kubelet's client certificate. The value is in seconds until certificate expiry (negative if already expired). If client certificate is invalid or unused, the value will be +INF."),
		[]string{"node"}, nil)
	clientRenewErrorsDesc = prometheus.NewDesc("kubelet_certificate_manager_client_expiration_renew_errors",
		stability.Alpha.Help("Counter of certificate renewal errors."), []string{"node"}, nil)
	serverTTLDesc = prometheus.NewDesc("kubelet_certificate_manager_server_ttl_seconds",
		stability.Alpha.Help("Gauge of the shortest TTL (time-to-live) of the Kubelet's serving certificate. The value is in seconds until certificate expiry (negative if already expired). If serving certificate is invalid or unused, the value will be +INF."),
		[]string{"node"}, nil)
	serverRotationDesc = prometheus.NewDesc("kubelet_certificate_manager_server_rotation_seconds",
		stability.Alpha.Help("Histogram of the number of seconds the previous certificate lived before being rotated."),
		[]string{"node"}, nil)
	serverRenewErrorsDesc = prometheus.NewDesc("kubelet_server_expiration_renew_errors",
		stability.Alpha.Help("Counter of certificate renewal errors."), []string{"node"}, nil)
)

func (c certificateCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{clientTTLDesc, clientRenewErrorsDesc, serverTTLDesc, serverRotationDesc, serverRenewErrorsDesc} {
		ch <- d
	}
}

func (c certificateCollector) Collect(ch chan<- prometheus.Metric) {
	c.m.mu.RLock()
	defer c.m.mu.RUnlock()
	now := c.now()
	for name, k := range c.m.kubelets {
		r, ok := k.(CertificateReporter)
		if !ok {
			continue
		}
		cm := r.CertificateMetrics()
		if s := cm.Client; s != nil {
			ch <- prometheus.MustNewConstMetric(clientTTLDesc, prometheus.GaugeValue, CertificateTTL(s.NotAfter, now), name)
			ch <- prometheus.MustNewConstMetric(clientRenewErrorsDesc, prometheus.CounterValue, float64(s.RenewErrors), name)
		}
		if s := cm.Server; s != nil {
			ch <- prometheus.MustNewConstMetric(serverTTLDesc, prometheus.GaugeValue, CertificateTTL(s.NotAfter, now), name)
			buckets := make(map[float64]uint64, len(CertificateRotationBuckets))
			for _, b := range CertificateRotationBuckets {
				buckets[b] = s.RotationBuckets[b]
			}
			ch <- prometheus.MustNewConstHistogram(serverRotationDesc, s.Rotations, s.RotationSeconds, buckets, name)
			ch <- prometheus.MustNewConstMetric(serverRenewErrorsDesc, prometheus.CounterValue, float64(s.RenewErrors), name)
		}
	}
}

// CertificateTTL is the TTL gauges' value: whole seconds from now to
// notAfter (negative when past), +Inf without a certificate (zero
// notAfter). Pure.
func CertificateTTL(notAfter, now time.Time) float64 {
	if notAfter.IsZero() {
		return math.Inf(1)
	}
	return math.Trunc(notAfter.Sub(now).Seconds())
}
