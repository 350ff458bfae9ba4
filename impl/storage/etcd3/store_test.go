package etcd3_test

import (
	"context"
	"os"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

var etcd *embedded.Etcd

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "etcd3-test")
	if err != nil {
		panic(err)
	}
	etcd, err = embedded.Start(context.Background(), embedded.Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		panic(err)
	}
	code := m.Run()
	etcd.Close()
	os.RemoveAll(dir)
	os.Exit(code)
}

func TestSuite(t *testing.T) {
	storagetest.Run(t, suiteBackend(etcd.Client(), nil))
}

// TestSuiteInProcess runs the same behaviour suite on etcd's in-process
// client (how an API server reaches its embedded etcd): every store
// behaviour, watches included, is the same as over gRPC.
func TestSuiteInProcess(t *testing.T) {
	storagetest.Run(t, suiteBackend(etcd.InProcessClient(), etcd.NewWatcher))
}

// suiteBackend is the behaviour suite's backend whose stores reach etcd
// through client, opening each watch with newWatcher (nil: client's own
// watcher).
func suiteBackend(client *clientv3.Client, newWatcher func() clientv3.Watcher) storagetest.Backend {
	return storagetest.Backend{
		Client: client,
		New: func(t *testing.T, res storage.ResourceConfig) (storage.Interface, storage.DestroyFunc) {
			s, err := etcd3.New(etcd3.Config{
				Client:                      client,
				NewWatcher:                  newWatcher,
				Resource:                    res,
				BookmarkInterval:            100 * time.Millisecond,
				TooLargeResourceVersionWait: 200 * time.Millisecond,
			})
			if err != nil {
				t.Fatal(err)
			}
			return s, s.Close
		},
	}
}
