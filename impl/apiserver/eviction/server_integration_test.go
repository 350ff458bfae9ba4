package eviction_test

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestEvictionMarksDisruptionTarget evicts a running pod through
// kubeproof's API server: the pod is left terminating (graceful deletion,
// it is bound to a node) with DisruptionTarget=True, reason
// EvictionByEvictionAPI, and the same resourceVersion precondition a
// client sent still lets the eviction through.
func TestEvictionMarksDisruptionTarget(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	_, cs := clustertest.Start(t, clustertest.Options{})
	ctx := context.Background()
	pods := cs.CoreV1().Pods("default")
	p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "victim"},
		Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	p.Status.Phase = corev1.PodRunning
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	if p, err = pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	rv := p.ResourceVersion
	err = pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: "victim", Namespace: "default"},
		DeleteOptions: &metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}}})
	if err != nil {
		t.Fatalf("evicting: %v", err)
	}
	got, err := pods.Get(ctx, "victim", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.DeletionTimestamp == nil {
		t.Fatal("evicted pod not terminating")
	}
	var marked bool
	for _, c := range got.Status.Conditions {
		if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "EvictionByEvictionAPI" && c.Message == "Eviction API: evicting" {
			marked = true
		}
	}
	if !marked {
		t.Fatalf("conditions %+v, want DisruptionTarget=True EvictionByEvictionAPI", got.Status.Conditions)
	}
}
