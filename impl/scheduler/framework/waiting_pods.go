package framework

import (
	"fmt"
	"sort"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// MaxPermitTimeout caps how long a Permit plugin may hold a pod, as in
// kube-scheduler.
const MaxPermitTimeout = 15 * time.Minute

// WaitingPods is the set of pods held at Permit, by UID. One set may be
// shared by every profile of a scheduler (WithWaitingPods), so a plugin of
// one profile can see pods another holds, as upstream allows.
type WaitingPods struct {
	mu   sync.RWMutex
	pods map[types.UID]*waitingPod
}

// NewWaitingPods returns an empty set.
func NewWaitingPods() *WaitingPods {
	return &WaitingPods{pods: map[types.UID]*waitingPod{}}
}

func (m *WaitingPods) add(wp *waitingPod) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.pods[wp.pod.UID] = wp
}

func (m *WaitingPods) remove(uid types.UID) {
	m.mu.Lock()
	defer m.mu.Unlock()
	delete(m.pods, uid)
}

func (m *WaitingPods) get(uid types.UID) *waitingPod {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return m.pods[uid]
}

// Len is the number of waiting pods.
func (m *WaitingPods) Len() int {
	m.mu.RLock()
	defer m.mu.RUnlock()
	return len(m.pods)
}

func (m *WaitingPods) iterate(f func(WaitingPod)) {
	m.mu.RLock()
	list := make([]*waitingPod, 0, len(m.pods))
	for _, wp := range m.pods {
		list = append(list, wp)
	}
	m.mu.RUnlock()
	// f may Allow or Reject, which must not run under the set's lock.
	for _, wp := range list {
		f(wp)
	}
}

// waitingPod is one held pod: a timer per waiting plugin, and a channel of
// capacity one that receives the single verdict.
type waitingPod struct {
	pod      *v1.Pod
	nodeName string
	verdict  chan *Status

	mu      sync.Mutex
	pending map[string]*time.Timer
	decided bool
}

// newWaitingPod holds pod for the plugins in waits, each for its timeout;
// a timeout rejects the pod in Kubernetes' words.
func newWaitingPod(pod *v1.Pod, nodeName string, waits map[string]time.Duration) *waitingPod {
	wp := &waitingPod{pod: pod, nodeName: nodeName, verdict: make(chan *Status, 1), pending: make(map[string]*time.Timer, len(waits))}
	wp.mu.Lock()
	defer wp.mu.Unlock()
	for name, d := range waits {
		wp.pending[name] = time.AfterFunc(d, func() {
			wp.Reject(name, fmt.Sprintf("rejected due to timeout after waiting %v at plugin %v", d, name))
		})
	}
	return wp
}

func (wp *waitingPod) GetPod() *v1.Pod  { return wp.pod }
func (wp *waitingPod) NodeName() string { return wp.nodeName }

func (wp *waitingPod) GetPendingPlugins() []string {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	names := make([]string, 0, len(wp.pending))
	for n := range wp.pending {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (wp *waitingPod) Allow(pluginName string) {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	if t, ok := wp.pending[pluginName]; ok {
		t.Stop()
		delete(wp.pending, pluginName)
	}
	if len(wp.pending) == 0 {
		wp.decide(nil)
	}
}

func (wp *waitingPod) Reject(pluginName, msg string) {
	wp.mu.Lock()
	defer wp.mu.Unlock()
	wp.decide(NewStatus(Unschedulable, msg).WithPlugin(pluginName))
}

// decide sends the first verdict and stops every timer; later verdicts are
// dropped. Called with mu held.
func (wp *waitingPod) decide(s *Status) {
	if wp.decided {
		return
	}
	wp.decided = true
	for _, t := range wp.pending {
		t.Stop()
	}
	wp.verdict <- s
}
