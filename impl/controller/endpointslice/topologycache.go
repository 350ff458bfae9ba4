package endpointslice

import (
	"maps"
	"slices"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
)

// topologyCache is the controller's memory for topology-aware hints, as
// upstream's topology cache: the Topology of the nodes, recomputed when a
// node is added, deleted or changes what it counts for, and the hints
// each service's last sync gave. Safe for concurrent use (node events
// come from the informer, syncs from the workers).
type topologyCache struct {
	mu    sync.Mutex
	topo  Topology
	hints map[string]ZoneHints // by service key
	// waiting are the services with topology-mode Auto whose last sync
	// could give no hints.
	waiting map[string]bool
}

func newTopologyCache() *topologyCache {
	return &topologyCache{topo: NodeTopology(nil), hints: map[string]ZoneHints{}, waiting: map[string]bool{}}
}

// get returns the Topology and key's hints for a sync.
func (t *topologyCache) get(key string) (Topology, ZoneHints) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.topo, t.hints[key]
}

// setHints records the hints key's sync gave, and whether the service
// asks for them (auto).
func (t *topologyCache) setHints(key string, auto bool, h ZoneHints) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.waiting, key)
	if len(h) == 0 {
		delete(t.hints, key)
		if auto {
			t.waiting[key] = true
		}
		return
	}
	t.hints[key] = h
}

// setNodes recomputes the Topology from nodes and returns the keys of
// the services to sync again: those whose hints it overloads (as
// upstream), and, when the set of zones changed, those waiting for hints
// (upstream leaves them to their next change).
func (t *topologyCache) setNodes(nodes []*corev1.Node) []string {
	topo := NodeTopology(nodes)
	t.mu.Lock()
	defer t.mu.Unlock()
	zonesChanged := !maps.EqualFunc(t.topo.CPURatios, topo.CPURatios, func(float64, float64) bool { return true })
	t.topo = topo
	var overloaded []string
	if zonesChanged {
		overloaded = slices.Collect(maps.Keys(t.waiting))
	}
	for key, byType := range t.hints {
		for _, h := range byType {
			if Overloaded(h, topo) {
				overloaded = append(overloaded, key)
				break
			}
		}
	}
	return overloaded
}

// nodeHandler recomputes the topology from lister on node changes that
// can alter it and enqueues the services it overloads.
func (t *topologyCache) nodeHandler(lister corelisters.NodeLister, enqueue func(key string)) cache.ResourceEventHandlerFuncs {
	changed := func() {
		nodes, err := lister.List(labels.Everything())
		if err != nil {
			return // a lister over the informer's cache does not fail
		}
		for _, key := range t.setNodes(nodes) {
			enqueue(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { changed() },
		DeleteFunc: func(any) { changed() },
		UpdateFunc: func(old, cur any) {
			o, ok1 := old.(*corev1.Node)
			c, ok2 := cur.(*corev1.Node)
			if ok1 && ok2 && TopologyNodeChanged(o, c) {
				changed()
			}
		},
	}
}
