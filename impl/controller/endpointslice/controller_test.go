package endpointslice

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
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
		c.enqueueForPod(pod("a", "10.1.0.1"))
		c.enqueueForPodUpdate(pod("b", "10.1.0.2"), pod("b", "10.1.0.2", notReady))
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
