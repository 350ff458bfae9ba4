package disruption_test

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/impl/controller/disruption"
)

var now = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func budget(mod func(*policyv1.PodDisruptionBudget)) *policyv1.PodDisruptionBudget {
	p := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Name: "b", Namespace: "ns", Generation: 3},
		Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}},
	}
	mod(p)
	return p
}

func minAvailable(v intstr.IntOrString) func(*policyv1.PodDisruptionBudget) {
	return func(p *policyv1.PodDisruptionBudget) { p.Spec.MinAvailable = &v }
}

func maxUnavailable(v intstr.IntOrString) func(*policyv1.PodDisruptionBudget) {
	return func(p *policyv1.PodDisruptionBudget) { p.Spec.MaxUnavailable = &v }
}

type podOpt func(*corev1.Pod)

func ready(p *corev1.Pod) {
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
}

func deleting(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now} }

func ownedBy(rs *appsv1.ReplicaSet) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))}
	}
}

func pod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func int32p(v int32) *int32 { return &v }

var (
	deploy = &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "ns", UID: "d1"},
		Spec: appsv1.DeploymentSpec{Replicas: int32p(4)}}
	deployRS = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-abc", Namespace: "ns", UID: "rs1",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(deploy, appsv1.SchemeGroupVersion.WithKind("Deployment"))}},
		Spec: appsv1.ReplicaSetSpec{Replicas: int32p(2)}} // mid-rollout: the Deployment's 4 counts
	loneRS = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "lone", Namespace: "ns", UID: "rs2"},
		Spec: appsv1.ReplicaSetSpec{Replicas: int32p(3)}}
	strangerRS = &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "gone", Namespace: "ns", UID: types.UID("gone")}}
)

