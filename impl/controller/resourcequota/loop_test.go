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

// TestReplenishesOnUpstreamUpdates runs the controller on the fake
// clientset with the periodic recount out of reach (five minutes) and
// checks that the updates upstream's update filter passes recount the
// quotas at once: a pod entering the Terminating scope
// (activeDeadlineSeconds set) moves to the Terminating quota, a service
// whose type becomes LoadBalancer uses a load balancer and node ports,
// and a resize the node carried out (container status resources) is
// counted.
func TestReplenishesOnUpstreamUpdates(t *testing.T) {
	terminating := quota(map[string]string{"pods": "5"}, corev1.ResourceQuotaScopeTerminating)
	terminating.Name = "terminating"
	notTerminating := quota(map[string]string{"pods": "5"}, corev1.ResourceQuotaScopeNotTerminating)
	notTerminating.Name = "not-terminating"
	compute := quota(map[string]string{"requests.cpu": "4"})
	compute.Name = "compute"
	services := quota(map[string]string{"services.loadbalancers": "2", "services.nodeports": "10"})
	services.Name = "services"
	svc := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "s"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, Ports: []corev1.ServicePort{{Port: 80}, {Port: 443}}}}
	cs := fake.NewClientset(terminating, notTerminating, compute, services, svc,
		pod("p", requests(map[string]string{"cpu": "100m"})))
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	factory := informers.NewSharedInformerFactory(cs, 0)
	ctrl, err := resourcequota.New(cs, factory, []schema.GroupVersionResource{
		corev1.SchemeGroupVersion.WithResource("pods"),
		corev1.SchemeGroupVersion.WithResource("services"),
	}, resourcequota.Config{SyncPeriod: 5 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- ctrl.Run(ctx, 2) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	}()

	shows := func(name string, want map[string]string) func() (bool, error) {
		return func() (bool, error) {
			got, err := cs.CoreV1().ResourceQuotas("ns").Get(ctx, name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for n, v := range want {
				if u := used(got, corev1.ResourceName(n)); u != v {
					return false, fmt.Errorf("quota %s: %s used %s, want %s", name, n, u, v)
				}
			}
			return true, nil
		}
	}
	waitFor(t, "the recount at start", func() (bool, error) {
		for name, want := range map[string]map[string]string{
			"terminating": {"pods": "0"}, "not-terminating": {"pods": "1"}, "compute": {"requests.cpu": "100m"},
			"services": {"services.loadbalancers": "0", "services.nodeports": "0"},
		} {
			if ok, err := shows(name, want)(); !ok {
				return false, err
			}
		}
		return true, nil
	})
	// A replenishment recounts the quotas whose status.hard, in the
	// controller's cache, names the resource (as upstream): wait for the
	// cache to hold the statuses just written.
	cached := factory.Core().V1().ResourceQuotas().Lister().ResourceQuotas("ns")
	waitFor(t, "the controller's cache to hold the quotas' status", func() (bool, error) {
		for _, name := range []string{"terminating", "not-terminating", "compute", "services"} {
			q, err := cached.Get(name)
			if err != nil {
				return false, err
			}
			if len(q.Status.Hard) == 0 {
				return false, fmt.Errorf("quota %s has no status.hard in the cache", name)
			}
		}
		return true, nil
	})

	// The pod gets an active deadline: it leaves NotTerminating for
	// Terminating.
	p, err := cs.CoreV1().Pods("ns").Get(ctx, "p", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	deadline(60)(p)
	if p, err = cs.CoreV1().Pods("ns").Update(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Terminating quota to count the pod", shows("terminating", map[string]string{"pods": "1"}))
	waitFor(t, "the NotTerminating quota to give it back", shows("not-terminating", map[string]string{"pods": "0"}))

	// The service becomes a LoadBalancer.
	s, err := cs.CoreV1().Services("ns").Get(ctx, "s", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	s.Spec.Type = corev1.ServiceTypeLoadBalancer
	if _, err := cs.CoreV1().Services("ns").Update(ctx, s, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the type change to be counted", shows("services", map[string]string{"services.loadbalancers": "1", "services.nodeports": "2"}))

	// The node reports the container resized to 500m (it reported
	// 100m before).
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", Resources: &corev1.ResourceRequirements{Requests: list(map[string]string{"cpu": "100m"})}}}
	if p, err = cs.CoreV1().Pods("ns").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	p.Status.ContainerStatuses[0].Resources.Requests = list(map[string]string{"cpu": "500m"})
	if _, err := cs.CoreV1().Pods("ns").UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the resize to be counted", shows("compute", map[string]string{"requests.cpu": "500m"}))
}
