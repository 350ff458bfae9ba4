package flowcontrol

import (
	"errors"
	"sync"
	"time"
)

// Object counts as kube-apiserver's tracker keeps them: the API server
// polls each resource's storage about once a minute
// (ObjectCountPollPeriod) and a count not refreshed for
// ObjectCountStaleAfter is stale; counts of resources not seen for
// ObjectCountPruneAfter are dropped.
const (
	ObjectCountPollPeriod = time.Minute
	ObjectCountStaleAfter = 3 * time.Minute
	ObjectCountPruneAfter = time.Hour
)

// Errors of ObjectCounts.Get.
var (
	// ErrCountStale: the resource's count was not refreshed for
	// ObjectCountStaleAfter (its storage failed to answer); a list of it
	// is estimated at the most seats.
	ErrCountStale = errors.New("flowcontrol: object count is stale")
	// ErrCountUnknown: no count for the resource (not stored by this
	// server, or pruned); a list of it is estimated at the fewest seats.
	ErrCountUnknown = errors.New("flowcontrol: object count is not known")
)

// ObjectCounts are the last known number of stored objects per resource
// (group/resource as "pods", "deployments.apps"), with when each was
// last set. Safe for concurrent use.
type ObjectCounts struct {
	mu     sync.RWMutex
	counts map[string]timedCount
	now    func() time.Time
}

type timedCount struct {
	n  int64
	at time.Time
}

// NewObjectCounts returns an empty tracker reading the time from now (nil:
// time.Now).
func NewObjectCounts(now func() time.Time) *ObjectCounts {
	if now == nil {
		now = time.Now
	}
	return &ObjectCounts{counts: map[string]timedCount{}, now: now}
}

// Set records n objects of resource now. A negative n (the storage could
// not count) changes nothing: the previous count stays until it is stale.
func (t *ObjectCounts) Set(resource string, n int64) {
	if n < 0 {
		return
	}
	now := t.now()
	t.mu.Lock()
	t.counts[resource] = timedCount{n: n, at: now}
	t.mu.Unlock()
}

// Get returns the count of resource; with ErrCountStale (and the old
// count) when it was set longer than ObjectCountStaleAfter ago, with
// ErrCountUnknown when there is none.
func (t *ObjectCounts) Get(resource string) (int64, error) {
	t.mu.RLock()
	c, ok := t.counts[resource]
	t.mu.RUnlock()
	if !ok {
		return 0, ErrCountUnknown
	}
	if t.now().Sub(c.at) > ObjectCountStaleAfter {
		return c.n, ErrCountStale
	}
	return c.n, nil
}

// Prune drops the counts not set for ObjectCountPruneAfter (resources
// no longer served).
func (t *ObjectCounts) Prune() {
	now := t.now()
	t.mu.Lock()
	defer t.mu.Unlock()
	for r, c := range t.counts {
		if now.Sub(c.at) >= ObjectCountPruneAfter {
			delete(t.counts, r)
		}
	}
}
