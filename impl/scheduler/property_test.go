package scheduler

import (
	"context"
	"errors"
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"pgregory.net/rapid"

	schedcache "github.com/kubeproof/kubeproof/impl/scheduler/cache"
	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

type genNode struct {
	name    string
	milli   int64
	pods    int64
	zone    string
	tainted bool
}

type genPod struct {
	milli     int64
	tolerates bool
	zone      string // nodeSelector; "" for none
}

// oracleFits is an independent statement of what the default filters must
// enforce for these pods: capacity (SCHED-2), taints (SCHED-3), selector.
func oracleFits(p genPod, n genNode, usedMilli int64, usedPods int64) bool {
	return usedMilli+p.milli <= n.milli && usedPods+1 <= n.pods &&
		(!n.tainted || p.tolerates) && (p.zone == "" || p.zone == n.zone)
}

// TestSchedulingDecisionsRespectCapacityTaintsAndSelectors drives the pure
// core (snapshot → SchedulePod → assume) over random clusters: every pod it
// places fits its node given all earlier placements, and every pod it
// rejects fits no node.
func TestSchedulingDecisionsRespectCapacityTaintsAndSelectors(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		numNodes := rapid.IntRange(1, 8).Draw(rt, "nodes")
		nodes := make([]genNode, numNodes)
		c := schedcache.New(0, nil)
		for i := range nodes {
			nodes[i] = genNode{
				name:    fmt.Sprintf("n%d", i),
				milli:   rapid.Int64Range(1, 8).Draw(rt, "cpu") * 1000,
				pods:    rapid.Int64Range(1, 6).Draw(rt, "maxPods"),
				zone:    rapid.SampledFrom([]string{"a", "b"}).Draw(rt, "zone"),
				tainted: rapid.Float64Range(0, 1).Draw(rt, "taint") < 0.3,
			}
			nw := tu.Node(nodes[i].name).Capacity("cpu", fmt.Sprintf("%dm", nodes[i].milli), "memory", "64Gi", "pods", fmt.Sprint(nodes[i].pods)).
				Label("zone", nodes[i].zone)
			if nodes[i].tainted {
				nw = nw.Taint("dedicated", "x", v1.TaintEffectNoSchedule)
			}
			c.AddNode(nw.Obj())
		}
		snap := schedcache.NewEmptySnapshot()
		f, err := fw.NewFramework(context.Background(), plugins.NewInTreeRegistry(),
			&config.KubeSchedulerProfile{SchedulerName: config.DefaultSchedulerName}, fw.WithSnapshotSharedLister(snap), fw.WithParallelism(2))
		if err != nil {
			rt.Fatal(err)
		}
		algo := NewAlgorithm(0, rapid.Int64().Draw(rt, "seed"))
		usedMilli := map[string]int64{}
		usedPods := map[string]int64{}
		numPods := rapid.IntRange(1, 40).Draw(rt, "pods")
		for i := 0; i < numPods; i++ {
			gp := genPod{
				milli:     rapid.Int64Range(1, 30).Draw(rt, "podCPU") * 100,
				tolerates: rapid.Bool().Draw(rt, "tolerates"),
				zone:      rapid.SampledFrom([]string{"", "", "a", "b"}).Draw(rt, "selector"),
			}
			pw := tu.Pod(fmt.Sprintf("p%d", i)).Req("cpu", fmt.Sprintf("%dm", gp.milli))
			if gp.tolerates {
				pw = pw.Toleration(v1.Toleration{Key: "dedicated", Operator: v1.TolerationOpExists})
			}
			if gp.zone != "" {
				pw = pw.NodeSelector(map[string]string{"zone": gp.zone})
			}
			pod := pw.Obj()
			pod.UID = types.UID(fmt.Sprintf("uid-%d", i))
			if err := c.UpdateSnapshot(snap); err != nil {
				rt.Fatal(err)
			}
			res, err := algo.SchedulePod(context.Background(), f, fw.NewCycleState(), pod, snap)
			var fe *fw.FitError
			switch {
			case err == nil:
				var n genNode
				for _, cand := range nodes {
					if cand.name == res.SuggestedHost {
						n = cand
					}
				}
				if !oracleFits(gp, n, usedMilli[n.name], usedPods[n.name]) {
					rt.Fatalf("pod %d (%+v) placed on %+v with %dm/%d pods used", i, gp, n, usedMilli[n.name], usedPods[n.name])
				}
				usedMilli[n.name] += gp.milli
				usedPods[n.name]++
				assumed := pod.DeepCopy()
				assumed.Spec.NodeName = n.name
				if err := c.AssumePod(assumed); err != nil {
					rt.Fatal(err)
				}
			case errors.As(err, &fe):
				for _, n := range nodes {
					if oracleFits(gp, n, usedMilli[n.name], usedPods[n.name]) {
						rt.Fatalf("pod %d (%+v) rejected (%v) but fits %+v", i, gp, fe, n)
					}
				}
				if len(fe.Diagnosis.NodeToStatus) != numNodes {
					rt.Fatalf("diagnosis covers %d of %d nodes", len(fe.Diagnosis.NodeToStatus), numNodes)
				}
			default:
				rt.Fatalf("unexpected error: %v", err)
			}
		}
		// The cache agrees with the decisions.
		if err := c.UpdateSnapshot(snap); err != nil {
			rt.Fatal(err)
		}
		for _, n := range nodes {
			ni, _ := snap.Get(n.name)
			if ni.Requested.MilliCPU != usedMilli[n.name] || int64(len(ni.Pods)) != usedPods[n.name] {
				rt.Fatalf("node %s: cache has %dm/%d pods, decisions %dm/%d", n.name, ni.Requested.MilliCPU, len(ni.Pods), usedMilli[n.name], usedPods[n.name])
			}
		}
	})
}
