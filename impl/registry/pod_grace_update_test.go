package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPodGracePeriodUpdateAsUpstream: an update may change
// terminationGracePeriodSeconds only from a stored negative value to 1,
// as upstream ValidatePodUpdate; a pod being deleted is no exception (its
// grace period is shortened through delete options, not an update).
func TestPodGracePeriodUpdateAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	ctx := context.Background()
	cases := []struct {
		name   string
		old    func(*corev1.Pod)
		period int64
		want   []string
	}{
		{"running pod", nil, 5, []string{forbidden + " spec"}},
		{"pod being deleted", func(p *corev1.Pod) {
			p.DeletionTimestamp = &metav1.Time{Time: testNow}
			p.DeletionGracePeriodSeconds = ptr(int64(30))
		}, 5, []string{forbidden + " spec"}},
		{"stored negative period to 1", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(-5)) }, 1, nil},
		{"stored negative period to 2", func(p *corev1.Pod) { p.Spec.TerminationGracePeriodSeconds = ptr(int64(-5)) }, 2, []string{forbidden + " spec"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			old := defaultedPod(t, newPod("p"))
			old.Spec.NodeName = "node-1"
			if tc.old != nil {
				tc.old(old) // as stored, after create
			}
			p := old.DeepCopy()
			p.Spec.TerminationGracePeriodSeconds = ptr(tc.period)
			r.Strategy.PrepareForUpdate(ctx, p, old)
			wantErrors(t, r.Strategy.ValidateUpdate(ctx, p, old), tc.want...)
		})
	}
}
