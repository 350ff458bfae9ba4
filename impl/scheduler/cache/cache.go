// Package cache is the scheduler's cache of nodes and the pods assigned to
// them. A pod the scheduler has decided on is *assumed* onto its node at once,
// so the next decision sees it before the binding is observed through the
// watch (SCHED-2 NodeCapacity: capacity is never double-booked). When the binding
// succeeds the assumption waits for the informer's Add to confirm it; when
// it fails the scheduler forgets it. An assumption whose binding finished
// but that was never confirmed expires after a TTL.
//
// Snapshots are incremental: NodeInfos are kept in a list ordered by most
// recent change, and UpdateSnapshot copies only those newer than the
// snapshot's generation — one or two per cycle at steady state.
package cache

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/faults"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Clock is the time source; tests pass a fake.
type Clock interface {
	Now() time.Time
}

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

// nodeInfoListItem is an entry of the most-recently-updated list.
type nodeInfoListItem struct {
	info       *fw.NodeInfo
	next, prev *nodeInfoListItem
}

type podState struct {
	pod *v1.Pod
	// info is the pod's PodInfo on its node's NodeInfo, by which it is
	// removed (found by pointer, not by reading every pod's UID there).
	info *fw.PodInfo
	// deadline is set when the binding of an assumed pod finished.
	deadline        *time.Time
	bindingFinished bool
}

// Cache holds nodes and assigned pods. All methods are safe for concurrent use.
type Cache struct {
	mu    sync.RWMutex
	ttl   time.Duration
	clock Clock

	assumed   map[types.UID]bool
	podStates map[types.UID]*podState
	nodes     map[string]*nodeInfoListItem
	head      *nodeInfoListItem
	// nodeNames is the sorted set of names of nodes that exist (not just
	// pods whose node was deleted); a change of it rebuilds snapshot lists.
	nodeNames    []string
	nodeSetEpoch int64
	// imageNodes counts, per image name in nodes' status.images, the nodes
	// that have it (ImageLocality's spread); imageEpoch changes with it.
	imageNodes map[string]int
	imageEpoch int64
}

// New returns a cache whose assumed pods expire ttl after their binding
// finished without being confirmed (0 means never).
func New(ttl time.Duration, clock Clock) *Cache {
	if clock == nil {
		clock = realClock{}
	}
	return &Cache{
		ttl:        ttl,
		clock:      clock,
		assumed:    map[types.UID]bool{},
		podStates:  map[types.UID]*podState{},
		nodes:      map[string]*nodeInfoListItem{},
		imageNodes: map[string]int{},
	}
}

// countImages adds delta to the node count of each image name of node.
func (c *Cache) countImages(node *v1.Node, delta int) {
	if node == nil || len(node.Status.Images) == 0 {
		return
	}
	for name := range fw.ImageNames(node) {
		c.imageNodes[name] += delta
		if c.imageNodes[name] <= 0 {
			delete(c.imageNodes, name)
		}
	}
	c.imageEpoch++
}

func (c *Cache) moveToHead(item *nodeInfoListItem) {
	if c.head == item {
		return
	}
	if item.prev != nil {
		item.prev.next = item.next
	}
	if item.next != nil {
		item.next.prev = item.prev
	}
	item.prev = nil
	item.next = c.head
	if c.head != nil {
		c.head.prev = item
	}
	c.head = item
}

func (c *Cache) removeItem(name string) {
	item, ok := c.nodes[name]
	if !ok {
		return
	}
	if item.prev != nil {
		item.prev.next = item.next
	}
	if item.next != nil {
		item.next.prev = item.prev
	}
	if c.head == item {
		c.head = item.next
	}
	delete(c.nodes, name)
}

func (c *Cache) item(name string) *nodeInfoListItem {
	item, ok := c.nodes[name]
	if !ok {
		item = &nodeInfoListItem{info: &fw.NodeInfo{}}
		c.nodes[name] = item
	}
	c.moveToHead(item)
	return item
}

func (c *Cache) addPodLocked(pod *v1.Pod, assumed bool) {
	item := c.item(pod.Spec.NodeName)
	pi := fw.NewPodInfo(pod)
	item.info.AddPodInfo(pi)
	c.podStates[pod.UID] = &podState{pod: pod, info: pi}
	if assumed {
		c.assumed[pod.UID] = true
	}
}

func (c *Cache) removePodLocked(ps *podState) error {
	pod := ps.pod
	item, ok := c.nodes[pod.Spec.NodeName]
	if !ok {
		return fmt.Errorf("removing pod %s/%s: node %q not in cache", pod.Namespace, pod.Name, pod.Spec.NodeName)
	}
	if err := item.info.RemovePodInfo(ps.info); err != nil {
		return err
	}
	if len(item.info.Pods) == 0 && item.info.Node() == nil {
		c.removeItem(pod.Spec.NodeName)
	} else {
		c.moveToHead(item)
	}
	delete(c.podStates, pod.UID)
	delete(c.assumed, pod.UID)
	return nil
}

