package deployment

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestRecreateOldPodsByTheDeploymentSelector: Recreate waits while a pod of
// an old ReplicaSet is not terminal, counting as upstream's oldPodsRunning
// over getPodMapForDeployment does: only the pods the Deployment's selector
// matches, grouped by a controller reference to one of its ReplicaSets.
// A pod relabelled out of the selector (say, quarantined for debugging)
// no longer holds the rollout, even before the ReplicaSet controller
// releases it; Unknown counts as running, Succeeded and Failed do not.
func TestRecreateOldPodsByTheDeploymentSelector(t *testing.T) {
	d := newDeployment(3, "v2", intstr.FromInt32(1), intstr.FromInt32(1))
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	oldTmpl := *d.Spec.Template.DeepCopy()
	oldTmpl.Spec.Containers[0].Image = "v1"
	oldTmpl.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "old"}
	old := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Name: "web-old", Namespace: "ns", UID: "old-uid", Labels: oldTmpl.Labels,
			OwnerReferences: []metav1.OwnerReference{ControllerRef(d)},
			Annotations:     map[string]string{RevisionAnnotation: "1", DesiredReplicasAnnotation: "3", MaxReplicasAnnotation: "3"}},
		Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(0)), Selector: &metav1.LabelSelector{MatchLabels: oldTmpl.Labels}, Template: oldTmpl},
	}
	pod := func(labels map[string]string, phase corev1.PodPhase, owner types.UID) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web-old-x", Namespace: "ns", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-old", UID: owner, Controller: ptr(true)}}},
			Status: corev1.PodStatus{Phase: phase}}
	}
	matching := map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "old"}
	for _, tt := range []struct {
		name     string
		pod      *corev1.Pod
		wantWait bool
	}{
		{"a running pod of the old replicaset", pod(matching, corev1.PodRunning, "old-uid"), true},
		{"a pending pod of the old replicaset", pod(matching, corev1.PodPending, "old-uid"), true},
		{"an Unknown pod of the old replicaset", pod(matching, corev1.PodUnknown, "old-uid"), true},
		{"a succeeded pod", pod(matching, corev1.PodSucceeded, "old-uid"), false},
		{"a failed pod", pod(matching, corev1.PodFailed, "old-uid"), false},
		{"a running pod relabelled out of the selector", pod(map[string]string{"app": "debug"}, corev1.PodRunning, "old-uid"), false},
		{"a running pod of another controller", pod(matching, corev1.PodRunning, "other-uid"), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			plan, err := Decide(Observed{Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{old}, Pods: []*corev1.Pod{tt.pod}, Now: t0})
			if err != nil {
				t.Fatal(err)
			}
			created := false
			for _, a := range plan.Actions {
				if a.Kind == CreateReplicaSet {
					created = true
				}
			}
			if created == tt.wantWait {
				t.Fatalf("new replicaset created: %v, want %v (actions %+v)", created, !tt.wantWait, plan.Actions)
			}
		})
	}
}
