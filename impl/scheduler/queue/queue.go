// Package queue is the scheduling queue: three sub-queues as in
// kube-scheduler.
//
//   - activeQ: pods ready to be tried, ordered by the profile's QueueSort
//     (priority, then arrival);
//   - backoffQ: pods that failed recently, waiting for their exponential
//     backoff (1 s doubling to 10 s by default) to expire;
//   - unschedulable: pods no node fits, parked until a cluster event one
//     of the plugins that rejected them cares about (a node added or
//     changed, an assigned pod deleted, …) or a 5-minute timeout moves them;
//   - gated: pods with spec.schedulingGates, never tried until an update
//     removes the last gate.
//
// It is a data structure with a clock interface: no goroutine of its own
// except the optional Run ticker that flushes the backoff and leftover pods.
// It also records nominated pods (preemption), which the framework counts
// when filtering their nodes.
package queue

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Clock is the queue's time source.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// ErrClosed is returned by Pop after Close.
var ErrClosed = errors.New("scheduling queue is closed")

// Defaults, as in kube-scheduler.
const (
	DefaultPodInitialBackoff        = 1 * time.Second
	DefaultPodMaxBackoff            = 10 * time.Second
	DefaultUnschedulableMaxDuration = 5 * time.Minute
)

func podKey(p *v1.Pod) string { return p.Namespace + "/" + p.Name }

// PriorityQueue is the scheduling queue.
type PriorityQueue struct {
	mu   sync.Mutex
	cond *sync.Cond

	clock                    Clock
	initialBackoff           time.Duration
	maxBackoff               time.Duration
	unschedulableMaxDuration time.Duration
	// interest maps a plugin to the cluster events it registered.
	interest map[string][]fw.ClusterEvent

	activeQ       *podHeap
	backoffQ      *podHeap
	unschedulable map[string]*fw.QueuedPodInfo
	gated         map[string]*fw.QueuedPodInfo

	// schedulingCycle counts Pops; moveRequestCycle is the cycle of the
	// last cluster event that moved pods. A pod that failed in a cycle
	// before which such an event arrived goes to backoff, not to
	// unschedulable, so the event is not lost.
	schedulingCycle  int64
	moveRequestCycle int64
	closed           bool

	nominated      map[string][]*fw.PodInfo
	nominatedNodes map[types.UID]string
	// nominatedCount lets NominatedPodsForNode, called for every node in
	// every cycle, return without the lock when nothing is nominated.
	nominatedCount atomic.Int64
}

// Option configures the queue.
type Option func(*PriorityQueue)

// WithClock sets the clock.
func WithClock(c Clock) Option { return func(q *PriorityQueue) { q.clock = c } }

// WithBackoff sets the initial and maximum backoff.
func WithBackoff(initial, maxBackoff time.Duration) Option {
	return func(q *PriorityQueue) { q.initialBackoff, q.maxBackoff = initial, maxBackoff }
}

// WithUnschedulableMaxDuration sets how long a pod may stay unschedulable
// without any event before it is retried.
func WithUnschedulableMaxDuration(d time.Duration) Option {
	return func(q *PriorityQueue) { q.unschedulableMaxDuration = d }
}

// WithClusterEventInterest sets which events each plugin cares about.
func WithClusterEventInterest(m map[string][]fw.ClusterEvent) Option {
	return func(q *PriorityQueue) { q.interest = m }
}

// New returns an empty queue ordered by less.
func New(less fw.LessFunc, opts ...Option) *PriorityQueue {
	q := &PriorityQueue{
		clock:                    realClock{},
		initialBackoff:           DefaultPodInitialBackoff,
		maxBackoff:               DefaultPodMaxBackoff,
		unschedulableMaxDuration: DefaultUnschedulableMaxDuration,
		activeQ:                  newPodHeap(less),
		unschedulable:            map[string]*fw.QueuedPodInfo{},
		gated:                    map[string]*fw.QueuedPodInfo{},
		nominated:                map[string][]*fw.PodInfo{},
		nominatedNodes:           map[types.UID]string{},
	}
	q.backoffQ = newPodHeap(func(a, b *fw.QueuedPodInfo) bool {
		return q.backoffExpiry(a).Before(q.backoffExpiry(b))
	})
	for _, o := range opts {
		o(q)
	}
	q.cond = sync.NewCond(&q.mu)
	return q
}

