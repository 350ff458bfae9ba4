package props

import (
	"fmt"
	"sort"
	"sync/atomic"
	"testing"

	"go.etcd.io/etcd/tests/v3/framework/integration"
	"pgregory.net/rapid"
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

// TestEtcdMemberLoss is the property test on a 3-member etcd cluster
// (go.etcd.io/etcd/tests/v3's integration framework; members behind
// bridges): besides user operations and node failures, a member — often
// the leader — is stopped mid-run and later restarted. The API server's
// etcd client must fail over to the other members; every safety property
// must hold on every observed state and the cluster must converge once the
// member is back. Its budget is PROPS_ETCD_CHECKS runs (default 2) of up to
// PROPS_STEPS actions.
func TestEtcdMemberLoss(t *testing.T) {
	if testing.Short() {
		return
	}
	integration.BeforeTestExternal(t)
	clus := integration.NewCluster(quietTB{t}, &integration.ClusterConfig{Size: 3, UseBridge: true})
	defer clus.Terminate(quietTB{t})
	var endpoints []string
	for _, m := range clus.Members {
		endpoints = append(endpoints, m.GRPCURL)
	}
	c := startClusterWith(t, endpoints)
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping cluster: %v", err)
		}
	}()
	client, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	m, err := NewModel(nodeMaxPods)
	if err != nil {
		t.Fatal(err)
	}
	setFlag(t, "rapid.checks", fmt.Sprint(envInt("PROPS_ETCD_CHECKS", 2)))
	setFlag(t, "rapid.nofailfile", "true")
	var run atomic.Int64
	var losses atomic.Int64
	rapid.Check(t, func(rt *rapid.T) {
		h := newHarness(rt, c, client, m, c.Runtimes(), fmt.Sprintf("etcd-%d", run.Add(1)))
		defer h.close()
		stopped := -1
		restart := func() {
			if stopped < 0 {
				return
			}
			h.step("restart etcd member %d", stopped)
			if err := clus.Members[stopped].Restart(quietTB{t}); err != nil {
				rt.Fatalf("restarting etcd member %d: %v", stopped, err)
			}
			stopped = -1
			h.check()
		}
		defer restart()
		acts := map[string]func(*rapid.T){
			"create":      h.create,
			"scale":       h.scale,
			"updateImage": h.updateImage,
			"deletePod":   h.deletePod,
			"failRecover": h.failNode,
			"probeList":   h.probeQuorumList,
			"probeWatch":  h.probeWatchResume,
			"memberLoss": func(rt *rapid.T) {
				if stopped >= 0 {
					restart()
					return
				}
				lead := clus.WaitLeader(quietTB{t})
				i := lead
				if !rapid.Bool().Draw(rt, "leader") {
					i = (lead + 1 + rapid.IntRange(0, 1).Draw(rt, "follower")) % 3
				}
				h.step("stop etcd member %d (leader is %d)", i, lead)
				clus.Members[i].Stop(quietTB{t})
				stopped = i
				losses.Add(1)
				stats.faults.Add(1)
				h.check()
			},
		}
		names := make([]string, 0, len(acts))
		for n := range acts {
			names = append(names, n)
		}
		sort.Strings(names)
		h.create(rt)
		acts["memberLoss"](rt) // every run loses a member at least once
		steps := rapid.IntRange(1, maxSteps()).Draw(rt, "steps")
		for i := 0; i < steps; i++ {
			acts[rapid.SampledFrom(names).Draw(rt, "action")](rt)
		}
		restart()
		h.converge()
	})
	t.Logf("etcd member loss: %d runs, %d members stopped and restarted", run.Load(), losses.Load())
}
