package kubelet

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// newTestPool is the kubelet's queue and worker pool (Run's), whose work
// records each pod it takes and how many workers run at once.
func newTestPool(max int, work func(types.UID)) (*workerPool, workqueue.TypedDelayingInterface[types.UID]) {
	p := &workerPool{max: max}
	q := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[types.UID]{
		Queue: kickingQueue{workqueue.NewTyped[types.UID](), p.kick},
	})
	p.queue = q
	p.work = func() bool {
		uid, shutdown := q.Get()
		if shutdown {
			return false
		}
		defer q.Done(uid)
		work(uid)
		return true
	}
	return p, q
}

func (p *workerPool) runningNow() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.running
}

// Pods added from many goroutines at once, directly and after a delay,
// are each synced, by at most max workers at a time, and once the queue is
// empty no worker is left; a later pod starts one again.
func TestWorkerPoolStartsWorkersForWorkAndEndsThem(t *testing.T) {
	var mu sync.Mutex
	synced := map[types.UID]int{}
	var now, most atomic.Int32
	p, q := newTestPool(4, func(uid types.UID) {
		n := now.Add(1)
		for m := most.Load(); n > m && !most.CompareAndSwap(m, n); m = most.Load() {
		}
		time.Sleep(100 * time.Microsecond)
		now.Add(-1)
		mu.Lock()
		synced[uid]++
		mu.Unlock()
	})
	const adders, each = 8, 200
	var wg sync.WaitGroup
	for a := range adders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range each {
				uid := types.UID(fmt.Sprintf("%d-%d", a, i))
				if i%3 == 0 {
					q.AddAfter(uid, time.Duration(i%7)*time.Millisecond)
				} else {
					q.Add(uid)
				}
				if i%50 == 0 {
					time.Sleep(2 * time.Millisecond) // let the workers drain and leave
				}
			}
		}()
	}
	wg.Wait()
	count := func() int {
		mu.Lock()
		defer mu.Unlock()
		return len(synced)
	}
	eventually(t, "every pod synced", func() bool { return count() == adders*each })
	eventually(t, "the workers to leave", func() bool { return p.runningNow() == 0 })
	if m := most.Load(); m > 4 {
		t.Errorf("%d workers ran at once, want at most 4", m)
	}
	q.AddAfter("late", time.Millisecond)
	eventually(t, "the late pod synced", func() bool { mu.Lock(); defer mu.Unlock(); return synced["late"] == 1 })
	eventually(t, "the workers to leave again", func() bool { return p.runningNow() == 0 })

	q.ShutDown()
	p.close()
	eventually(t, "the workers' goroutines to end", func() bool { return poolGoroutines() == 0 })
}

// poolGoroutines counts the goroutines running a worker pool's loop. It
// looks for the pool's own frame rather than comparing runtime.NumGoroutine
// with a count taken earlier, which the goroutines other tests of the
// package leave winding down (or start late) move either way.
func poolGoroutines() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "kubelet.(*workerPool).run(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

// Closing the pool waits for a worker busy with a pod, and starts none
// afterwards.
func TestWorkerPoolCloseWaitsAndStartsNoMore(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 1)
	p, q := newTestPool(2, func(types.UID) {
		started <- struct{}{}
		<-release
	})
	q.Add("a")
	<-started
	closed := make(chan struct{})
	go func() {
		q.ShutDown()
		p.close()
		close(closed)
	}()
	select {
	case <-closed:
		t.Fatal("close returned while a worker was syncing")
	case <-time.After(20 * time.Millisecond):
	}
	close(release)
	<-closed
	p.kick()
	if n := p.runningNow(); n != 0 {
		t.Errorf("%d workers after close, want 0", n)
	}
}
