package admission

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"pgregory.net/rapid"
)

// TestResourceQuotaProperty: after any sequence of pod creates against
// any quotas, every quota's status.used is exactly what the admitted pods
// asked for and never above status.hard; a refused create changes no
// quota.
func TestResourceQuotaProperty(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		store := &memQuotas{quotas: map[string]*corev1.ResourceQuota{}}
		nQuotas := rapid.IntRange(1, 3).Draw(t, "quotas")
		for i := range nQuotas {
			name := fmt.Sprintf("q%d", i)
			hard := corev1.ResourceList{}
			if rapid.Bool().Draw(t, name+"-pods") {
				hard[corev1.ResourcePods] = *resource.NewQuantity(int64(rapid.IntRange(0, 5).Draw(t, name+"-pods-hard")), resource.DecimalSI)
			}
			hard[corev1.ResourceRequestsCPU] = *resource.NewMilliQuantity(int64(rapid.IntRange(0, 2000).Draw(t, name+"-cpu-hard")), resource.DecimalSI)
			// Its status as the quota controller writes it: nothing
			// used yet (admission judges and charges status alone).
			used := corev1.ResourceList{}
			for n := range hard {
				used[n] = resource.MustParse("0")
			}
			store.quotas[name] = quota(name, hard, used)
		}
		p := &ResourceQuota{Store: store}
		admittedPods, admittedCPU := int64(0), int64(0)
		for i := range rapid.IntRange(0, 12).Draw(t, "creates") {
			milli := int64(rapid.IntRange(1, 700).Draw(t, fmt.Sprintf("cpu%d", i)))
			pod := newPod(fmt.Sprintf("p%d", i), container("c", corev1.ResourceList{corev1.ResourceCPU: *resource.NewMilliQuantity(milli, resource.DecimalSI)}, nil))
			// usage renders a quota's usage.
			usage := func(q *corev1.ResourceQuota) string {
				out := ""
				for _, r := range sortedNames(q.Spec.Hard) {
					u := q.Status.Used[r]
					out += fmt.Sprintf("%s=%d ", r, u.MilliValue())
				}
				return out
			}
			before := map[string]string{}
			for n, q := range store.quotas {
				before[n] = usage(q)
			}
			err := p.Validate(context.Background(), podCreate(pod))
			switch {
			case err == nil:
				admittedPods++
				admittedCPU += milli
			case apierrors.IsForbidden(err):
				for n, q := range store.quotas {
					if usage(q) != before[n] {
						t.Fatalf("refused create changed quota %s: %s -> %s", n, before[n], usage(q))
					}
				}
			default:
				t.Fatalf("create %d: %v", i, err)
			}
			for n, q := range store.quotas {
				for r, used := range q.Status.Used {
					if hard := q.Status.Hard[r]; used.Cmp(hard) > 0 {
						t.Fatalf("quota %s: used %s %s above hard %s", n, r, used.String(), hard.String())
					}
				}
				if u, ok := q.Status.Used[corev1.ResourcePods]; ok && u.Value() != admittedPods {
					t.Fatalf("quota %s: used pods %d, admitted %d", n, u.Value(), admittedPods)
				}
				if u := q.Status.Used[corev1.ResourceRequestsCPU]; u.MilliValue() != admittedCPU {
					t.Fatalf("quota %s: used cpu %dm, admitted %dm", n, u.MilliValue(), admittedCPU)
				}
			}
		}
	})
}
