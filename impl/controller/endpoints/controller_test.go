package endpoints

import (
	"context"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

// newController is a controller reading through informers over a fake
// clientset holding cached and writing to client (the same clientset
// when client is nil).
func newController(t *testing.T, client kubernetes.Interface, cached ...k8sruntime.Object) (*Controller, kubernetes.Interface, context.Context, context.CancelFunc) {
	t.Helper()
	return newControllerWith(t, nil, client, cached...)
}

// newControllerWith is newController with options.
func newControllerWith(t *testing.T, opts []Option, client kubernetes.Interface, cached ...k8sruntime.Object) (*Controller, kubernetes.Interface, context.Context, context.CancelFunc) {
	t.Helper()
	source := fake.NewClientset(cached...)
	if client == nil {
		client = source
	}
	factory := informers.NewSharedInformerFactory(source, 0)
	c, err := New(client, factory.Core().V1().Services(), factory.Core().V1().Pods(), factory.Core().V1().Endpoints(), opts...)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(func() { cancel(); factory.Shutdown() })
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("caches did not sync")
	}
	return c, client, ctx, cancel
}

func endpointsObject(name string, annotations map[string]string) *corev1.Endpoints {
	return &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("ep-" + name), Annotations: annotations}}
}

// TestRunConvergesAndCleansLeftovers: at the start the Endpoints of a
// service that no longer exists are deleted (a leader-election lock is
// not), a selector-less service's Endpoints are left alone, and a service
// with a selector gets its pods' Endpoints; Run returns once ctx ends.
func TestRunConvergesAndCleansLeftovers(t *testing.T) {
	manual := service(func(s *corev1.Service) { s.Name = "manual"; s.Spec.Selector = nil })
	manualEP := endpointsObject("manual", nil)
	manualEP.Subsets = []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.168.0.1"}}}}
	c, client, ctx, cancel := newController(t, nil,
		service(), pod("a", "10.1.0.1"), manual, manualEP,
		endpointsObject("orphan", nil), endpointsObject("lock", map[string]string{leaderAnnotation: "{}"}))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := c.Run(ctx, 2); err != nil {
			t.Error(err)
		}
	}()
	eps := client.CoreV1().Endpoints("ns")
	deadline := time.Now().Add(10 * time.Second)
	for {
		_, orphanErr := eps.Get(ctx, "orphan", metav1.GetOptions{})
		web, webErr := eps.Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(orphanErr) && webErr == nil && len(web.Subsets) == 1 && web.Subsets[0].Addresses[0].IP == "10.1.0.1" {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan: %v; web: %v %v", orphanErr, web, webErr)
		}
		time.Sleep(10 * time.Millisecond)
	}
	if _, err := eps.Get(ctx, "lock", metav1.GetOptions{}); err != nil {
		t.Errorf("a leader-election lock was deleted: %v", err)
	}
	if got, err := eps.Get(ctx, "manual", metav1.GetOptions{}); err != nil || got.Subsets[0].Addresses[0].IP != "192.168.0.1" {
		t.Errorf("a selector-less service's Endpoints changed: %v %v", got, err)
	}
	cancel()
	wg.Wait()
}

// TestDeleteConfirmsTheServiceIsGone: a service missing from a lagging
// informer but present in the API server keeps its Endpoints.
func TestDeleteConfirmsTheServiceIsGone(t *testing.T) {
	live := fake.NewClientset(service(), endpointsObject("web", nil))
	c, _, ctx, _ := newController(t, live, endpointsObject("web", nil))
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if _, err := live.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Fatalf("Endpoints deleted although the API server has the service: %v", err)
	}
	if err := live.CoreV1().Services("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if _, err := live.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("Endpoints of a deleted service kept: %v", err)
	}
}

func TestEndpointsChanged(t *testing.T) {
	base := pod("a", "10.1.0.1")
	now := metav1.Now()
	tests := []struct {
		name string
		mod  func(*corev1.Pod)
		want bool
	}{
		{"nothing", func(*corev1.Pod) {}, false},
		{"a status heartbeat", func(p *corev1.Pod) {
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 1}}
		}, false},
		{"labels", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }, true},
		{"IP", func(p *corev1.Pod) { p.Status.PodIP = "10.1.0.9" }, true},
		{"readiness", notReady, true},
		{"phase", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }, true},
		{"terminating", func(p *corev1.Pod) { p.DeletionTimestamp = &now }, true},
		{"hostname", func(p *corev1.Pod) { p.Spec.Hostname = "h" }, true},
		{"container port", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 1 }, true},
	}
	for _, tt := range tests {
		cur := base.DeepCopy()
		tt.mod(cur)
		if got := EndpointChanged(base, cur); got != tt.want {
			t.Errorf("%s: EndpointChanged %v, want %v", tt.name, got, tt.want)
		}
	}
}