// backoffDuration is initial × 2^(attempts−1), capped at the maximum.
func (q *PriorityQueue) backoffDuration(p *fw.QueuedPodInfo) time.Duration {
	d := q.initialBackoff
	for i := 1; i < p.Attempts; i++ {
		if d >= q.maxBackoff/2 {
			return q.maxBackoff
		}
		d *= 2
	}
	return min(d, q.maxBackoff)
}

func (q *PriorityQueue) backoffExpiry(p *fw.QueuedPodInfo) time.Time {
	return p.Timestamp.Add(q.backoffDuration(p))
}

func (q *PriorityQueue) isBackingOff(p *fw.QueuedPodInfo) bool {
	return p.Attempts > 0 && q.backoffExpiry(p).After(q.clock.Now())
}

func (q *PriorityQueue) newQueuedPodInfo(pod *v1.Pod) *fw.QueuedPodInfo {
	return &fw.QueuedPodInfo{PodInfo: fw.NewPodInfo(pod), Timestamp: q.clock.Now()}
}

// Add enqueues a new unscheduled pod in activeQ.
func (q *PriorityQueue) Add(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pod)
	q.backoffQ.delete(key)
	delete(q.unschedulable, key)
	q.updateNominatedLocked(pod)
	if len(pod.Spec.SchedulingGates) > 0 {
		q.activeQ.delete(key)
		q.gated[key] = q.newQueuedPodInfo(pod)
		return
	}
	delete(q.gated, key)
	q.activeQ.addOrUpdate(q.newQueuedPodInfo(pod))
	q.cond.Broadcast()
}

// Update records a new version of an unscheduled pod. A pod parked as
// unschedulable whose spec or labels changed is retried.
func (q *PriorityQueue) Update(oldPod, newPod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(newPod)
	q.updateNominatedLocked(newPod)
	if p, ok := q.gated[key]; ok {
		p.PodInfo.Update(newPod)
		if len(newPod.Spec.SchedulingGates) == 0 {
			delete(q.gated, key)
			p.Timestamp = q.clock.Now()
			q.activeQ.addOrUpdate(p)
			q.cond.Broadcast()
		}
		return
	}
	if p, ok := q.activeQ.get(key); ok {
		p.PodInfo.Update(newPod)
		q.activeQ.addOrUpdate(p)
		return
	}
	if p, ok := q.backoffQ.get(key); ok {
		p.PodInfo.Update(newPod)
		q.backoffQ.addOrUpdate(p)
		return
	}
	if p, ok := q.unschedulable[key]; ok {
		p.PodInfo.Update(newPod)
		if oldPod != nil && podSpecOrLabelsChanged(oldPod, newPod) {
			delete(q.unschedulable, key)
			if q.isBackingOff(p) {
				q.backoffQ.addOrUpdate(p)
			} else {
				q.activeQ.addOrUpdate(p)
				q.cond.Broadcast()
			}
		}
		return
	}
	// Not queued (e.g. being scheduled right now): nothing to do; if the
	// attempt fails the pod comes back with its latest version.
}

func podSpecOrLabelsChanged(a, b *v1.Pod) bool {
	if len(a.Labels) != len(b.Labels) {
		return true
	}
	for k, v := range a.Labels {
		if b.Labels[k] != v {
			return true
		}
	}
	return !sameSchedulingSpec(a, b)
}

// sameSchedulingSpec compares the fields scheduling depends on that may
// change on a pending pod (tolerations, resources via in-place resize).
func sameSchedulingSpec(a, b *v1.Pod) bool {
	if len(a.Spec.Tolerations) != len(b.Spec.Tolerations) || len(a.Spec.Containers) != len(b.Spec.Containers) {
		return false
	}
	for i := range a.Spec.Tolerations {
		if a.Spec.Tolerations[i] != b.Spec.Tolerations[i] {
			return false
		}
	}
	for i := range a.Spec.Containers {
		ra, rb := a.Spec.Containers[i].Resources.Requests, b.Spec.Containers[i].Resources.Requests
		if len(ra) != len(rb) {
			return false
		}
		for k, v := range ra {
			if w, ok := rb[k]; !ok || w.Cmp(v) != 0 {
				return false
			}
		}
	}
	return true
}

// Delete removes a pod from every sub-queue.
func (q *PriorityQueue) Delete(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pod)
	q.activeQ.delete(key)
	q.backoffQ.delete(key)
	delete(q.unschedulable, key)
	delete(q.gated, key)
	q.deleteNominatedLocked(pod)
}