// AssumePod places pod (with spec.nodeName set to the chosen node) on its
// node ahead of the binding.
func (c *Cache) AssumePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.podStates[pod.UID]; ok {
		return fmt.Errorf("assuming pod %s/%s: already in the cache", pod.Namespace, pod.Name)
	}
	if pod.Spec.NodeName == "" {
		return fmt.Errorf("assuming pod %s/%s: no node name", pod.Namespace, pod.Name)
	}
	if faults.Enabled(faults.SchedulerIgnoresAssumedPods) { // mutation: the assumption is dropped (SCHED-2)
		return nil
	}
	c.addPodLocked(pod, true)
	return nil
}

// FinishBinding starts the expiry clock of an assumed pod whose binding
// request succeeded.
func (c *Cache) FinishBinding(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[pod.UID]
	if ok && c.assumed[pod.UID] {
		if c.ttl > 0 {
			d := c.clock.Now().Add(c.ttl)
			ps.deadline = &d
		}
		ps.bindingFinished = true
	}
	return nil
}

// ForgetPod drops an assumed pod (its binding failed).
func (c *Cache) ForgetPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[pod.UID]
	if !ok {
		return nil
	}
	if !c.assumed[pod.UID] {
		return fmt.Errorf("forgetting pod %s/%s: it is not assumed", pod.Namespace, pod.Name)
	}
	if ps.pod.Spec.NodeName != pod.Spec.NodeName {
		return fmt.Errorf("forgetting pod %s/%s: assumed on node %q, not %q", pod.Namespace, pod.Name, ps.pod.Spec.NodeName, pod.Spec.NodeName)
	}
	return c.removePodLocked(ps)
}

// AddPod records a pod observed bound to a node, confirming an assumption
// (moving it if it was bound elsewhere than assumed).
func (c *Cache) AddPod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[pod.UID]
	switch {
	case ok && c.assumed[pod.UID]:
		if err := c.removePodLocked(ps); err != nil {
			return err
		}
		c.addPodLocked(pod, false)
	case ok:
		// Added twice (e.g. after the expiry of an assumption re-added
		// it): treat as an update.
		if err := c.removePodLocked(ps); err != nil {
			return err
		}
		c.addPodLocked(pod, false)
	default:
		c.addPodLocked(pod, false)
	}
	return nil
}

// UpdatePod replaces a bound pod's version.
func (c *Cache) UpdatePod(oldPod, newPod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[oldPod.UID]
	if !ok {
		c.addPodLocked(newPod, false)
		return nil
	}
	if c.assumed[oldPod.UID] {
		// An update before the add: the informer saw the bound pod.
		if err := c.removePodLocked(ps); err != nil {
			return err
		}
		c.addPodLocked(newPod, false)
		return nil
	}
	if err := c.removePodLocked(ps); err != nil {
		return err
	}
	c.addPodLocked(newPod, false)
	return nil
}

// RemovePod drops a pod that was deleted (or finished).
func (c *Cache) RemovePod(pod *v1.Pod) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	ps, ok := c.podStates[pod.UID]
	if !ok {
		return nil
	}
	return c.removePodLocked(ps)
}

// IsAssumedPod reports whether the pod is assumed and not yet confirmed.
func (c *Cache) IsAssumedPod(pod *v1.Pod) bool {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return c.assumed[pod.UID]
}

// GetPod returns the cached version of a pod.
func (c *Cache) GetPod(pod *v1.Pod) (*v1.Pod, bool) {
	c.mu.RLock()
	defer c.mu.RUnlock()
	ps, ok := c.podStates[pod.UID]
	if !ok {
		return nil, false
	}
	return ps.pod, true
}

func (c *Cache) insertNodeName(name string) {
	i, found := slices.BinarySearch(c.nodeNames, name)
	if !found {
		c.nodeNames = slices.Insert(c.nodeNames, i, name)
		c.nodeSetEpoch++
	}
}

// AddNode records a node.
func (c *Cache) AddNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	item := c.item(node.Name)
	if old := item.info.Node(); old == nil || !equalImages(old.Status.Images, node.Status.Images) {
		c.countImages(old, -1)
		c.countImages(node, 1)
	}
	item.info.SetNode(node)
	item.info.Generation = fw.NextGeneration()
	c.insertNodeName(node.Name)
}

