package cache

import (
	"fmt"

	v1 "k8s.io/api/core/v1"

	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
)

// Snapshot is an immutable-per-cycle view of the cache: what one scheduling
// cycle decides on. Cache.UpdateSnapshot refreshes it in place, copying only
// the NodeInfos that changed since its generation.
//
// The NodeInfos live in one array, in the list's order (nodeInfos), so that
// a pod's filter and score pass over hundreds of nodes reads one contiguous
// stretch of memory, not NodeInfos scattered over the heap wherever each
// node's first clone was allocated (a cache and TLB miss each once the rest
// of the process has evicted them between two pods). The array is laid out
// again when the set of nodes changes; NodeInfos of nodes that change are
// overwritten in place.
type Snapshot struct {
	nodeInfoMap  map[string]*fw.NodeInfo
	nodeInfoList []*fw.NodeInfo
	// nodeInfos holds the NodeInfos nodeInfoList points to.
	nodeInfos []fw.NodeInfo
	// havePodsWithAffinity / RequiredAntiAffinity list only nodes that have
	// such pods, so InterPodAffinity's PreFilter does not visit every node.
	havePodsWithAffinity             []*fw.NodeInfo
	havePodsWithRequiredAntiAffinity []*fw.NodeInfo
	generation                       int64
	nodeSetEpoch                     int64
	// imageNodes is the cache's count of nodes per image name.
	imageNodes map[string]int
	imageEpoch int64
}

var _ fw.SharedLister = (*Snapshot)(nil)

// NewEmptySnapshot returns a snapshot with no nodes.
func NewEmptySnapshot() *Snapshot {
	return &Snapshot{nodeInfoMap: map[string]*fw.NodeInfo{}}
}

// NewSnapshot builds a snapshot straight from pods and nodes (tests and
// benchmarks). Pods whose spec.nodeName names no node are ignored.
func NewSnapshot(pods []*v1.Pod, nodes []*v1.Node) *Snapshot {
	s := NewEmptySnapshot()
	for _, n := range nodes {
		ni := &fw.NodeInfo{}
		ni.SetNode(n)
		s.nodeInfoMap[n.Name] = ni
		s.nodeInfoList = append(s.nodeInfoList, ni)
	}
	for _, n := range nodes {
		for name := range fw.ImageNames(n) {
			if s.imageNodes == nil {
				s.imageNodes = map[string]int{}
			}
			s.imageNodes[name]++
		}
	}
	for _, p := range pods {
		if ni, ok := s.nodeInfoMap[p.Spec.NodeName]; ok {
			ni.AddPodInfo(fw.NewPodInfo(p))
		}
	}
	s.layOut(s.nodeInfoList)
	s.rebuildAffinityLists()
	return s
}

// layOut makes list, in its order, the snapshot's node list, copying the
// NodeInfos into a new array (the old one stays as it was for anyone still
// holding a pointer into it) and pointing the map and list at the copies.
// The map must hold every node of list under its name.
func (s *Snapshot) layOut(list []*fw.NodeInfo) {
	infos := make([]fw.NodeInfo, len(list))
	out := make([]*fw.NodeInfo, len(list))
	for i, ni := range list {
		infos[i] = *ni
		out[i] = &infos[i]
		s.nodeInfoMap[infos[i].Name()] = &infos[i]
	}
	s.nodeInfos = infos
	s.nodeInfoList = out
}

func (s *Snapshot) rebuildAffinityLists() {
	s.havePodsWithAffinity = s.havePodsWithAffinity[:0]
	s.havePodsWithRequiredAntiAffinity = s.havePodsWithRequiredAntiAffinity[:0]
	for _, ni := range s.nodeInfoList {
		if len(ni.PodsWithAffinity) > 0 {
			s.havePodsWithAffinity = append(s.havePodsWithAffinity, ni)
		}
		if len(ni.PodsWithRequiredAntiAffinity) > 0 {
			s.havePodsWithRequiredAntiAffinity = append(s.havePodsWithRequiredAntiAffinity, ni)
		}
	}
}

// NodeInfos implements fw.SharedLister.
func (s *Snapshot) NodeInfos() fw.NodeInfoLister { return s }

// NumNodes is the number of nodes in the snapshot.
func (s *Snapshot) NumNodes() int { return len(s.nodeInfoList) }

// List returns every node, in a stable order.
func (s *Snapshot) List() ([]*fw.NodeInfo, error) { return s.nodeInfoList, nil }

// HavePodsWithAffinityList returns the nodes with pods that have affinity terms.
func (s *Snapshot) HavePodsWithAffinityList() ([]*fw.NodeInfo, error) {
	return s.havePodsWithAffinity, nil
}

// HavePodsWithRequiredAntiAffinityList returns the nodes with pods that have
// required anti-affinity terms.
func (s *Snapshot) HavePodsWithRequiredAntiAffinityList() ([]*fw.NodeInfo, error) {
	return s.havePodsWithRequiredAntiAffinity, nil
}

// NumNodesWithImage is the number of nodes whose status.images list the
// image name.
func (s *Snapshot) NumNodesWithImage(name string) int { return s.imageNodes[name] }

// Get returns one node's NodeInfo.
func (s *Snapshot) Get(name string) (*fw.NodeInfo, error) {
	if ni, ok := s.nodeInfoMap[name]; ok && ni.Node() != nil {
		return ni, nil
	}
	return nil, fmt.Errorf("nodeinfo %q: %w", name, fw.ErrNotFound)
}
