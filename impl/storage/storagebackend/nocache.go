package storagebackend

import (
	"errors"
	"log/slog"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
)

// stoppableStore is a store with background work.
type stoppableStore interface {
	storage.Interface
	Stop()
}

// newCacher builds the watch cache of res in front of store.
func newCacher(store *etcd3.Store, res storage.ResourceConfig, cfg Config, log *slog.Logger) (stoppableStore, error) {
	return nil, errors.New("the watch cache is not available yet; run with WatchCache=false")
}
