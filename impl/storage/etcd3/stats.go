package etcd3

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubeproof/kubeproof/impl/storage"
)

var _ storage.StatsReporter = (*Store)(nil)

// Stats counts the objects of the store's resource: etcd's count of the
// keys under its prefix (a count-only range read, no values). The store
// alone does not know their sizes (EstimatedAverageObjectSizeBytes 0), as
// kube-apiserver's etcd3 store whose resource has no watch cache: the
// watch cache keeps them (cacher.Cacher.Stats) from the values this store
// reads for it (storage.WithValueSizes).
func (s *Store) Stats(ctx context.Context) (storage.Stats, error) {
	start := time.Now()
	resp, err := s.client.KV.Get(ctx, s.pathPrefix+s.resource.ResourcePrefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	s.metrics.observe(ctx, "listWithCount", s.mlabels, start, err)
	if err != nil {
		return storage.Stats{}, s.etcdError(s.resource.ResourcePrefix, "count", err)
	}
	return storage.Stats{ObjectCount: resp.Count}, nil
}
