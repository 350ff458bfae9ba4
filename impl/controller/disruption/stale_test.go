package disruption_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeproof/kubeproof/impl/controller/disruption"
)

func marked(reason string, at time.Time) podOpt {
	return func(p *corev1.Pod) {
		p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
			Reason: reason, LastTransitionTime: metav1.NewTime(at)})
	}
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

func TestStaleDisruption(t *testing.T) {
	timeout := disruption.StalePodDisruptionTimeout
	for _, tc := range []struct {
		name  string
		pod   *corev1.Pod
		stale bool
		after time.Duration
	}{
		{"no condition", pod("a", ready), false, 0},
		{"marked just now", pod("a", marked("EvictionByEvictionAPI", now)), true, timeout},
		{"marked a minute ago", pod("a", marked("DeletionByTaintManager", now.Add(-time.Minute))), true, time.Minute},
		{"marked long ago", pod("a", marked("EvictionByEvictionAPI", now.Add(-time.Hour))), true, 0},
		{"being deleted", pod("a", deleting, marked("EvictionByEvictionAPI", now.Add(-time.Hour))), false, 0},
		{"terminal", pod("a", phase(corev1.PodFailed), marked("DeletionByPodGC", now.Add(-time.Hour))), false, 0},
		{"set by the kubelet", pod("a", marked("TerminationByKubelet", now.Add(-time.Hour))), false, 0},
		{"already False", pod("a", func(p *corev1.Pod) {
			p.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse}}
		}), false, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			stale, after := disruption.StaleDisruption(tc.pod, now, timeout)
			if stale != tc.stale || after != tc.after {
				t.Fatalf("stale %v after %v, want %v after %v", stale, after, tc.stale, tc.after)
			}
		})
	}
}

// The loop resets a stale DisruptionTarget condition to False and leaves
// the pod's other conditions alone.
func TestLoopResetsStaleDisruptionTarget(t *testing.T) {
	old := time.Now().Add(-time.Hour)
	cs := fake.NewClientset(pod("a", ready, marked("EvictionByEvictionAPI", old)), pod("b", ready, deleting, marked("EvictionByEvictionAPI", old)))
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(cs, 0)
	c, err := disruption.New(cs, factory)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	}()
	condition := func(name string) (corev1.PodCondition, int) {
		p, err := cs.CoreV1().Pods("ns").Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range p.Status.Conditions {
			if c.Type == corev1.DisruptionTarget {
				return c, len(p.Status.Conditions)
			}
		}
		return corev1.PodCondition{}, len(p.Status.Conditions)
	}
	waitFor(t, "the stale condition reset", func() (bool, error) {
		c, n := condition("a")
		return c.Status == corev1.ConditionFalse && n == 2, fmt.Errorf("condition %+v of %d", c, n)
	})
	if c, _ := condition("b"); c.Status != corev1.ConditionTrue {
		t.Fatalf("a terminating pod's condition was reset: %+v", c)
	}
}
