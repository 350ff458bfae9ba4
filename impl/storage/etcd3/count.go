package etcd3

import (
	"context"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubeproof/kubeproof/impl/storage"
)

var _ storage.ObjectCounter = (*Store)(nil)

// ObjectCount is the number of objects of the store's resource: etcd's
// count of the keys under its prefix (a count-only range read, no values).
func (s *Store) ObjectCount(ctx context.Context) (int64, error) {
	start := time.Now()
	resp, err := s.client.KV.Get(ctx, s.pathPrefix+s.resource.ResourcePrefix+"/", clientv3.WithPrefix(), clientv3.WithCountOnly())
	s.metrics.observe("count", s.typ, start, err)
	if err != nil {
		return 0, s.etcdError(s.resource.ResourcePrefix, "count", err)
	}
	return resp.Count, nil
}
