// Package storagebackend builds the store of each resource: direct etcd
// (package etcd3) or a watch cache in front of it (package cacher), so the
// two can be compared for consistency. It also runs the periodic etcd
// compaction kube-apiserver runs.
package storagebackend

import (
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	clientv3 "go.etcd.io/etcd/client/v3"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/compact"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
)

// Config configures a Factory.
type Config struct {
	// Client talks to etcd.
	Client *clientv3.Client
	// NewWatcher gives each etcd watch a Watcher of its own; nil means
	// clientv3.NewWatcher(Client). Required with an in-process client
	// (embedded.Etcd.InProcessClient: pass embedded.Etcd.NewWatcher).
	NewWatcher func() clientv3.Watcher
	// Prefix is the etcd key prefix of every object; "" means "/registry".
	Prefix string
	// WatchCache puts a watch cache in front of each resource's etcd store,
	// except the resources kube-apiserver serves from etcd by default
	// (uncached).
	WatchCache bool
	// CompactionInterval is how often etcd's history is compacted
	// (kube-apiserver's --etcd-compaction-interval, default
	// compact.DefaultInterval); 0 disables compaction.
	CompactionInterval time.Duration
	// Metrics receives etcd_request_duration_seconds and friends; nil
	// records nothing.
	Metrics prometheus.Registerer
	// BookmarkInterval is how often watches that allow bookmarks get one;
	// 0 means one minute.
	BookmarkInterval time.Duration
	// Logger; nil means slog.Default().
	Logger *slog.Logger
}

// uncached tells whether a resource is served straight from etcd even with
// the watch cache on. As kube-apiserver's default watch cache sizes
// (events 0), these are events: written for every step of every pod and
// rarely read, a cache would keep each one decoded, with its selectable
// fields, for the event's whole TTL (at 30,000 pods, ~120,000 events and
// ~140 MB of heap in one process, which every garbage collection marks).
// The API servers' leases (masterleases: a handful of keys, listed every
// ten seconds, never watched) are read from etcd too, as kube-apiserver's.
func uncached(gr schema.GroupResource) bool {
	return (gr.Resource == "events" && (gr.Group == "" || gr.Group == "events.k8s.io")) ||
		(gr.Resource == "masterleases" && gr.Group == "")
}

// Factory builds stores on one etcd. It implements storage.Factory.
type Factory struct {
	cfg     Config
	metrics *etcd3.Metrics
	// terminated is apiserver_terminated_watchers_total{group,resource};
	// nil without Config.Metrics.
	terminated *prometheus.CounterVec
	compactor  *compact.Compactor
	log        *slog.Logger

	mu      sync.Mutex
	closed  bool
	destroy map[int]storage.DestroyFunc
	nextID  int
}

var _ storage.Factory = (*Factory)(nil)

// NewFactory returns a Factory and starts periodic compaction when
// cfg.CompactionInterval > 0. Close stops it.
func NewFactory(cfg Config) *Factory {
	logger := cfg.Logger
	if logger == nil {
		logger = slog.Default()
	}
	m, err := etcd3.NewMetrics(cfg.Metrics)
	if err != nil {
		logger.Warn("registering etcd metrics failed; continuing without them", "err", err)
		m = nil
	}
	f := &Factory{cfg: cfg, metrics: m, log: logger, destroy: map[int]storage.DestroyFunc{}}
	if cfg.Metrics != nil && cfg.WatchCache {
		if f.terminated, err = registerTerminatedWatchers(cfg.Metrics); err != nil {
			logger.Warn("registering watch cache metrics failed; continuing without them", "err", err)
		}
	}
	if cfg.Client != nil {
		f.compactor = compact.Start(cfg.Client, cfg.CompactionInterval, logger)
	}
	return f
}

// New implements storage.Factory.
func (f *Factory) New(res storage.ResourceConfig) (storage.Interface, storage.DestroyFunc, error) {
	if f.cfg.Client == nil {
		return nil, nil, errors.New("storagebackend: Config.Client is required")
	}
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return nil, nil, errors.New("storagebackend: factory closed")
	}
	f.mu.Unlock()

	store, err := etcd3.New(etcd3.Config{
		Client:           f.cfg.Client,
		NewWatcher:       f.cfg.NewWatcher,
		Prefix:           f.cfg.Prefix,
		Resource:         res,
		Metrics:          f.metrics,
		BookmarkInterval: f.cfg.BookmarkInterval,
		Logger:           f.log,
	})
	if err != nil {
		return nil, nil, fmt.Errorf("storage for %s: %w", res.GroupResource, err)
	}
	var (
		iface   storage.Interface = store
		destroy                   = store.Close
	)
	if f.cfg.WatchCache && !uncached(res.GroupResource) {
		var terminated prometheus.Counter
		if f.terminated != nil {
			terminated = f.terminated.WithLabelValues(res.GroupResource.Group, res.GroupResource.Resource)
		}
		c, err := newCacher(store, res, f.cfg, terminated, f.log)
		if err != nil {
			store.Close()
			return nil, nil, fmt.Errorf("watch cache for %s: %w", res.GroupResource, err)
		}
		iface = c
		destroy = func() { c.Stop(); store.Close() }
	}
	return iface, f.track(destroy), nil
}

// track remembers destroy so Close can run it, and returns a DestroyFunc
// that runs it once.
func (f *Factory) track(destroy func()) storage.DestroyFunc {
	f.mu.Lock()
	id := f.nextID
	f.nextID++
	f.destroy[id] = destroy
	f.mu.Unlock()
	return func() {
		f.mu.Lock()
		d, ok := f.destroy[id]
		delete(f.destroy, id)
		f.mu.Unlock()
		if ok {
			d()
		}
	}
}

// Close stops compaction and destroys every store not destroyed yet. It
// does not close the etcd client.
func (f *Factory) Close() {
	f.mu.Lock()
	f.closed = true
	pending := f.destroy
	f.destroy = map[int]storage.DestroyFunc{}
	f.mu.Unlock()
	for _, d := range pending {
		d()
	}
	if f.compactor != nil {
		f.compactor.Stop()
	}
}
