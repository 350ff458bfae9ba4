package nodelifecycle

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	clocktesting "k8s.io/utils/clock/testing"
)

func disruptionTargetOf(p *corev1.Pod) *corev1.PodCondition {
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.DisruptionTarget {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// A taint-based eviction marks the pod DisruptionTarget=True
// (DeletionByTaintManager) before it deletes it, keeping its other
// conditions.
func TestEvictMarksDisruptionTargetBeforeDelete(t *testing.T) {
	pod := readyPod(podOn("victim"))
	client := fake.NewClientset(pod)
	var atDelete *corev1.PodCondition
	client.PrependReactor("delete", "pods", func(a k8stesting.Action) (bool, k8sruntime.Object, error) {
		p, err := client.Tracker().Get(corev1.SchemeGroupVersion.WithResource("pods"), "ns", "victim")
		if err != nil {
			return true, nil, err
		}
		atDelete = disruptionTargetOf(p.(*corev1.Pod))
		if len(p.(*corev1.Pod).Status.Conditions) != 2 {
			t.Errorf("conditions at delete %+v, want Ready kept", p.(*corev1.Pod).Status.Conditions)
		}
		return false, nil, nil
	})
	c := &Controller{client: client, recorder: record.NewFakeRecorder(10), clock: clocktesting.NewFakeClock(t0)}
	if err := c.evict(context.Background(), pod); err != nil {
		t.Fatal(err)
	}
	if atDelete == nil || atDelete.Status != corev1.ConditionTrue || atDelete.Reason != "DeletionByTaintManager" ||
		atDelete.Message != "Taint manager: deleting due to NoExecute taint" {
		t.Fatalf("DisruptionTarget when deleted: %+v", atDelete)
	}
	if _, err := client.CoreV1().Pods("ns").Get(context.Background(), "victim", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("pod not deleted: %v", err)
	}
}

// A mark that fails is an error (the sync is retried) and the pod is not
// deleted unmarked.
func TestEvictDoesNotDeleteUnmarked(t *testing.T) {
	pod := podOn("victim")
	client := fake.NewClientset(pod)
	client.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, k8sruntime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("etcd is away")
	})
	c := &Controller{client: client, recorder: record.NewFakeRecorder(10), clock: clocktesting.NewFakeClock(t0)}
	err := c.evict(context.Background(), pod)
	var status apierrors.APIStatus
	if !errors.As(err, &status) || !apierrors.IsServiceUnavailable(err) {
		t.Fatalf("evict: %v, want the patch's 503", err)
	}
	if _, err := client.CoreV1().Pods("ns").Get(context.Background(), "victim", metav1.GetOptions{}); err != nil {
		t.Fatalf("pod deleted though it could not be marked: %v", err)
	}
}
