package kubelet

import (
	"sync"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
)

// workerPool runs the goroutines that sync pods: at most max, started when
// a pod is queued and ending when they find the queue empty, so a node
// whose pods are all synced has none. Upstream's kubelet keeps a goroutine
// per pod; kubeproof up runs thousands of kubelets in one process, where
// four idle workers per node each kept 4 KiB of stack (at 1,000 nodes /
// 30,000 pods: 16 MiB, and more of the stack pool's spans pinned), while
// the pods of a node are synced a few at a time and seldom.
//
// A worker takes pods with work (false once the queue is shut down). Every add to the queue, direct or delayed, calls kick after the
// pod is in the queue (kickingQueue), and a worker leaves only after seeing
// the queue empty under the pool's lock, which kick takes too, so a pod
// added as the last worker leaves has a worker started for it.
type workerPool struct {
	mu      sync.Mutex
	max     int
	running int
	closed  bool
	queue   interface{ Len() int }
	work    func() bool
	wg      sync.WaitGroup
}

// kick starts a worker if fewer than max run.
func (p *workerPool) kick() {
	p.mu.Lock()
	if p.closed || p.running >= p.max {
		p.mu.Unlock()
		return
	}
	p.running++
	p.wg.Add(1)
	p.mu.Unlock()
	go p.run()
}

func (p *workerPool) run() {
	defer p.wg.Done()
	for {
		p.mu.Lock()
		if p.closed || p.queue.Len() == 0 {
			p.running-- // under the lock that kick takes: see workerPool
			p.mu.Unlock()
			return
		}
		p.mu.Unlock()
		if !p.work() {
			p.mu.Lock()
			p.running--
			p.mu.Unlock()
			return
		}
	}
}

// close starts no more workers and waits for the running ones, which end
// once the queue is shut down or empty.
func (p *workerPool) close() {
	p.mu.Lock()
	p.closed = true
	p.mu.Unlock()
	p.wg.Wait()
}

// kickingQueue is the delaying queue's underlying queue: each add, the
// delaying queue's included, kicks the pool once the pod is queued.
type kickingQueue struct {
	workqueue.TypedInterface[types.UID]
	kick func()
}

func (q kickingQueue) Add(uid types.UID) {
	q.TypedInterface.Add(uid)
	q.kick()
}
