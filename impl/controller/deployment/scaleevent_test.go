package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestProportionalScalingEventsSayTheDirection: a ScalingReplicaSet event
// says "up" or "down" by the ReplicaSet's own change, as upstream's
// scaleReplicaSet, not by the direction of the Deployment's change. Here the
// Deployment grows (desired 8 -> 10) but a stale max-replicas annotation (20)
// shrinks the old ReplicaSet's share.
func TestProportionalScalingEventsSayTheDirection(t *testing.T) {
	d := newDeployment(10, "nginx:2", intstr.FromInt32(3), intstr.FromInt32(0))
	mk := func(name, image, revision, desired, max string, age time.Duration) *appsv1.ReplicaSet {
		tmpl := *d.Spec.Template.DeepCopy()
		tmpl.Spec.Containers[0].Image = image
		tmpl.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: name}
		return &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID("uid-" + name),
				Labels: tmpl.Labels, OwnerReferences: []metav1.OwnerReference{ControllerRef(d)},
				CreationTimestamp: metav1.NewTime(t0.Add(-age)),
				Annotations:       map[string]string{RevisionAnnotation: revision, DesiredReplicasAnnotation: desired, MaxReplicasAnnotation: max}},
			Spec: appsv1.ReplicaSetSpec{Replicas: ptr(int32(5)), Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl},
		}
	}
	old := mk("web-old", "nginx:1", "1", "10", "20", time.Hour)
	cur := mk("web-new", "nginx:2", "2", "8", "13", time.Minute)
	plan, err := Decide(Observed{Deployment: d, ReplicaSets: []*appsv1.ReplicaSet{old, cur}, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for _, a := range plan.Actions {
		if a.Event != nil {
			got[a.ReplicaSet.Name] = a.Event.Message
		}
	}
	want := map[string]string{
		"web-old": "Scaled down replica set web-old from 5 to 3",
		"web-new": "Scaled up replica set web-new from 5 to 10",
	}
	for name, msg := range want {
		if got[name] != msg {
			t.Errorf("event for %s = %q, want %q", name, got[name], msg)
		}
	}
}
