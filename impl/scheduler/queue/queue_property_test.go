package queue

import (
	"context"
	"fmt"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	corev1helpers "k8s.io/component-helpers/scheduling/corev1"
	"pgregory.net/rapid"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	tu "github.com/kubeproof/kubeproof/impl/scheduler/testutil"
)

// TestQueueStateMachine runs random sequences of queue operations and checks
// after each: every known pod is in exactly one place (a sub-queue, or being
// scheduled, or deleted), nothing is lost or duplicated, and Pop always
// returns an active pod of the highest priority.
func TestQueueStateMachine(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		clock := newClock()
		q := New(less(), WithClock(clock), WithClusterEventInterest(map[string][]fw.ClusterEvent{
			"Fit": {{Resource: fw.Node, ActionType: fw.Add}},
		}))
		pods := map[string]*v1.Pod{}               // created and not deleted
		inFlight := map[string]*fw.QueuedPodInfo{} // popped, not yet returned
		next := 0
		rt.Repeat(map[string]func(*rapid.T){
			"add": func(rt *rapid.T) {
				name := fmt.Sprintf("p%d", next)
				next++
				p := tu.Pod(name).Priority(rapid.Int32Range(0, 3).Draw(rt, "prio")).Obj()
				pods[name] = p
				q.Add(p)
			},
			"pop": func(rt *rapid.T) {
				act, _, _, _ := q.Lengths()
				if act == 0 {
					rt.Skip("nothing active")
				}
				var best int32 = -1
				for name, p := range pods {
					if q.Where(p) == "active" && corev1helpers.PodPriority(pods[name]) > best {
						best = corev1helpers.PodPriority(pods[name])
					}
				}
				ctx, cancel := context.WithTimeout(context.Background(), time.Second)
				defer cancel()
				got, err := q.Pop(ctx)
				if err != nil {
					rt.Fatalf("Pop with %d active: %v", act, err)
				}
				if prio := corev1helpers.PodPriority(got.Pod); prio != best {
					rt.Fatalf("popped priority %d, highest active is %d", prio, best)
				}
				inFlight[got.Pod.Name] = got
			},
			"fail": func(rt *rapid.T) {
				if len(inFlight) == 0 {
					rt.Skip("nothing in flight")
				}
				names := sets.List(sets.KeySet(inFlight))
				name := rapid.SampledFrom(names).Draw(rt, "pod")
				p := inFlight[name]
				delete(inFlight, name)
				if rapid.Bool().Draw(rt, "unschedulable") {
					p.UnschedulablePlugins = sets.New("Fit")
				} else {
					p.UnschedulablePlugins = nil
				}
				if _, alive := pods[name]; alive {
					q.AddUnschedulableIfNotPresent(p, q.SchedulingCycle())
				}
			},
			"bind": func(rt *rapid.T) {
				if len(inFlight) == 0 {
					rt.Skip("nothing in flight")
				}
				name := rapid.SampledFrom(sets.List(sets.KeySet(inFlight))).Draw(rt, "pod")
				delete(inFlight, name)
				delete(pods, name) // bound: no longer the queue's business
			},
			"delete": func(rt *rapid.T) {
				if len(pods) == 0 {
					rt.Skip("no pods")
				}
				name := rapid.SampledFrom(sets.List(sets.KeySet(pods))).Draw(rt, "pod")
				q.Delete(pods[name])
				delete(pods, name)
			},
			"nodeAdded": func(rt *rapid.T) { q.MoveAllToActiveOrBackoffQueue(fw.EventNodeAdd) },
			"labelChanged": func(rt *rapid.T) {
				q.MoveAllToActiveOrBackoffQueue(fw.ClusterEvent{Resource: fw.Node, ActionType: fw.UpdateNodeLabel})
			},
			"tick": func(rt *rapid.T) {
				clock.Step(time.Duration(rapid.IntRange(1, 20).Draw(rt, "seconds")) * time.Second)
				q.FlushBackoffQCompleted()
				q.FlushUnschedulablePodsLeftover()
			},
			"": func(rt *rapid.T) {
				act, bo, un, g := q.Lengths()
				queued := 0
				for name, p := range pods {
					w := q.Where(p)
					_, flying := inFlight[name]
					switch {
					case flying && w != "":
						rt.Fatalf("%s is being scheduled and also in %s", name, w)
					case !flying && w == "":
						rt.Fatalf("%s was lost by the queue", name)
					}
					if w != "" {
						queued++
					}
				}
				if act+bo+un+g != queued {
					rt.Fatalf("queue holds %d pods, %d expected", act+bo+un+g, queued)
				}
			},
		})
	})
}
