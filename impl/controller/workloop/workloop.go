// Package workloop is the worker half of the sample-controller pattern shared
// by every kubeproof controller: informer handlers put namespace/name keys on
// a rate-limited queue, and a fixed number of workers pop keys and call the
// controller's one idempotent sync function. A failed sync is retried with the
// queue's per-item exponential back-off; a successful one forgets the key.
package workloop

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
)

// NewQueue returns the rate-limited key queue every controller uses, named for
// its metrics.
func NewQueue(name string) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name},
	)
}

// NewQueueWithClock is NewQueue with an injected clock, so delayed
// re-examinations (AddAfter) follow a fake clock in tests.
func NewQueueWithClock(name string, clk clock.WithTicker) workqueue.TypedRateLimitingInterface[string] {
	return workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.DefaultTypedControllerRateLimiter[string](),
		workqueue.TypedRateLimitingQueueConfig[string]{Name: name, Clock: clk},
	)
}

// MaxRetries is how many times a key is retried with back-off before it is
// dropped (the next informer event or resync brings it back).
const MaxRetries = 15

// WaitForSync waits until every informer in synced has synced. If ctx ends
// first, it shuts queue down (no worker will ever drain it) and returns an
// error naming the controller.
func WaitForSync(ctx context.Context, controller string, queue workqueue.TypedRateLimitingInterface[string], synced ...cache.InformerSynced) error {
	if !cache.WaitForCacheSync(ctx.Done(), synced...) {
		queue.ShutDown()
		return fmt.Errorf("%s: caches did not sync: %w", controller, ctx.Err())
	}
	return nil
}

// Run starts workers goroutines that call sync for every key popped from
// queue, until ctx is done. It shuts the queue down and returns only after
// every worker has stopped, so a caller never leaks goroutines.
func Run(ctx context.Context, name string, queue workqueue.TypedRateLimitingInterface[string], workers int, syncKey func(context.Context, string) error) {
	RunWithMaxRetries(ctx, name, queue, workers, MaxRetries, syncKey)
}

// RunWithMaxRetries is Run for a controller whose upstream counterpart
// drops a failing key after maxRetries back-off retries rather than
// MaxRetries.
func RunWithMaxRetries(ctx context.Context, name string, queue workqueue.TypedRateLimitingInterface[string], workers, maxRetries int, syncKey func(context.Context, string) error) {
	if workers < 1 {
		workers = 1
	}
	var wg sync.WaitGroup
	for i := 0; i < workers; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for processNext(ctx, name, queue, maxRetries, syncKey) {
			}
		}()
	}
	<-ctx.Done()
	queue.ShutDown()
	wg.Wait()
}

func processNext(ctx context.Context, name string, queue workqueue.TypedRateLimitingInterface[string], maxRetries int, syncKey func(context.Context, string) error) bool {
	key, quit := queue.Get()
	if quit {
		return false
	}
	defer queue.Done(key)
	start := time.Now()
	err := syncKey(ctx, key)
	switch {
	case err == nil:
		queue.Forget(key)
	case ctx.Err() != nil:
		queue.Forget(key)
	case queue.NumRequeues(key) < maxRetries:
		slog.Debug("sync failed, retrying", "controller", name, "key", key, "err", err)
		queue.AddRateLimited(key)
	default:
		slog.Warn("sync failed, dropping key", "controller", name, "key", key, "err", err)
		queue.Forget(key)
	}
	slog.Debug("synced", "controller", name, "key", key, "duration", time.Since(start))
	return true
}
