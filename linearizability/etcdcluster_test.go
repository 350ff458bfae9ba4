package linearizability

import (
	"testing"
	"time"

	"go.etcd.io/etcd/tests/v3/framework/integration"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// quietTB keeps the etcd integration framework's member logs out of the
// test output.
type quietTB struct{ testing.TB }

func (quietTB) Log(...any)                  {}
func (quietTB) Logf(string, ...any)         {}
func (q quietTB) Helper()                   { q.TB.Helper() }
func (q quietTB) Cleanup(f func())          { q.TB.Cleanup(f) }
func (q quietTB) Name() string              { return q.TB.Name() }
func (q quietTB) Fatalf(f string, a ...any) { q.TB.Fatalf(f, a...) }

// Scenario (b): the API server on a 3-member etcd cluster while the
// leader is killed and restarted, partitioned away, or blackholed. Each
// fault gets a fresh cluster (the framework allows one at a time). Members
// listen on unix sockets behind bridges: with UseTCP the v3.6.16 bridge
// dials port 0 and members never come up.
func TestEtcdCluster(t *testing.T) {
	integration.BeforeTestExternal(t)
	for _, tc := range []struct {
		name  string
		fault func(t *testing.T, clus *integration.Cluster)
	}{
		{"leader-kill-restart", func(t *testing.T, clus *integration.Cluster) {
			m := clus.Members[clus.WaitLeader(quietTB{t})]
			m.Stop(quietTB{t})
			time.Sleep(300 * time.Millisecond)
			if err := m.Restart(quietTB{t}); err != nil {
				t.Errorf("restarting etcd member: %v", err)
			}
		}},
		{"leader-partition", func(t *testing.T, clus *integration.Cluster) {
			lead := clus.WaitLeader(quietTB{t})
			m := clus.Members[lead]
			var others []*integration.Member
			for i, o := range clus.Members {
				if i != lead {
					others = append(others, o)
				}
			}
			m.InjectPartition(quietTB{t}, others...)
			time.Sleep(time.Second)
			m.RecoverPartition(quietTB{t}, others...)
		}},
		{"member-blackhole", func(t *testing.T, clus *integration.Cluster) {
			m := clus.Members[clus.WaitLeader(quietTB{t})]
			m.Bridge().Blackhole()
			time.Sleep(time.Second)
			m.Bridge().Unblackhole()
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clus := integration.NewCluster(quietTB{t}, &integration.ClusterConfig{Size: 3, UseBridge: true})
			defer clus.Terminate(quietTB{t})
			var endpoints []string
			for _, m := range clus.Members {
				endpoints = append(endpoints, m.GRPCURL)
			}
			c := startCluster(t, cluster.Config{DataDir: t.TempDir(), EtcdServers: endpoints, WatchCache: true})
			defer func() {
				if err := c.Stop(); err != nil {
					t.Errorf("stopping API server: %v", err)
				}
			}()
			h := recordWithFault(t, RecordConfig{Scenario: "etcd3-" + tc.name, Servers: []*rest.Config{c.AdminConfig}, Namespace: "lin", Duration: scenarioDuration(), OpTimeout: 2 * time.Second},
				func(*Recorder) { tc.fault(t, clus) })
			requireOK(t, h)
		})
	}
}
