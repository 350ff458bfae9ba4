package queue

import (
	"container/heap"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// podHeap is a heap of queued pods with lookup by key.
type podHeap struct {
	items []*fw.QueuedPodInfo
	index map[string]int
	less  func(a, b *fw.QueuedPodInfo) bool
}

func newPodHeap(less func(a, b *fw.QueuedPodInfo) bool) *podHeap {
	return &podHeap{index: map[string]int{}, less: less}
}

func (h *podHeap) Len() int           { return len(h.items) }
func (h *podHeap) Less(i, j int) bool { return h.less(h.items[i], h.items[j]) }
func (h *podHeap) Swap(i, j int) {
	h.items[i], h.items[j] = h.items[j], h.items[i]
	h.index[podKey(h.items[i].Pod)] = i
	h.index[podKey(h.items[j].Pod)] = j
}
func (h *podHeap) Push(x any) {
	p := x.(*fw.QueuedPodInfo)
	h.index[podKey(p.Pod)] = len(h.items)
	h.items = append(h.items, p)
}
func (h *podHeap) Pop() any {
	n := len(h.items) - 1
	p := h.items[n]
	h.items[n] = nil
	h.items = h.items[:n]
	delete(h.index, podKey(p.Pod))
	return p
}

// addOrUpdate inserts p or replaces the entry with the same key.
func (h *podHeap) addOrUpdate(p *fw.QueuedPodInfo) {
	if i, ok := h.index[podKey(p.Pod)]; ok {
		h.items[i] = p
		heap.Fix(h, i)
		return
	}
	heap.Push(h, p)
}

func (h *podHeap) get(key string) (*fw.QueuedPodInfo, bool) {
	i, ok := h.index[key]
	if !ok {
		return nil, false
	}
	return h.items[i], true
}

func (h *podHeap) delete(key string) bool {
	i, ok := h.index[key]
	if !ok {
		return false
	}
	heap.Remove(h, i)
	return true
}

func (h *podHeap) peek() *fw.QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return h.items[0]
}

func (h *podHeap) pop() *fw.QueuedPodInfo {
	if len(h.items) == 0 {
		return nil
	}
	return heap.Pop(h).(*fw.QueuedPodInfo)
}
