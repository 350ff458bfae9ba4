package cacher_test

import (
	"context"
	"os"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/cacher"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

var etcd *embedded.Etcd

func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "cacher-test")
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

// newCacher builds a watch cache of res, ready to serve.
func newCacher(t testing.TB, res storage.ResourceConfig, tune func(*cacher.Config)) (*cacher.Cacher, *etcd3.Store) {
	t.Helper()
	return newCacherOn(t, etcd3.Config{Client: etcd.Client()}, res, tune)
}

// newCacherOn is newCacher on the etcd client (and watchers) of base.
func newCacherOn(t testing.TB, base etcd3.Config, res storage.ResourceConfig, tune func(*cacher.Config)) (*cacher.Cacher, *etcd3.Store) {
	t.Helper()
	s, err := etcd3.New(etcd3.Config{
		Client:                      base.Client,
		NewWatcher:                  base.NewWatcher,
		Resource:                    res,
		BookmarkInterval:            100 * time.Millisecond,
		TooLargeResourceVersionWait: 200 * time.Millisecond,
	})
	if err != nil {
		t.Fatal(err)
	}
	cfg := cacher.Config{Store: s, Resource: res, TooLargeResourceVersionWait: 500 * time.Millisecond,
		BookmarkFrequency: 100 * time.Millisecond}
	if res.GroupResource.Resource == "pods" {
		cfg.IndexField = "spec.nodeName"
	}
	if tune != nil {
		tune(&cfg)
	}
	c, err := cacher.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := c.WaitReady(ctx); err != nil {
		t.Fatal(err)
	}
	return c, s
}

func TestSuite(t *testing.T) {
	storagetest.Run(t, storagetest.Backend{
		Client: etcd.Client(),
		New: func(t *testing.T, res storage.ResourceConfig) (storage.Interface, storage.DestroyFunc) {
			c, s := newCacher(t, res, nil)
			return c, func() { c.Stop(); s.Close() }
		},
	})
}

// TestSuiteInProcess runs the suite with the watch cache on etcd's
// in-process client (how the API server reaches its embedded etcd).
func TestSuiteInProcess(t *testing.T) {
	inProcess := etcd3.Config{Client: etcd.InProcessClient(), NewWatcher: etcd.NewWatcher}
	storagetest.Run(t, storagetest.Backend{
		Client: etcd.InProcessClient(),
		New: func(t *testing.T, res storage.ResourceConfig) (storage.Interface, storage.DestroyFunc) {
			c, s := newCacherOn(t, inProcess, res, nil)
			return c, func() { c.Stop(); s.Close() }
		},
	})
}
