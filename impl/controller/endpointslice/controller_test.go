package endpointslice

import (
	"context"
	"errors"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/cache"
)

// TestPodChangesAreBatched: with a batch period a pod change enqueues its
// service only after the period; a service change is enqueued at once;
// without a period a pod change is enqueued at once.
func TestPodChangesAreBatched(t *testing.T) {
	for _, tc := range []struct {
		period  time.Duration
		podKeys int
	}{{time.Hour, 0}, {0, 1}} {
		svc := service()
		source := fake.NewClientset(svc)
		factory := informers.NewSharedInformerFactory(source, 0)
		c, err := New(source, factory.Core().V1().Services(), factory.Core().V1().Pods(), factory.Core().V1().Nodes(),
			factory.Discovery().V1().EndpointSlices(), WithBatchPeriod(tc.period))
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		factory.Start(ctx.Done())
		if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
			t.Fatal("caches did not sync")
		}
		for c.queue.Len() > 0 { // the service's add event
			k, _ := c.queue.Get()
			c.queue.Done(k)
		}
		c.podServices().Handler().OnAdd(pod("a", "10.1.0.1"), false)
		c.podServices().Handler().OnUpdate(pod("b", "10.1.0.2"), pod("b", "10.1.0.2", notReady))
		if n := c.queue.Len(); n != tc.podKeys {
			t.Errorf("period %v: %d keys queued after pod changes, want %d", tc.period, n, tc.podKeys)
		}
		c.enqueue(svc)
		if n := c.queue.Len(); n != 1 {
			t.Errorf("period %v: %d keys queued after a service change, want 1", tc.period, n)
		}
		c.queue.ShutDown()
		cancel()
		factory.Shutdown()
	}
}

// TestSyncWaitsForItsOwnWrites: a second sync before the slice cache has
// seen the first sync's create is retried (ErrStale) instead of creating
// a second slice; once the cache holds the slice, a sync writes nothing.
// The controller writes to one fake clientset and reads through informers
// over another, so the cache sees the create only when the test copies it.
func TestSyncWaitsForItsOwnWrites(t *testing.T) {
	svc := service()
	a := pod("a", "10.1.0.1", func(p *corev1.Pod) { p.Spec.NodeName = "" })
	source, client := fake.NewClientset(svc, a), fake.NewClientset()
	// The fake names generateName objects as the API server does.
	client.PrependReactor("create", "endpointslices", func(action k8stesting.Action) (bool, runtime.Object, error) {
		s := action.(k8stesting.CreateAction).GetObject().(*discoveryv1.EndpointSlice)
		s.Name, s.Generation = s.GenerateName+"1", 1
		return false, nil, nil
	})
	factory := informers.NewSharedInformerFactory(source, 0)
	c, err := New(client, factory.Core().V1().Services(), factory.Core().V1().Pods(), factory.Core().V1().Nodes(),
		factory.Discovery().V1().EndpointSlices())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer func() { cancel(); factory.Shutdown() }()
	factory.Start(ctx.Done())
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		t.Fatal("caches did not sync")
	}
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	if err := c.sync(ctx, "ns/web"); !errors.Is(err, ErrStale) {
		t.Fatalf("second sync before the cache saw the create: %v, want ErrStale", err)
	}
	written, err := client.DiscoveryV1().EndpointSlices("ns").Get(ctx, "web-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := source.DiscoveryV1().EndpointSlices("ns").Create(ctx, written, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		if _, err := c.slices.EndpointSlices("ns").Get("web-1"); err == nil {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the slice never reached the cache")
		}
		time.Sleep(5 * time.Millisecond)
	}
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	l, err := client.DiscoveryV1().EndpointSlices("ns").List(ctx, metav1.ListOptions{})
	if err != nil || len(l.Items) != 1 || len(l.Items[0].Endpoints) != 1 {
		t.Fatalf("slices %v %v, want one with the pod", l, err)
	}
}
