package garbagecollector

import (
	"container/list"
	"sync"

	"k8s.io/apimachinery/pkg/types"
)

// DefaultAbsentOwnerCacheSize bounds the absent-owner cache, as
// kube-controller-manager's (500 references).
const DefaultAbsentOwnerCacheSize = 500

// AbsentOwnerCache remembers owner references verified absent — a live
// read found no object under that name, or one with another uid, or an
// informer saw the object deleted while it had dependents — so the other
// dependents of the same owner are collected without reading it again.
// The key is the whole reference (apiVersion, kind, namespace, name, uid):
// a dependent that names the same uid with other coordinates is looked up
// on its own. A uid is never reused, so an entry stays true; still, an
// object observed alive under a cached uid drops the entries with that uid
// (Forget), so the cache never outlives a stale read. Least recently used
// entries are evicted beyond the bound. Safe for concurrent use.
type AbsentOwnerCache struct {
	mu    sync.Mutex
	max   int
	order *list.List // of ObjectRef, most recently used first
	items map[ObjectRef]*list.Element
	byUID map[types.UID]map[ObjectRef]struct{}
}

// NewAbsentOwnerCache returns a cache of at most max references
// (DefaultAbsentOwnerCacheSize when max < 1).
func NewAbsentOwnerCache(max int) *AbsentOwnerCache {
	if max < 1 {
		max = DefaultAbsentOwnerCacheSize
	}
	return &AbsentOwnerCache{max: max, order: list.New(), items: map[ObjectRef]*list.Element{}, byUID: map[types.UID]map[ObjectRef]struct{}{}}
}

// Add records ref as verified absent.
func (c *AbsentOwnerCache) Add(ref ObjectRef) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e, ok := c.items[ref]; ok {
		c.order.MoveToFront(e)
		return
	}
	c.items[ref] = c.order.PushFront(ref)
	if c.byUID[ref.UID] == nil {
		c.byUID[ref.UID] = map[ObjectRef]struct{}{}
	}
	c.byUID[ref.UID][ref] = struct{}{}
	for c.order.Len() > c.max {
		c.remove(c.order.Back())
	}
}

// Has reports whether ref was verified absent (and marks it recently used).
func (c *AbsentOwnerCache) Has(ref ObjectRef) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.items[ref]
	if ok {
		c.order.MoveToFront(e)
	}
	return ok
}

// Forget drops every entry with uid: an object with it was observed.
func (c *AbsentOwnerCache) Forget(uid types.UID) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for ref := range c.byUID[uid] {
		c.remove(c.items[ref])
	}
}

// Len is the number of cached references.
func (c *AbsentOwnerCache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.order.Len()
}

func (c *AbsentOwnerCache) remove(e *list.Element) {
	ref := c.order.Remove(e).(ObjectRef)
	delete(c.items, ref)
	if refs := c.byUID[ref.UID]; refs != nil {
		delete(refs, ref)
		if len(refs) == 0 {
			delete(c.byUID, ref.UID)
		}
	}
}
