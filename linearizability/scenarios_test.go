package linearizability

import (
	"context"
	"net/url"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster"
	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// recordWithFault records a history and calls fault once, halfway through.
func recordWithFault(t *testing.T, cfg RecordConfig, fault func(rec *Recorder)) *History {
	t.Helper()
	rec, err := NewRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	var h *History
	var runErr error
	go func() {
		defer close(done)
		h, runErr = rec.Run(context.Background())
	}()
	select {
	case <-time.After(cfg.Duration / 2):
		fault(rec)
	case <-done:
	}
	<-done
	if runErr != nil {
		t.Fatal(runErr)
	}
	return h
}

func startCluster(t *testing.T, cfg cluster.Config) *cluster.Cluster {
	t.Helper()
	if cfg.BindAddress == "" {
		cfg.BindAddress = "127.0.0.1:0"
	}
	cfg.CompactionInterval, cfg.UnsafeNoFsync = -1, true
	c, err := cluster.Start(context.Background(), cfg)
	if err != nil {
		t.Fatalf("starting cluster: %v", err)
	}
	return c
}

// Scenario (c): two API servers on one etcd, clients spread over both.
func TestTwoAPIServers(t *testing.T) {
	a, _ := clustertest.Start(t, clustertest.Options{})
	b := startCluster(t, cluster.Config{DataDir: t.TempDir(), EtcdServers: a.EtcdClient.Endpoints(), WatchCache: true})
	t.Cleanup(func() {
		if err := b.Stop(); err != nil {
			t.Errorf("stopping second API server: %v", err)
		}
	})
	h := record(t, RecordConfig{Scenario: "two-apiservers", Servers: []*rest.Config{a.AdminConfig, b.AdminConfig}, Namespace: "lin", Duration: scenarioDuration(), Watchers: 4})
	requireOK(t, h)
}

// Scenario (d): the API server (and its embedded etcd) restarts in the
// middle of a history.
func TestAPIServerRestart(t *testing.T) {
	for _, tc := range []struct {
		name       string
		watchCache bool
	}{{"watchcache", true}, {"nowatchcache", false}} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			c := startCluster(t, cluster.Config{DataDir: dir, WatchCache: tc.watchCache})
			u, err := url.Parse(c.URL)
			if err != nil {
				t.Fatal(err)
			}
			h := recordWithFault(t, RecordConfig{Scenario: "restart-" + tc.name, Servers: []*rest.Config{c.AdminConfig}, Namespace: "lin", Duration: scenarioDuration(), OpTimeout: 2 * time.Second},
				func(rec *Recorder) {
					if err := c.Stop(); err != nil {
						t.Errorf("stopping: %v", err)
					}
					c = startCluster(t, cluster.Config{DataDir: dir, BindAddress: u.Host, WatchCache: tc.watchCache})
				})
			if err := c.Stop(); err != nil {
				t.Errorf("stopping: %v", err)
			}
			requireOK(t, h)
		})
	}
}

// Scenario (e): etcd is compacted in the middle of a history. Without a
// watch cache the server must answer 410 Expired exactly for compacted
// revisions.
func TestCompaction(t *testing.T) {
	for _, tc := range []struct {
		name         string
		noWatchCache bool
	}{{"watchcache", false}, {"nowatchcache", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := clustertest.Start(t, clustertest.Options{NoWatchCache: tc.noWatchCache})
			h := recordWithFault(t, RecordConfig{Scenario: "compaction-" + tc.name, Servers: []*rest.Config{c.AdminConfig}, Namespace: "lin", Duration: scenarioDuration(), Watchers: 4, ExpiredExact: tc.noWatchCache},
				func(rec *Recorder) {
					ctx := context.Background()
					resp, err := c.EtcdClient.Get(ctx, "compaction-probe")
					if err != nil {
						t.Errorf("reading the etcd revision: %v", err)
						return
					}
					call := rec.Now()
					if _, err := c.EtcdClient.Compact(ctx, resp.Header.Revision); err != nil {
						t.Errorf("compacting: %v", err)
						return
					}
					rec.AddCompaction(Compaction{Call: call, Return: rec.Now(), Revision: resp.Header.Revision})
					rec.Probe(ctx, resp.Header.Revision-2) // compacted
					rec.Probe(ctx, resp.Header.Revision)   // not compacted
				})
			requireOK(t, h)
			expired := 0
			for _, w := range h.Watches {
				if w.Outcome == Expired {
					expired++
				}
			}
			lists := 0
			for _, o := range h.Ops {
				if o.Kind == List && o.Outcome == Expired {
					lists++
				}
			}
			t.Logf("%d watches and %d lists expired", expired, lists)
			if tc.noWatchCache && (expired == 0 || lists == 0) {
				t.Errorf("no 410 Expired for a compacted revision")
			}
		})
	}
}