// Pop blocks until a pod is active (or ctx is done / the queue closed) and
// returns it, counting a scheduling cycle and an attempt.
func (q *PriorityQueue) Pop(ctx context.Context) (*fw.QueuedPodInfo, error) {
	stop := context.AfterFunc(ctx, func() {
		q.mu.Lock()
		q.cond.Broadcast()
		q.mu.Unlock()
	})
	defer stop()
	q.mu.Lock()
	defer q.mu.Unlock()
	for q.activeQ.Len() == 0 {
		if q.closed {
			return nil, ErrClosed
		}
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		q.cond.Wait()
	}
	p := q.activeQ.pop()
	q.schedulingCycle++
	p.Attempts++
	if p.InitialAttemptTimestamp == nil {
		t := q.clock.Now()
		p.InitialAttemptTimestamp = &t
	}
	return p, nil
}

// SchedulingCycle returns the number of Pops so far.
func (q *PriorityQueue) SchedulingCycle() int64 {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.schedulingCycle
}

// AddUnschedulableIfNotPresent puts back a pod whose attempt in
// podSchedulingCycle failed: into backoffQ if it failed with an error or a
// move request arrived during the attempt, else into unschedulable.
func (q *PriorityQueue) AddUnschedulableIfNotPresent(p *fw.QueuedPodInfo, podSchedulingCycle int64) {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(p.Pod)
	if _, ok := q.unschedulable[key]; ok {
		return
	}
	if _, ok := q.activeQ.get(key); ok {
		return
	}
	if _, ok := q.backoffQ.get(key); ok {
		return
	}
	p.Timestamp = q.clock.Now()
	if p.UnschedulablePlugins.Len() == 0 || q.moveRequestCycle >= podSchedulingCycle {
		q.backoffQ.addOrUpdate(p)
		return
	}
	q.unschedulable[key] = p
}

// FlushBackoffQCompleted moves pods whose backoff expired to activeQ.
func (q *PriorityQueue) FlushBackoffQCompleted() {
	q.mu.Lock()
	defer q.mu.Unlock()
	moved := false
	now := q.clock.Now()
	for {
		p := q.backoffQ.peek()
		if p == nil || q.backoffExpiry(p).After(now) {
			break
		}
		q.backoffQ.pop()
		q.activeQ.addOrUpdate(p)
		moved = true
	}
	if moved {
		q.cond.Broadcast()
	}
}

// FlushUnschedulablePodsLeftover retries pods that stayed unschedulable
// longer than the maximum duration.
func (q *PriorityQueue) FlushUnschedulablePodsLeftover() {
	q.mu.Lock()
	defer q.mu.Unlock()
	now := q.clock.Now()
	var pods []*fw.QueuedPodInfo
	for _, p := range q.unschedulable {
		if now.Sub(p.Timestamp) > q.unschedulableMaxDuration {
			pods = append(pods, p)
		}
	}
	q.movePodsLocked(pods)
}

// MoveAllToActiveOrBackoffQueue retries the unschedulable pods that event
// may help: those rejected by a plugin that registered interest in it (or
// by no recorded plugin).
func (q *PriorityQueue) MoveAllToActiveOrBackoffQueue(event fw.ClusterEvent) {
	q.MoveAllToActiveOrBackoffQueueExcept(event, "")
}

// MoveAllToActiveOrBackoffQueueExcept is MoveAllToActiveOrBackoffQueue
// leaving out the pod with UID except (a pod that was just turned away and
// must wait for a further event).
func (q *PriorityQueue) MoveAllToActiveOrBackoffQueueExcept(event fw.ClusterEvent, except types.UID) {
	q.mu.Lock()
	defer q.mu.Unlock()
	var pods []*fw.QueuedPodInfo
	for _, p := range q.unschedulable {
		if (except == "" || p.Pod.UID != except) && q.interested(p, event) {
			pods = append(pods, p)
		}
	}
	q.movePodsLocked(pods)
	q.moveRequestCycle = q.schedulingCycle
}

func (q *PriorityQueue) interested(p *fw.QueuedPodInfo, event fw.ClusterEvent) bool {
	if event.Resource == fw.WildCard || p.UnschedulablePlugins.Len() == 0 {
		return true
	}
	for name := range p.UnschedulablePlugins {
		evs, registered := q.interest[name]
		if !registered {
			// A plugin that registered nothing might be helped by anything.
			return true
		}
		for _, e := range evs {
			if e.Match(event) {
				return true
			}
		}
	}
	return false
}

