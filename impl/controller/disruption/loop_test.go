package disruption_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeproof/kubeproof/impl/controller/disruption"
)

func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(context.Background(), 10*time.Millisecond, 30*time.Second, true,
		func(context.Context) (bool, error) {
			ok, err := cond()
			last = err
			return ok, nil
		})
	if err != nil {
		t.Fatalf("waiting for %s: %v", what, last)
	}
}

// TestLoopWritesStatus runs the controller on client-go's fake clientset:
// the budget's status follows its pods' readiness, and Run leaves no
// goroutine behind.
func TestLoopWritesStatus(t *testing.T) {
	before := runtime.NumGoroutine()
	cs := fake.NewClientset(budget(minAvailable(intstr.FromInt32(2))), pod("a", ready), pod("b", ready), pod("c", ready))
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(cs, 0)
	c, err := disruption.New(cs, factory)
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()

	allows := func(n int32) func() (bool, error) {
		return func() (bool, error) {
			p, err := cs.PolicyV1().PodDisruptionBudgets("ns").Get(ctx, "b", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			if p.Status.DisruptionsAllowed != n || p.Status.ObservedGeneration != 3 {
				return false, fmt.Errorf("status %+v, want %d allowed", p.Status, n)
			}
			return true, nil
		}
	}
	waitFor(t, "one disruption allowed", allows(1))
	unready := pod("c")
	unready.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse}}
	if _, err := cs.CoreV1().Pods("ns").UpdateStatus(ctx, unready, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "no disruption allowed once a pod is not ready", allows(0))

	cancel()
	if err := <-done; err != nil {
		t.Fatalf("Run: %v", err)
	}
	factory.Shutdown()
	waitFor(t, "goroutines to exit", func() (bool, error) {
		n := runtime.NumGoroutine()
		return n <= before, fmt.Errorf("%d goroutines, %d before", n, before)
	})
}
