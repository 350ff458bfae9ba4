package endpointslice

import (
	"errors"
	"sync"

	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
)

// Tracker remembers, per owner key (a service's, or an Endpoints' for the
// mirroring controller), the generation of every slice a controller last
// wrote and the slices it deleted, so that events of its own writes cause
// no sync and a sync over a cache that has not seen them yet is retried
// instead of deciding (and duplicating slices) from old state, as
// upstream's endpointSliceTracker. Safe for concurrent use.
type Tracker struct {
	mu sync.Mutex
	// generations by service key and slice name; deletedGeneration marks
	// a slice this controller deleted.
	generations map[string]map[string]int64
}

const deletedGeneration = -1

// NewTracker returns an empty Tracker.
func NewTracker() *Tracker { return &Tracker{generations: map[string]map[string]int64{}} }

func (t *Tracker) set(key, name string, gen int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.generations[key] == nil {
		t.generations[key] = map[string]int64{}
	}
	t.generations[key][name] = gen
}

// Wrote records s as the controller's write (create or update) for key.
func (t *Tracker) Wrote(key string, s *discoveryv1.EndpointSlice) { t.set(key, s.Name, s.Generation) }

// Deleted records that the controller deleted s.
func (t *Tracker) Deleted(key string, s *discoveryv1.EndpointSlice) {
	t.set(key, s.Name, deletedGeneration)
}

// Forget drops what is known of key.
func (t *Tracker) Forget(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.generations, key)
}

// Expected reports whether s is as the controller last wrote it.
func (t *Tracker) Expected(key string, s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gen, ok := t.generations[key][s.Name]
	return ok && gen == s.Generation
}

// Gone forgets a deleted slice and reports whether the controller
// deleted it.
func (t *Tracker) Gone(key string, s *discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	gen, ok := t.generations[key][s.Name]
	delete(t.generations[key], s.Name)
	return ok && gen == deletedGeneration
}

// Stale reports whether listed misses a write of the controller: a
// slice it wrote absent or at an older generation, or a slice it deleted
// still present. Deletions the list confirms are forgotten.
func (t *Tracker) Stale(key string, listed []*discoveryv1.EndpointSlice) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	byName := make(map[string]*discoveryv1.EndpointSlice, len(listed))
	for _, s := range listed {
		byName[s.Name] = s
	}
	for name, gen := range t.generations[key] {
		s, present := byName[name]
		switch {
		case gen == deletedGeneration && present:
			return true
		case gen == deletedGeneration:
			delete(t.generations[key], name)
		case !present || s.Generation < gen:
			return true
		}
	}
	return false
}

// ErrStale says the slice cache has not seen a controller's last writes
// yet (Tracker.Stale); the sync is retried.
var ErrStale = errors.New("EndpointSlice informer cache is out of date")

// Handler is the EndpointSlice informer's event handler of the controller
// whose slices carry managed-by label managedBy: a change or deletion of
// one of its slices by someone else enqueues the owner key (the slice's
// namespace and service-name label), its own writes (t) do not.
func (t *Tracker) Handler(managedBy string, queue workqueue.TypedInterface[string]) cache.ResourceEventHandlerFuncs {
	ownerKey := func(obj any) (string, *discoveryv1.EndpointSlice) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		s, ok := obj.(*discoveryv1.EndpointSlice)
		if !ok || s.Labels[discoveryv1.LabelManagedBy] != managedBy || s.Labels[discoveryv1.LabelServiceName] == "" {
			return "", nil
		}
		return s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName], s
	}
	changed := func(obj any) {
		if key, s := ownerKey(obj); s != nil && !t.Expected(key, s) {
			queue.Add(key)
		}
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: func(_, obj any) { changed(obj) },
		DeleteFunc: func(obj any) {
			if key, s := ownerKey(obj); s != nil && !t.Gone(key, s) {
				queue.Add(key)
			}
		},
	}
}
