package kubelet

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestContainerGCHasItsOwnLoop: a running kubelet collects dead
// containers and sandboxes every gc.ContainerPeriod on a loop of its own,
// as upstream's StartGarbageCollection, so an eviction manager interval
// that is held up (here: its lock held, as by a long reclaim or a wait)
// does not hold the collection up. Before, the collection ran inside the
// eviction interval and waited for it: the stopped sandbox of a pod the
// kubelet does not know stayed.
func TestContainerGCHasItsOwnLoop(t *testing.T) {
	h := newHarness(t, nil)
	ctx, cancel := context.WithCancel(h.ctx)
	runErr := make(chan error, 1)
	go func() { runErr <- h.k.Run(ctx) }()
	defer func() {
		cancel()
		if err := <-runErr; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()
	eventually(t, "node registration", func() bool {
		_, err := h.client.CoreV1().Nodes().Get(ctx, "node-7", metav1.GetOptions{})
		return err == nil
	})
	orphans := func() int {
		sbs, err := h.rt.ListPodSandbox(h.ctx, &runtimeapi.PodSandboxFilter{LabelSelector: map[string]string{runtime.LabelPodUID: "uid-gone"}})
		if err != nil {
			t.Fatal(err)
		}
		return len(sbs)
	}

	h.k.evictMu.Lock() // an eviction interval under way that does not end
	unlock := sync.OnceFunc(h.k.evictMu.Unlock)
	defer unlock() // before Run is stopped: its housekeeping waits for it
	h.stoppedSandbox("gone")
	eventually(t, "the container collection while the eviction manager is held up", func() bool {
		h.step(gc.ContainerPeriod)
		return orphans() == 0
	})
	unlock()
}

// TestGCLoopPausedStopsAndEnds: a collection loop does not collect while
// the kubelet is paused (a stopped kubelet collects nothing) but keeps its
// period, collects at the first period after Resume, and returns when its
// context ends or when the runtime cannot be collected, leaving no timer
// behind.
func TestGCLoopPausedStopsAndEnds(t *testing.T) {
	h := newHarness(t, nil)
	base := h.clock.Waiters()
	var runs atomic.Int32
	collectable := true
	collect := func(context.Context, time.Time) bool { runs.Add(1); return collectable }
	armed := func(n int) bool { return h.clock.Waiters() == base+n }

	h.k.Pause()
	ctx, cancel := context.WithCancel(h.ctx)
	done := make(chan struct{})
	go func() { h.k.gcLoop(ctx, gc.ContainerPeriod, collect); close(done) }()
	eventually(t, "the loop's first timer", func() bool { return armed(1) })
	for range 3 {
		h.clock.Step(gc.ContainerPeriod)
		eventually(t, "the loop's next timer", func() bool { return armed(1) })
	}
	if n := runs.Load(); n != 0 {
		t.Fatalf("collections while paused: %d, want 0", n)
	}
	h.k.Resume()
	h.clock.Step(gc.ContainerPeriod)
	eventually(t, "a collection after Resume", func() bool { return runs.Load() == 1 && armed(1) })
	cancel()
	<-done
	if !armed(0) {
		t.Errorf("timers left after the loop ended: %d", h.clock.Waiters()-base)
	}

	// A runtime that cannot be collected ends the loop at its first run.
	collectable = false
	h.k.gcLoop(h.ctx, gc.ContainerPeriod, collect)
	if n := runs.Load(); n != 2 {
		t.Errorf("collections: %d, want 2", n)
	}
}
