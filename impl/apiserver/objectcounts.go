package apiserver

import (
	"context"
	"log/slog"
	"sort"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/apiserver/flowcontrol"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// objectCounts polls the number of stored objects of every served
// resource, as kube-apiserver's registry stores do every
// --etcd-count-metric-poll-period: it sets apiserver_storage_objects
// {resource} (-1 when the storage could not count) and, with API Priority
// and Fairness, the counts its list work estimates read
// (flowcontrol.ObjectCounts; counts of resources not seen for an hour are
// pruned). The count is the watch cache's size while it is ready (no etcd
// request), else etcd's count-only range read of the resource's keys
// (storage.ObjectCounter). A resource served from another's storage
// (events.k8s.io events) is counted from that storage.
type objectCounts struct {
	resources []countedResource
	gauge     *prometheus.GaugeVec
	tracker   *flowcontrol.ObjectCounts // nil without API Priority and Fairness
	period    time.Duration
	log       *slog.Logger
}

// countedResource is one resource and the storage that counts it.
type countedResource struct {
	name    string // resource[.group]
	counter storage.ObjectCounter
}

// newObjectCounts returns nil when period is negative (no polling).
func newObjectCounts(reg prometheus.Registerer, resources []countedResource, tracker *flowcontrol.ObjectCounts,
	period time.Duration, log *slog.Logger) (*objectCounts, error) {
	if period < 0 {
		return nil, nil
	}
	if period == 0 {
		period = flowcontrol.ObjectCountPollPeriod
	}
	gauge := prometheus.NewGaugeVec(prometheus.GaugeOpts{
		Name: "apiserver_storage_objects",
		Help: "Objects stored per resource at the last count (-1: the storage could not count them).",
	}, []string{"resource"})
	if err := reg.Register(gauge); err != nil {
		return nil, err
	}
	sort.Slice(resources, func(i, j int) bool { return resources[i].name < resources[j].name })
	return &objectCounts{resources: resources, gauge: gauge, tracker: tracker, period: period, log: log}, nil
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
		n, err := r.counter.ObjectCount(cctx)
		cancel()
		if err != nil {
			if ctx.Err() == nil {
				o.log.Debug("counting stored objects", "resource", r.name, "err", err)
			}
			n = -1
		}
		o.gauge.WithLabelValues(r.name).Set(float64(n))
		if o.tracker != nil {
			o.tracker.Set(r.name, n)
		}
	}
}

// countedResources are the served resources whose storage can count its
// objects, each group/resource once.
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
		counter, canCount := e.store.(storage.ObjectCounter)
		if !ok || !canCount || seen[gr.String()] {
			continue
		}
		seen[gr.String()] = true
		out = append(out, countedResource{name: gr.String(), counter: counter})
	}
	return out
}
