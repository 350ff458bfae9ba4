package resourcequota_test

import (
	"context"
	"fmt"
	"runtime"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/kubeproof/kubeproof/impl/controller/resourcequota"
)

// TestLoopWithoutAServer runs the controller on client-go's fake
// clientset: a quota whose status was charged by admission is recounted
// down to the objects that exist, a pod past its deletion grace period
// and a deleted pod give usage back, usage of a
// resource the controller does not watch is left alone, and Run leaves no
// goroutine behind.
func TestLoopWithoutAServer(t *testing.T) {
	before := runtime.NumGoroutine()
	q := quota(map[string]string{"pods": "3", "requests.cpu": "1", "count/widgets.example.com": "5"})
	q.Status.Hard = q.Spec.Hard.DeepCopy()
	q.Status.Used = list(map[string]string{"pods": "3", "requests.cpu": "750m", "count/widgets.example.com": "4"})
	cs := fake.NewClientset(q,
		pod("a", requests(map[string]string{"cpu": "250m"})),
		pod("b", requests(map[string]string{"cpu": "250m"}), phase(corev1.PodFailed)),
		pod("c", requests(map[string]string{"cpu": "100m"})))
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(cs, 0)
	ctrl, err := resourcequota.New(cs, factory, []schema.GroupVersionResource{
		corev1.SchemeGroupVersion.WithResource("pods"),
		corev1.SchemeGroupVersion.WithResource("configmaps"),
		{Group: "example.com", Version: "v1", Resource: "widgets"}, // no typed informer: not watched
	}, resourcequota.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if ctrl.Observes(schema.GroupResource{Group: "example.com", Resource: "widgets"}) {
		t.Fatal("a resource without a typed informer cannot be observed")
	}
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx, 1) }()

	shows := func(want map[string]string) func() (bool, error) {
		return func() (bool, error) {
			got, err := cs.CoreV1().ResourceQuotas("ns").Get(ctx, "q", metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for n, v := range want {
				if u := used(got, corev1.ResourceName(n)); u != v {
					return false, fmt.Errorf("%s used %s, want %s", n, u, v)
				}
			}
			return true, nil
		}
	}
	waitFor(t, "the recount at start", shows(map[string]string{"pods": "2", "requests.cpu": "350m", "count/widgets.example.com": "4"}))
	// A pod whose deletion grace period is over stops counting although
	// it is still stored (its node has not confirmed it gone).
	c, err := cs.CoreV1().Pods("ns").Get(ctx, "c", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deleting(time.Now().Add(-time.Minute), 30)(c)
	if _, err := cs.CoreV1().Pods("ns").Update(ctx, c, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "a pod past its grace period to stop counting", shows(map[string]string{"pods": "1", "requests.cpu": "250m"}))
	if err := cs.CoreV1().Pods("ns").Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deleted pod's usage to be given back", shows(map[string]string{"pods": "0", "requests.cpu": "0", "count/widgets.example.com": "4"}))

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