func (q *PriorityQueue) movePodsLocked(pods []*fw.QueuedPodInfo) {
	active := false
	for _, p := range pods {
		delete(q.unschedulable, podKey(p.Pod))
		if q.isBackingOff(p) {
			q.backoffQ.addOrUpdate(p)
		} else {
			q.activeQ.addOrUpdate(p)
			active = true
		}
	}
	if active {
		q.cond.Broadcast()
	}
}

// Close makes Pop return ErrClosed when activeQ is empty, waking waiters.
func (q *PriorityQueue) Close() {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.closed = true
	q.cond.Broadcast()
}

// Run flushes the backoff queue every second and leftover unschedulable
// pods every 30 seconds until ctx is done.
func (q *PriorityQueue) Run(ctx context.Context) {
	backoff := time.NewTicker(time.Second)
	defer backoff.Stop()
	leftover := time.NewTicker(30 * time.Second)
	defer leftover.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-backoff.C:
			q.FlushBackoffQCompleted()
		case <-leftover.C:
			q.FlushUnschedulablePodsLeftover()
		}
	}
}

// Lengths reports the sizes of activeQ, backoffQ, unschedulable and gated.
func (q *PriorityQueue) Lengths() (active, backoff, unschedulable, gated int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	return q.activeQ.Len(), q.backoffQ.Len(), len(q.unschedulable), len(q.gated)
}

// Where reports which sub-queue holds the pod: "active", "backoff",
// "unschedulable", "gated" or "".
func (q *PriorityQueue) Where(pod *v1.Pod) string {
	q.mu.Lock()
	defer q.mu.Unlock()
	key := podKey(pod)
	if _, ok := q.activeQ.get(key); ok {
		return "active"
	}
	if _, ok := q.backoffQ.get(key); ok {
		return "backoff"
	}
	if _, ok := q.unschedulable[key]; ok {
		return "unschedulable"
	}
	if _, ok := q.gated[key]; ok {
		return "gated"
	}
	return ""
}

// AddNominatedPod records that pod is to run on nodeName once its victims
// are gone.
func (q *PriorityQueue) AddNominatedPod(pi *fw.PodInfo, nodeName string) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.addNominatedLocked(pi, nodeName)
}

func (q *PriorityQueue) addNominatedLocked(pi *fw.PodInfo, nodeName string) {
	q.deleteNominatedLocked(pi.Pod)
	if nodeName == "" {
		return
	}
	q.nominatedNodes[pi.Pod.UID] = nodeName
	q.nominated[nodeName] = append(q.nominated[nodeName], pi)
	q.nominatedCount.Add(1)
}

// DeleteNominatedPodIfExists forgets a pod's nomination.
func (q *PriorityQueue) DeleteNominatedPodIfExists(pod *v1.Pod) {
	q.mu.Lock()
	defer q.mu.Unlock()
	q.deleteNominatedLocked(pod)
}

func (q *PriorityQueue) deleteNominatedLocked(pod *v1.Pod) {
	node, ok := q.nominatedNodes[pod.UID]
	if !ok {
		return
	}
	delete(q.nominatedNodes, pod.UID)
	q.nominatedCount.Add(-1)
	list := q.nominated[node]
	for i, pi := range list {
		if pi.Pod.UID == pod.UID {
			list = append(list[:i:i], list[i+1:]...)
			break
		}
	}
	if len(list) == 0 {
		delete(q.nominated, node)
	} else {
		q.nominated[node] = list
	}
}

// updateNominatedLocked follows status.nominatedNodeName of an unscheduled pod.
func (q *PriorityQueue) updateNominatedLocked(pod *v1.Pod) {
	if n := pod.Status.NominatedNodeName; n != "" {
		q.addNominatedLocked(fw.NewPodInfo(pod), n)
	} else if _, ok := q.nominatedNodes[pod.UID]; ok {
		q.deleteNominatedLocked(pod)
	}
}

// NominatedPodsForNode implements fw.PodNominator.
func (q *PriorityQueue) NominatedPodsForNode(nodeName string) []*fw.PodInfo {
	if q.nominatedCount.Load() == 0 {
		return nil
	}
	q.mu.Lock()
	defer q.mu.Unlock()
	list := q.nominated[nodeName]
	if len(list) == 0 {
		return nil
	}
	return append([]*fw.PodInfo(nil), list...)
}
