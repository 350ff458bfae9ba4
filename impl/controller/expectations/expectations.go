// Package expectations is the ReplicaSet controller's memory of its own
// writes that its informer cache has not shown it yet (upstream's
// ControllerExpectations with UID tracking for deletions).
//
// Before creating n pods the controller records "expect n additions"; each
// pod-add event lowers the count. Before deleting pods it records their keys;
// each pod-delete event (or an update showing a deletionTimestamp) removes
// one. While a key's expectations are unfulfilled the controller does not
// act on its count of pods, so a stale cache never makes it create or delete
// twice (the "expectations" property, RS-1). Expectations expire
// after Timeout so a lost event cannot wedge a controller forever.
package expectations

import (
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Timeout is how long unfulfilled expectations are trusted (upstream: 5 min).
const Timeout = 5 * time.Minute

type record struct {
	adds      int64
	deletes   map[string]bool // pod keys whose deletion has not been observed
	timestamp time.Time
}

// Expectations tracks, per controller key, the creations and deletions it has
// issued but not yet observed. It is safe for concurrent use.
type Expectations struct {
	mu    sync.Mutex
	clock clock.PassiveClock
	byKey map[string]*record
}

// New returns empty expectations reading time from clk.
func New(clk clock.PassiveClock) *Expectations {
	return &Expectations{clock: clk, byKey: map[string]*record{}}
}

// Satisfied reports whether the controller may trust its cache for key: no
// expectations recorded, all observed, or recorded more than Timeout ago.
func (e *Expectations) Satisfied(key string) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	r, ok := e.byKey[key]
	if !ok {
		return true
	}
	if r.adds <= 0 && len(r.deletes) == 0 {
		return true
	}
	return e.clock.Since(r.timestamp) > Timeout
}

// ExpectCreations records that n pod creations are about to be issued for key,
// replacing any earlier record.
func (e *Expectations) ExpectCreations(key string, n int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.byKey[key] = &record{adds: int64(n), deletes: map[string]bool{}, timestamp: e.clock.Now()}
}

// ExpectDeletions records that the pods with the given keys are about to be
// deleted for key, replacing any earlier record.
func (e *Expectations) ExpectDeletions(key string, podKeys []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	r := &record{deletes: map[string]bool{}, timestamp: e.clock.Now()}
	for _, k := range podKeys {
		r.deletes[k] = true
	}
	e.byKey[key] = r
}

// CreationObserved lowers the expected creations of key by one: a pod-add
// event arrived, or a creation failed and will never arrive.
func (e *Expectations) CreationObserved(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.byKey[key]; ok && r.adds > 0 {
		r.adds--
	}
}

// DeletionObserved marks podKey's deletion for key as seen.
func (e *Expectations) DeletionObserved(key, podKey string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.byKey[key]; ok {
		delete(r.deletes, podKey)
	}
}

// Delete forgets key (its controller object is gone).
func (e *Expectations) Delete(key string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	delete(e.byKey, key)
}

// Pending returns the additions and deletions still expected for key.
func (e *Expectations) Pending(key string) (adds int64, deletes int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if r, ok := e.byKey[key]; ok {
		return r.adds, len(r.deletes)
	}
	return 0, 0
}
