package storagebackend

import (
	"context"
	"log/slog"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/cacher"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
)

// indexFields are the fields the watch cache indexes watchers by, per
// resource: the kubelet watches its pods by spec.nodeName.
var indexFields = map[string]string{
	"pods": "spec.nodeName",
}

// newCacher starts the watch cache of res in front of store and waits until
// it has listed, so that it can serve watches from any revision written
// after New returns.
func newCacher(store *etcd3.Store, res storage.ResourceConfig, cfg Config, terminated prometheus.Counter, log *slog.Logger) (*cacher.Cacher, error) {
	idx := ""
	if res.GroupResource.Group == "" {
		idx = indexFields[res.GroupResource.Resource]
	}
	c, err := cacher.New(cacher.Config{
		Store:      store,
		Resource:   res,
		IndexField: idx,
		Logger:     log,
		// The cache's watchers get their bookmarks from the cache, as
		// often as the etcd store's would.
		BookmarkFrequency:  cfg.BookmarkInterval,
		TerminatedWatchers: terminated,
	})
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		c.Stop()
		return nil, err
	}
	return c, nil
}

// registerTerminatedWatchers registers kube-apiserver's
// apiserver_terminated_watchers_total{group,resource} on reg, or returns
// the one registered there already (several factories may share a
// registry).
func registerTerminatedWatchers(reg prometheus.Registerer) (*prometheus.CounterVec, error) {
	return etcd3.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "apiserver_terminated_watchers_total",
		Help: stability.Alpha.Help("Watchers the watch cache closed because they could not keep up with its events, by resource."),
	}, []string{"group", "resource"}))
}
