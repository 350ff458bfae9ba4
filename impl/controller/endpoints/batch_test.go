package endpoints

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// waitFor polls cond for up to 10 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// syncAndRead syncs the service web and returns its Endpoints'
// trigger-time annotation, once the informer holds what was written.
func syncAndRead(t *testing.T, ctx context.Context, c *Controller, client kubernetes.Interface) (string, bool) {
	t.Helper()
	if err := c.sync(ctx, "ns/web"); err != nil {
		t.Fatal(err)
	}
	ep, err := client.CoreV1().Endpoints("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the Endpoints in the informer", func() bool {
		cached, err := c.endpoints.Endpoints("ns").Get("web")
		return err == nil && cached.ResourceVersion == ep.ResourceVersion
	})
	v, ok := ep.Annotations[LastChangeTriggerTimeAnnotation]
	return v, ok
}

// TestSyncWritesTheTriggerTime: the first write carries the service's
// creation time, a write caused by a pod becoming ready that pod's Ready
// transition, and a write caused by neither (the Endpoints were deleted)
// none.
func TestSyncWritesTheTriggerTime(t *testing.T) {
	c, client, ctx, _ := newController(t, nil, service(createdAt(0)), pod("a", "10.1.0.1", readySince(5)))
	if v, ok := syncAndRead(t, ctx, c, client); !ok || v != "2026-11-24T06:00:00Z" {
		t.Fatalf("first write: annotation %q %v, want the service's creation", v, ok)
	}
	b := pod("b", "10.1.0.2", readySince(9))
	if _, err := client.CoreV1().Pods("ns").Create(ctx, b, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "pod b in the informer", func() bool { _, err := c.pods.Pods("ns").Get("b"); return err == nil })
	if v, ok := syncAndRead(t, ctx, c, client); !ok || v != "2026-11-24T06:00:09Z" {
		t.Fatalf("pod b ready: annotation %q %v, want its Ready transition", v, ok)
	}
	if err := client.CoreV1().Endpoints("ns").Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the deletion in the informer", func() bool { _, err := c.endpoints.Endpoints("ns").Get("web"); return err != nil })
	if v, ok := syncAndRead(t, ctx, c, client); ok {
		t.Fatalf("recreated Endpoints carry trigger time %q; no pod or service changed", v)
	}
}

// TestPodChangesAreBatched: with a batch period a pod change enqueues its
// service only after the period, and the changes of one period make one
// sync; a service change is enqueued at once; without a period a pod
// change is enqueued at once.
func TestPodChangesAreBatched(t *testing.T) {
	svc := service()
	a, b := pod("a", "10.1.0.1"), pod("b", "10.1.0.2")
	c, _, _, _ := newControllerWith(t, []Option{WithBatchPeriod(time.Hour)}, nil, svc)
	drain(t, c)
	c.podServices().Handler().OnAdd(a, false)
	c.podServices().Handler().OnUpdate(b, pod("b", "10.1.0.2", notReady))
	if n := c.queue.Len(); n != 0 {
		t.Fatalf("pod changes were enqueued before the batch period: %d", n)
	}
	c.enqueue(svc)
	if n := c.queue.Len(); n != 1 {
		t.Fatalf("a service change was not enqueued at once: %d", n)
	}

	c, _, _, _ = newControllerWith(t, []Option{WithBatchPeriod(50 * time.Millisecond)}, nil, svc)
	drain(t, c)
	start := time.Now()
	c.podServices().Handler().OnAdd(a, false)
	c.podServices().Handler().OnAdd(b, false)
	c.podServices().Handler().OnUpdate(b, pod("b", "10.1.0.2", notReady))
	waitFor(t, "the batched sync", func() bool { return c.queue.Len() > 0 })
	if waited := time.Since(start); waited < 50*time.Millisecond {
		t.Fatalf("enqueued after %v, before the batch period", waited)
	}
	time.Sleep(60 * time.Millisecond)
	if n := c.queue.Len(); n != 1 {
		t.Fatalf("three pod changes in one period made %d queue entries, want 1", n)
	}

	c, _, _, _ = newController(t, nil, svc)
	drain(t, c)
	c.podServices().Handler().OnAdd(a, false)
	if n := c.queue.Len(); n != 1 {
		t.Fatalf("without a batch period a pod change was not enqueued at once: %d", n)
	}
}

// drain waits for the service informer's initial add of the one cached
// service (the pods are not cached: the test hands them to the handlers)
// and takes it off the queue.
func drain(t *testing.T, c *Controller) {
	t.Helper()
	waitFor(t, "the service's initial add", func() bool { return c.queue.Len() == 1 })
	k, _ := c.queue.Get()
	c.queue.Done(k)
}
