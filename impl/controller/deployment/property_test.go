package deployment

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"pgregory.net/rapid"
)

// TestRolloutProperties drives the Deployment decision through random
// interleavings of syncs, scaling, template changes (including rollbacks),
// strategy changes between rollouts and pods becoming ready, and checks
// after every sync:
//   - DEP-1: once the controller has observed the current generation, the
//     ReplicaSets' replicas total at most replicas + maxSurge — or, after a
//     proportional scale-down whose rounding's leftover the first
//     ReplicaSet could not take (upstream's scale clamps it at 0), no more
//     than before, until within the bound;
//   - DEP-2: a rollout step (not a scaling event) never takes the number of
//     available pods below min(available before, replicas − maxUnavailable).
func TestRolloutProperties(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		w := newWorld(t, newDeployment(int32(rapid.IntRange(0, 8).Draw(rt, "replicas")), "v0",
			intstr.FromInt32(int32(rapid.IntRange(0, 3).Draw(rt, "surge"))), intstr.FromInt32(int32(rapid.IntRange(0, 3).Draw(rt, "unavailable")))))
		available := func() int32 {
			var n int32
			for name := range w.rss {
				n += w.ready[name]
			}
			return n
		}
		leftover := false // the total is above the bound after a proportional scale-down
		rt.Repeat(map[string]func(*rapid.T){
			"sync": func(rt *rapid.T) {
				p := &planner{d: w.d.DeepCopy()}
				owned := w.list()
				scaling := p.d.Spec.Paused || p.isScalingEvent(owned)
				scalingDown := !p.d.Spec.Paused && scaling && *p.d.Spec.Replicas+MaxSurge(p.d) < sumSpec(owned)
				before, totalBefore := available(), sumSpec(owned)
				w.syncDeployment()
				w.applyPodChanges()
				d := w.d
				if d.Status.ObservedGeneration == d.Generation {
					// Upstream's proportional scale-down can leave the total above
					// the bound (its rounding's leftover clamped at 0 on the first
					// ReplicaSet: TestProportionalScaleDownLeavesLeftoverAsUpstream);
					// from there the total may not grow until it is within it.
					total, bound := sumSpec(w.list()), *d.Spec.Replicas+MaxSurge(d)
					switch {
					case total <= bound:
						leftover = false
					case (scalingDown || leftover) && total <= totalBefore:
						leftover = true
					default:
						rt.Fatalf("DEP-1: replicas total %d > %d + %d", total, *d.Spec.Replicas, MaxSurge(d))
					}
				}
				floor := *d.Spec.Replicas - MaxUnavailable(d)
				if after := available(); !scaling && isRollingUpdate(d) && after < min(before, floor) {
					rt.Fatalf("DEP-2: available %d -> %d, below min(before, %d)", before, after, floor)
				}
			},
			"podsBecomeReady": func(rt *rapid.T) {
				for name := range w.rss {
					n := int32(rapid.IntRange(0, int(w.starting[name])).Draw(rt, "ready "+name))
					w.starting[name] -= n
					w.ready[name] += n
				}
				w.refreshStatus()
			},
			"setImage": func(rt *rapid.T) {
				w.setImage(fmt.Sprint("v", rapid.IntRange(0, 3).Draw(rt, "image")))
			},
			"scale": func(rt *rapid.T) {
				w.d.Spec.Replicas = ptr(int32(rapid.IntRange(0, 12).Draw(rt, "to")))
				w.d.Generation++
			},
			"changeStrategy": func(rt *rapid.T) {
				// Lowering maxSurge mid-rollout can leave the total above the new
				// bound until pods become available — upstream does the same —
				// so strategies change only between rollouts here.
				for _, rs := range w.rss {
					if !EqualIgnoreHash(&rs.Spec.Template, &w.d.Spec.Template) && replicas(rs) > 0 {
						rt.Skip("rollout in progress")
					}
				}
				s := intstr.FromInt32(int32(rapid.IntRange(0, 3).Draw(rt, "surge")))
				u := intstr.FromString(fmt.Sprint(rapid.SampledFrom([]int{0, 10, 25, 50}).Draw(rt, "unavailable%"), "%"))
				w.d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
					RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &s, MaxUnavailable: &u}}
				w.d.Generation++
			},
		})
	})
}

// applyPodChanges is the ReplicaSet controller's half of podsTick: surplus
// pods go (not-ready first, as the deletion ranking does) and missing pods
// are created not ready; nothing becomes ready.
func (w *world) applyPodChanges() {
	for name, rs := range w.rss {
		want := replicas(rs)
		for w.starting[name]+w.ready[name] > want {
			if w.starting[name] > 0 {
				w.starting[name]--
			} else {
				w.ready[name]--
			}
		}
		if have := w.starting[name] + w.ready[name]; have < want {
			w.starting[name] += want - have
		}
	}
	w.refreshStatus()
}

func (w *world) refreshStatus() {
	for name, rs := range w.rss {
		rs.Status.Replicas = w.starting[name] + w.ready[name]
		rs.Status.ReadyReplicas = w.ready[name]
		rs.Status.AvailableReplicas = w.ready[name]
		rs.Status.ObservedGeneration = rs.Generation
	}
}
