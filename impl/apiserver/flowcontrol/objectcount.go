package flowcontrol

import (
	"errors"
	"sync"
	"time"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// Object counts (with the objects' average size: storage.Stats) as
// kube-apiserver's tracker keeps them: the API server polls each
// resource's storage about once a minute (ObjectCountPollPeriod) and
// stats not refreshed for ObjectCountStaleAfter are stale; those of
// resources not seen for ObjectCountPruneAfter are dropped.
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

// ObjectCounts are the last known stats of the stored objects per
// resource (group/resource as "pods", "deployments.apps"): their number
// and average size, with when each was last set. Safe for concurrent use.
type ObjectCounts struct {
	mu     sync.RWMutex
	counts map[string]timedStats
	now    func() time.Time
}

type timedStats struct {
	stats storage.Stats
	at    time.Time
}

// NewObjectCounts returns an empty tracker reading the time from now (nil:
// time.Now).
func NewObjectCounts(now func() time.Time) *ObjectCounts {
	if now == nil {
		now = time.Now
	}
	return &ObjectCounts{counts: map[string]timedStats{}, now: now}
}

// Set records the stats of resource now. The caller sets only what its
// storage reported: after a failed poll the previous stats stay until
// they are stale. A negative count (no count) changes nothing either.
func (t *ObjectCounts) Set(resource string, st storage.Stats) {
	if st.ObjectCount < 0 {
		return
	}
	now := t.now()
	t.mu.Lock()
	t.counts[resource] = timedStats{stats: st, at: now}
	t.mu.Unlock()
}

// Get returns the stats of resource; with ErrCountStale (and the old
// stats) when they were set longer than ObjectCountStaleAfter ago, with
// ErrCountUnknown when there are none.
func (t *ObjectCounts) Get(resource string) (storage.Stats, error) {
	t.mu.RLock()
	c, ok := t.counts[resource]
	t.mu.RUnlock()
	if !ok {
		return storage.Stats{}, ErrCountUnknown
	}
	if t.now().Sub(c.at) > ObjectCountStaleAfter {
		return c.stats, ErrCountStale
	}
	return c.stats, nil
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
