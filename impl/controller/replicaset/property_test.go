package replicaset

import (
	"fmt"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"pgregory.net/rapid"

	"github.com/kubeproof/kubeproof/impl/controller/expectations"
)

type podEvent struct {
	added bool
	pod   *corev1.Pod
}

// TestNoOvercreationWithLaggingCache checks RS-1 over random interleavings:
// the controller decides from a cache that receives the API's pod events
// late (in order), while users scale the ReplicaSet and delete pods. A sync
// creates pods only while the API really holds fewer active pods than
// spec.replicas, and never more than the difference.
func TestNoOvercreationWithLaggingCache(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		rs := newRS("web", int32(rapid.IntRange(0, 6).Draw(rt, "replicas")))
		exp := expectations.New(clocktesting.NewFakePassiveClock(now))
		key := "ns/web"
		api := map[string]*corev1.Pod{} // the truth
		cache := map[string]*corev1.Pod{}
		var pending []podEvent
		seq := 0
		list := func(m map[string]*corev1.Pod) []*corev1.Pod {
			var out []*corev1.Pod
			for _, p := range m {
				out = append(out, p)
			}
			return out
		}
		rt.Repeat(map[string]func(*rapid.T){
			"sync": func(rt *rapid.T) {
				plan, err := Decide(Observed{RS: rs, Pods: list(cache), ExpectationsSatisfied: exp.Satisfied(key), Now: now})
				if err != nil {
					rt.Fatal(err)
				}
				if plan.Create > 0 {
					if missing := int(*rs.Spec.Replicas) - len(api); plan.Create > missing {
						rt.Fatalf("RS-1: creating %d pods while the API holds %d of %d", plan.Create, len(api), *rs.Spec.Replicas)
					}
					exp.ExpectCreations(key, plan.Create)
					for i := 0; i < plan.Create; i++ {
						seq++
						p := PodFromTemplate(rs)
						p.Name = fmt.Sprint("web-", seq)
						p.UID = types.UID(p.Name)
						p.Status.Phase = corev1.PodPending
						api[p.Name] = p
						pending = append(pending, podEvent{added: true, pod: p})
					}
				}
				if len(plan.Delete) > 0 {
					var keys []string
					for _, p := range plan.Delete {
						keys = append(keys, "ns/"+p.Name)
					}
					exp.ExpectDeletions(key, keys)
					for _, p := range plan.Delete {
						if _, ok := api[p.Name]; ok {
							delete(api, p.Name)
							pending = append(pending, podEvent{pod: p})
						} else {
							exp.DeletionObserved(key, "ns/"+p.Name) // already gone: NotFound
						}
					}
				}
			},
			"deliverEvent": func(rt *rapid.T) {
				if len(pending) == 0 {
					rt.Skip("nothing pending")
				}
				ev := pending[0]
				pending = pending[1:]
				if ev.added {
					cache[ev.pod.Name] = ev.pod
					exp.CreationObserved(key)
				} else {
					delete(cache, ev.pod.Name)
					exp.DeletionObserved(key, "ns/"+ev.pod.Name)
				}
			},
			"scale": func(rt *rapid.T) {
				rs.Spec.Replicas = ptr(int32(rapid.IntRange(0, 6).Draw(rt, "to")))
			},
			"userDeletesPod": func(rt *rapid.T) {
				if len(api) == 0 {
					rt.Skip("no pods")
				}
				names := make([]string, 0, len(api))
				for n := range api {
					names = append(names, n)
				}
				sort.Strings(names)
				n := rapid.SampledFrom(names).Draw(rt, "victim")
				pending = append(pending, podEvent{pod: api[n]})
				delete(api, n)
			},
		})
	})
}
