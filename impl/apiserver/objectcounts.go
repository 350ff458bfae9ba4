package apiserver

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/flowcontrol"
	"github.com/kubeproof/kubeproof/impl/internal/stability"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// objectCounts polls the stats of the stored objects of every served
// resource (their number and average size, storage.Stats), as
// kube-apiserver's registry stores do every
// --etcd-count-metric-poll-period: it sets apiserver_resource_objects
// {group,resource} (-1 when the storage could not count), with size-based list
// estimates apiserver_resource_size_estimate_bytes{group,resource} (their
// average size times their number; -1 when the storage failed, or knows
// no size of objects it has) and, with API Priority and Fairness, the
// stats its list work estimates read (flowcontrol.ObjectCounts; stats of
// resources not seen for an hour are pruned). They are the watch cache's
// while it is ready (no etcd request: its size and the stored bytes its
// etcd watch last read), else etcd's count-only range read of the
// resource's keys, without a size, as kube-apiserver's etcd3 store
// without a watch cache. A resource served from another's storage
// (events.k8s.io events) is counted from that storage.
type objectCounts struct {
	resources []countedResource
	gauge     *prometheus.GaugeVec
	sizes     *prometheus.GaugeVec      // nil with object-count list estimates
	tracker   *flowcontrol.ObjectCounts // nil without API Priority and Fairness
	period    time.Duration
	log       *slog.Logger
}

// countedResource is one resource and the storage that reports its stats.
type countedResource struct {
	gr      schema.GroupResource
	counter storage.StatsReporter
}

// newObjectCounts returns nil when period is negative (no polling). With
// sizes it also exports apiserver_resource_size_estimate_bytes, as
// kube-apiserver with SizeBasedListCostEstimate.
func newObjectCounts(reg prometheus.Registerer, resources []countedResource, tracker *flowcontrol.ObjectCounts,
	sizes bool, period time.Duration, log *slog.Logger) (*objectCounts, error) {
	if period < 0 {
		return nil, nil
	}
	if period == 0 {
		period = flowcontrol.ObjectCountPollPeriod
	}
	// kube-apiserver 1.37 also defines apiserver_storage_objects{resource}
	// (STABLE, deprecated since 1.34.0), but hides it: component-base
	// hides a STABLE metric from the third minor release after its
	// deprecation on (1.37 here), shown again only with
	// --show-hidden-metrics-for-version, a flag kubeproof's API server
	// does not have. Its replacement is this one.
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_resource_objects",
		Help: stability.Alpha.Help("Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1."),
	}, []string{"group", "resource"})
	if err := reg.Register(gauge); err != nil {
		return nil, err
	}
	o := &objectCounts{resources: resources, gauge: gauge, tracker: tracker, period: period, log: log}
	if sizes {
		o.sizes = prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "apiserver_resource_size_estimate_bytes",
			Help: stability.Alpha.Help("Estimated size of stored objects in database. Estimate is based on sum of last observed sizes of serialized objects. In case of a fetching error, the value will be -1."),
		}, []string{"group", "resource"})
		if err := reg.Register(o.sizes); err != nil {
			return nil, err
		}
	}
	sort.Slice(resources, func(i, j int) bool { return resources[i].gr.String() < resources[j].gr.String() })
	return o, nil
}

// run counts at once, then every period, until ctx ends.
func (o *objectCounts) run(ctx context.Context) {
	poll := time.NewTicker(o.period)
	defer poll.Stop()
	prune := time.NewTicker(flowcontrol.ObjectCountPruneAfter)
	defer prune.Stop()
	o.countAll(ctx)
	for {
		select {
		case <-ctx.Done():
			return
		case <-prune.C:
			if o.tracker != nil {
				o.tracker.Prune()
			}
		case <-poll.C:
			o.countAll(ctx)
		}
	}
}

// countAll counts every resource once.
func (o *objectCounts) countAll(ctx context.Context) {
	for _, r := range o.resources {
		if ctx.Err() != nil {
			return
		}
		cctx, cancel := context.WithTimeout(ctx, o.period)
		st, err := r.counter.Stats(cctx)
		cancel()
		name := r.gr.String()
		count, size := float64(st.ObjectCount), float64(st.ObjectCount*st.EstimatedAverageObjectSizeBytes)
		switch {
		case err != nil:
			if ctx.Err() == nil {
				o.log.Debug("counting stored objects", "resource", name, "err", err)
			}
			count, size = -1, -1
		case st.ObjectCount > 0 && st.EstimatedAverageObjectSizeBytes <= 0:
			size = -1
		}
		o.gauge.WithLabelValues(r.gr.Group, r.gr.Resource).Set(count)
		if o.sizes != nil {
			o.sizes.WithLabelValues(r.gr.Group, r.gr.Resource).Set(size)
		}
		if o.tracker != nil && err == nil {
			o.tracker.Set(name, st)
		}
	}
}

// countedResources are the served resources whose storage reports its
// objects' stats, each group/resource once.
func (s *Server) countedResources() []countedResource {
	var out []countedResource
	seen := map[string]bool{}
	for _, r := range s.cfg.Resources {
		gr := r.GroupVersionResource().GroupResource()
		from := gr
		if r.SharedStorage != nil {
			from = r.SharedStorage.Of.GroupResource()
		}
		e, ok := s.stores[from]
		counter, canCount := e.store.(storage.StatsReporter)
		if !ok || !canCount || seen[gr.String()] {
			continue
		}
		seen[gr.String()] = true
		out = append(out, countedResource{gr: gr, counter: counter})
	}
	return out
}