// UpdateNode records a new version of a node.
func (c *Cache) UpdateNode(_, newNode *v1.Node) { c.AddNode(newNode) }

// RemoveNode drops a node; its pods stay accounted until they are removed.
func (c *Cache) RemoveNode(node *v1.Node) {
	c.mu.Lock()
	defer c.mu.Unlock()
	item, ok := c.nodes[node.Name]
	if !ok {
		return
	}
	c.countImages(item.info.Node(), -1)
	if i, found := slices.BinarySearch(c.nodeNames, node.Name); found {
		c.nodeNames = slices.Delete(c.nodeNames, i, i+1)
		c.nodeSetEpoch++
	}
	if len(item.info.Pods) == 0 {
		c.removeItem(node.Name)
		return
	}
	item.info.RemoveNode()
	item.info.Generation = fw.NextGeneration()
	c.moveToHead(item)
}

// NodeCount and PodCount report sizes (tests, metrics).
func (c *Cache) NodeCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.nodeNames)
}

// PodCount is the number of pods the cache accounts for, assumed included.
func (c *Cache) PodCount() int {
	c.mu.RLock()
	defer c.mu.RUnlock()
	return len(c.podStates)
}

// CleanupExpiredAssumedPods forgets assumed pods whose binding finished
// longer than the TTL ago without the bound pod being observed.
func (c *Cache) CleanupExpiredAssumedPods() {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.clock.Now()
	for uid := range c.assumed {
		ps := c.podStates[uid]
		if ps == nil || !ps.bindingFinished || ps.deadline == nil || now.Before(*ps.deadline) {
			continue
		}
		_ = c.removePodLocked(ps)
	}
}

// UpdateSnapshot brings snap up to date, copying only NodeInfos changed since
// its last update.
func (c *Cache) UpdateSnapshot(snap *Snapshot) error {
	c.mu.RLock()
	defer c.mu.RUnlock()
	if snap.nodeInfoMap == nil {
		snap.nodeInfoMap = map[string]*fw.NodeInfo{}
	}
	affinityChanged := false
	listChanged := false
	newest := snap.generation
	for item := c.head; item != nil; item = item.next {
		if item.info.Generation <= snap.generation {
			break
		}
		newest = max(newest, item.info.Generation)
		if item.info.Node() == nil {
			continue
		}
		name := item.info.Node().Name
		clone := item.info.Clone()
		old, existed := snap.nodeInfoMap[name]
		if !existed {
			listChanged = true
		} else {
			if (len(old.PodsWithAffinity) > 0) != (len(clone.PodsWithAffinity) > 0) ||
				(len(old.PodsWithRequiredAntiAffinity) > 0) != (len(clone.PodsWithRequiredAntiAffinity) > 0) {
				affinityChanged = true
			}
			// Replace in place in the list by swapping contents: the list
			// holds pointers, so overwrite the struct the pointer refers to.
			*old = *clone
			continue
		}
		snap.nodeInfoMap[name] = clone
		if len(clone.PodsWithAffinity) > 0 || len(clone.PodsWithRequiredAntiAffinity) > 0 {
			affinityChanged = true
		}
	}
	snap.generation = newest
	if snap.imageEpoch != c.imageEpoch {
		snap.imageEpoch = c.imageEpoch
		snap.imageNodes = maps.Clone(c.imageNodes)
	}
	// Nodes deleted from the cache (or whose node object was removed).
	if snap.nodeSetEpoch != c.nodeSetEpoch {
		snap.nodeSetEpoch = c.nodeSetEpoch
		listChanged = true
		for name := range snap.nodeInfoMap {
			item, ok := c.nodes[name]
			if !ok || item.info.Node() == nil {
				delete(snap.nodeInfoMap, name)
				listChanged = true
			}
		}
	}
	if listChanged || len(snap.nodeInfoList) != len(c.nodeNames) {
		list := make([]*fw.NodeInfo, 0, len(c.nodeNames))
		for _, name := range c.nodeNames {
			if ni, ok := snap.nodeInfoMap[name]; ok {
				list = append(list, ni)
			}
		}
		snap.layOut(list)
		affinityChanged = true
	}
	if affinityChanged {
		snap.rebuildAffinityLists()
	}
	if len(snap.nodeInfoList) != len(c.nodeNames) {
		return fmt.Errorf("snapshot has %d nodes, cache %d (%s)", len(snap.nodeInfoList), len(c.nodeNames), strings.Join(c.nodeNames, ","))
	}
	return nil
}

func equalImages(a, b []v1.ContainerImage) bool {
	return slices.EqualFunc(a, b, func(x, y v1.ContainerImage) bool {
		return x.SizeBytes == y.SizeBytes && slices.Equal(x.Names, y.Names)
	})
}
