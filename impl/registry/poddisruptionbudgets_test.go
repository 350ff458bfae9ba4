package registry

import (
	"context"
	"testing"
	"time"

	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestPodDisruptionBudgets(t *testing.T) {
	ctx := context.Background()
	r := find(t, policyv1.SchemeGroupVersion, "poddisruptionbudgets")
	min2 := intstr.FromInt32(2)
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", ResourceVersion: "1"},
		Spec: policyv1.PodDisruptionBudgetSpec{MinAvailable: &min2,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
		Status: policyv1.PodDisruptionBudgetStatus{DisruptionsAllowed: 7},
	}
	r.Strategy.PrepareForCreate(ctx, pdb)
	if pdb.Status.DisruptionsAllowed != 0 || pdb.Generation != 1 {
		t.Errorf("create kept status %+v or generation %d", pdb.Status, pdb.Generation)
	}
	wantErrors(t, r.Strategy.Validate(ctx, pdb))
	pdb.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Hour))
	pdb.Status.DisruptionsAllowed = 1
	assertRow(t, r, pdb, "Name,Min Available,Max Unavailable,Allowed Disruptions,Age", "web", "2", "N/A", int64(1), "60m")

	// The spec may change (bumping generation); status is kept.
	upd := pdb.DeepCopy()
	half := intstr.FromString("50%")
	upd.Spec.MinAvailable, upd.Spec.MaxUnavailable = nil, &half
	upd.Status = policyv1.PodDisruptionBudgetStatus{}
	r.Strategy.PrepareForUpdate(ctx, upd, pdb)
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, upd, pdb))
	if upd.Generation != 2 || upd.Status.DisruptionsAllowed != 1 {
		t.Errorf("update: generation %d status %+v", upd.Generation, upd.Status)
	}

	// Status writes keep the spec and refuse negative counts.
	st := pdb.DeepCopy()
	st.Spec.MinAvailable = &half
	st.Status.DisruptionsAllowed = -1
	r.Status.PrepareForUpdate(ctx, st, pdb)
	if st.Spec.MinAvailable.String() != "2" {
		t.Errorf("status write changed spec: %v", st.Spec.MinAvailable)
	}
	wantErrors(t, r.Status.ValidateUpdate(ctx, st, pdb), invalid+" status.disruptionsAllowed")

	for _, tc := range []struct {
		name string
		mod  func(*policyv1.PodDisruptionBudgetSpec)
		want []string
	}{
		{"both set", func(s *policyv1.PodDisruptionBudgetSpec) { s.MaxUnavailable = ptr(intstr.FromInt32(1)) }, []string{invalid + " spec"}},
		{"negative", func(s *policyv1.PodDisruptionBudgetSpec) { s.MinAvailable = ptr(intstr.FromInt32(-1)) }, []string{invalid + " spec.minAvailable"}},
		{"over 100%", func(s *policyv1.PodDisruptionBudgetSpec) {
			s.MinAvailable, s.MaxUnavailable = nil, ptr(intstr.FromString("101%"))
		}, []string{invalid + " spec.maxUnavailable"}},
		{"not a percent", func(s *policyv1.PodDisruptionBudgetSpec) { s.MinAvailable = ptr(intstr.FromString("half")) }, []string{invalid + " spec.minAvailable"}},
		{"bad selector", func(s *policyv1.PodDisruptionBudgetSpec) {
			s.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Near"}}}
		}, []string{invalid + " spec.selector.matchExpressions[0].operator"}},
		{"no selector is valid", func(s *policyv1.PodDisruptionBudgetSpec) { s.Selector = nil }, nil},
		{"eviction policy", func(s *policyv1.PodDisruptionBudgetSpec) {
			s.UnhealthyPodEvictionPolicy = ptr(policyv1.UnhealthyPodEvictionPolicyType("Sometimes"))
		}, []string{notSupported + " spec.unhealthyPodEvictionPolicy"}},
		{"always allow", func(s *policyv1.PodDisruptionBudgetSpec) { s.UnhealthyPodEvictionPolicy = ptr(policyv1.AlwaysAllow) }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := pdb.DeepCopy()
			tc.mod(&p.Spec)
			wantErrors(t, r.Strategy.Validate(ctx, p), tc.want...)
		})
	}
}
