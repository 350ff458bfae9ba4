// Package clustertest starts an in-process kubeproof control plane for tests:
// embedded etcd without fsync, an API server on a free loopback port, and an
// admin client. It stops when the test ends.
package clustertest

import (
	"context"
	"testing"

	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// Options adjust the cluster; the zero value is a cluster with the watch
// cache on.
type Options struct {
	// NoWatchCache serves every read straight from etcd.
	NoWatchCache bool
	// EtcdOverGRPC makes the API server reach the embedded etcd over gRPC
	// instead of in-process (cluster.Config.EtcdOverGRPC).
	EtcdOverGRPC bool
}

// Start starts a cluster for t and returns it with an admin clientset.
func Start(t testing.TB, opts Options) (*cluster.Cluster, kubernetes.Interface) {
	t.Helper()
	c, err := cluster.Start(context.Background(), cluster.Config{
		DataDir:            t.TempDir(),
		BindAddress:        "127.0.0.1:0",
		WatchCache:         !opts.NoWatchCache,
		EtcdOverGRPC:       opts.EtcdOverGRPC,
		CompactionInterval: -1,
		UnsafeNoFsync:      true,
	})
	if err != nil {
		t.Fatalf("starting cluster: %v", err)
	}
	t.Cleanup(func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping cluster: %v", err)
		}
	})
	cs, err := c.Client()
	if err != nil {
		t.Fatalf("building client: %v", err)
	}
	return c, cs
}