func TestDecide(t *testing.T) {
	threeReady := []*corev1.Pod{pod("a", ready), pod("b", ready), pod("c", ready)}
	deployPods := []*corev1.Pod{pod("a", ready, ownedBy(deployRS)), pod("b", ready, ownedBy(deployRS)), pod("c", ownedBy(deployRS))}
	for _, tc := range []struct {
		name                                string
		pdb                                 *policyv1.PodDisruptionBudget
		pods                                []*corev1.Pod
		expected, desired, healthy, allowed int32
		reason                              string
		disrupted                           []string
	}{
		{"minAvailable int counts existing pods", budget(minAvailable(intstr.FromInt32(2))), threeReady, 3, 2, 3, 1, disruption.ReasonSufficientPods, nil},
		{"minAvailable equal to healthy allows none", budget(minAvailable(intstr.FromInt32(3))), threeReady, 3, 3, 3, 0, disruption.ReasonInsufficientPods, nil},
		{"unready and deleting pods are not healthy", budget(minAvailable(intstr.FromInt32(1))),
			[]*corev1.Pod{pod("a", ready), pod("b"), pod("c", ready, deleting)}, 3, 1, 1, 0, disruption.ReasonInsufficientPods, nil},
		{"no pods: nothing allowed", budget(minAvailable(intstr.FromInt32(0))), nil, 0, 0, 0, 0, disruption.ReasonInsufficientPods, nil},
		{"maxUnavailable uses the Deployment's replicas", budget(maxUnavailable(intstr.FromInt32(1))), deployPods, 4, 3, 2, 0, disruption.ReasonInsufficientPods, nil},
		{"maxUnavailable percent rounds up", budget(maxUnavailable(intstr.FromString("30%"))), deployPods, 4, 2, 2, 0, disruption.ReasonInsufficientPods, nil},
		{"minAvailable percent rounds up", budget(minAvailable(intstr.FromString("30%"))),
			[]*corev1.Pod{pod("a", ready, ownedBy(loneRS)), pod("b", ready, ownedBy(loneRS)), pod("c", ready, ownedBy(loneRS))}, 3, 1, 3, 2, disruption.ReasonSufficientPods, nil},
		{"pods without a controller add no scale", budget(maxUnavailable(intstr.FromInt32(0))),
			[]*corev1.Pod{pod("a", ready, ownedBy(loneRS)), pod("orphan", ready)}, 3, 3, 2, 0, disruption.ReasonInsufficientPods, nil},
		{"recent disruptions are not healthy, old ones and deleted pods are dropped", budget(func(p *policyv1.PodDisruptionBudget) {
			p.Spec.MinAvailable = ptr(intstr.FromInt32(1))
			p.Status.DisruptedPods = map[string]metav1.Time{
				"a": metav1.NewTime(now.Add(-time.Minute)), "b": metav1.NewTime(now.Add(-3 * time.Minute)),
				"c": metav1.NewTime(now.Add(-time.Second)), "gone": metav1.NewTime(now)}
		}), []*corev1.Pod{pod("a", ready), pod("b", ready), pod("c", ready, deleting)}, 3, 1, 1, 0, disruption.ReasonInsufficientPods, []string{"a"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := disruption.Decide(disruption.Observed{PDB: tc.pdb, Pods: tc.pods, Now: now,
				ReplicaSets: map[string]*appsv1.ReplicaSet{deployRS.Name: deployRS, loneRS.Name: loneRS},
				Deployments: map[string]*appsv1.Deployment{deploy.Name: deploy}})
			if d.Err != nil {
				t.Fatal(d.Err)
			}
			st := d.Status
			if st.ExpectedPods != tc.expected || st.DesiredHealthy != tc.desired || st.CurrentHealthy != tc.healthy || st.DisruptionsAllowed != tc.allowed {
				t.Errorf("expected/desired/healthy/allowed %d/%d/%d/%d, want %d/%d/%d/%d", st.ExpectedPods, st.DesiredHealthy,
					st.CurrentHealthy, st.DisruptionsAllowed, tc.expected, tc.desired, tc.healthy, tc.allowed)
			}
			if st.ObservedGeneration != 3 {
				t.Errorf("observedGeneration %d", st.ObservedGeneration)
			}
			c := apimeta.FindStatusCondition(st.Conditions, policyv1.DisruptionAllowedCondition)
			if c == nil || c.Reason != tc.reason || (c.Status == metav1.ConditionTrue) != (tc.allowed > 0) {
				t.Errorf("condition %+v, want reason %s", c, tc.reason)
			}
			var got []string
			for n := range st.DisruptedPods {
				got = append(got, n)
			}
			if strings.Join(got, ",") != strings.Join(tc.disrupted, ",") {
				t.Errorf("disruptedPods %v, want %v", got, tc.disrupted)
			}
			if len(tc.disrupted) > 0 && !d.RecheckAt.Equal(now.Add(time.Minute)) {
				t.Errorf("recheck at %v, want when a's eviction expires", d.RecheckAt)
			}
			if !d.Write {
				t.Error("a changed status must be written")
			}
			again := tc.pdb.DeepCopy()
			again.Status = st
			if disruption.Decide(disruption.Observed{PDB: again, Pods: tc.pods, Now: now.Add(time.Second),
				ReplicaSets: map[string]*appsv1.ReplicaSet{deployRS.Name: deployRS, loneRS.Name: loneRS},
				Deployments: map[string]*appsv1.Deployment{deploy.Name: deploy}}).Write {
				t.Error("deciding again on the written status must not write")
			}
		})
	}
}

func TestDecideFailsSafeWhenTheControllerIsUnknown(t *testing.T) {
	pdb := budget(maxUnavailable(intstr.FromInt32(1)))
	pdb.Status.DisruptionsAllowed = 2
	d := disruption.Decide(disruption.Observed{PDB: pdb, Pods: []*corev1.Pod{pod("a", ready, ownedBy(strangerRS))}, Now: now})
	if d.Err == nil || d.Status.DisruptionsAllowed != 0 || !d.Write {
		t.Fatalf("decision %+v, want fail-safe", d)
	}
	c := apimeta.FindStatusCondition(d.Status.Conditions, policyv1.DisruptionAllowedCondition)
	if c == nil || c.Reason != disruption.ReasonSyncFailed || c.Status != metav1.ConditionFalse {
		t.Errorf("condition %+v", c)
	}
}

func ptr[T any](v T) *T { return &v }
