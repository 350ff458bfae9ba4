package deployment

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestEmptySelectorEvent: a Deployment selecting all pods gets upstream's
// Warning SelectingAll event, observes its generation and does nothing else.
func TestEmptySelectorEvent(t *testing.T) {
	d := newDeployment(2, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.Selector = &metav1.LabelSelector{}
	plan, err := Decide(Observed{Deployment: d, Now: t0})
	if err != nil {
		t.Fatal(err)
	}
	want := Event{corev1.EventTypeWarning, "SelectingAll", "This deployment is selecting all pods. A non-empty selector is required."}
	if len(plan.Events) != 1 || plan.Events[0] != want || len(plan.Actions) != 0 {
		t.Fatalf("events %+v actions %+v, want only %+v", plan.Events, plan.Actions, want)
	}
	if plan.Status == nil || plan.Status.ObservedGeneration != d.Generation {
		t.Fatalf("status %+v, want observedGeneration %d", plan.Status, d.Generation)
	}
}
