package nodelifecycle

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// Zone metrics under kube-controller-manager's names and stability levels,
// read from the controller's state on each scrape.
var (
	zoneHealthDesc = prometheus.NewDesc("node_collector_zone_health",
		stability.Alpha.Help("Gauge measuring percentage of healthy nodes per zone."), []string{"zone"}, nil)
	zoneSizeDesc = prometheus.NewDesc("node_collector_zone_size",
		stability.Alpha.Help("Gauge measuring number of registered Nodes per zones."), []string{"zone"}, nil)
	unhealthyNodesDesc = prometheus.NewDesc("node_collector_unhealthy_nodes_in_zone",
		stability.Alpha.Help("Gauge measuring number of not Ready Nodes per zones."), []string{"zone"}, nil)
	evictionsDesc = prometheus.NewDesc("node_collector_evictions_total",
		stability.Stable.Help("Number of Node evictions that happened since current instance of NodeController started."), []string{"zone"}, nil)
)

// zoneStats is one zone's size and not-Ready count at the last pass.
type zoneStats struct{ size, unhealthy int }

// Describe implements prometheus.Collector.
func (c *Controller) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{zoneHealthDesc, zoneSizeDesc, unhealthyNodesDesc, evictionsDesc} {
		ch <- d
	}
}

// Collect implements prometheus.Collector.
func (c *Controller) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for zone, st := range c.zoneStats {
		health := 100.0
		if st.size > 0 {
			health = 100 * float64(st.size-st.unhealthy) / float64(st.size)
		}
		ch <- prometheus.MustNewConstMetric(zoneHealthDesc, prometheus.GaugeValue, health, zone)
		ch <- prometheus.MustNewConstMetric(zoneSizeDesc, prometheus.GaugeValue, float64(st.size), zone)
		ch <- prometheus.MustNewConstMetric(unhealthyNodesDesc, prometheus.GaugeValue, float64(st.unhealthy), zone)
	}
	for zone, n := range c.evictions {
		ch <- prometheus.MustNewConstMetric(evictionsDesc, prometheus.CounterValue, float64(n), zone)
	}
}
