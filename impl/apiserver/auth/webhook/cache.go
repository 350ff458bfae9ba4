package webhook

import (
	"sync"
	"time"
)

// maxCacheEntries bounds a cache; a full cache drops its expired
// entries, and is emptied when none has expired.
const maxCacheEntries = 8192

// expiringCache maps keys to values that expire. It is safe for
// concurrent use.
type expiringCache[V any] struct {
	now func() time.Time

	mu      sync.Mutex
	entries map[string]expiringEntry[V]
}

type expiringEntry[V any] struct {
	value   V
	expires time.Time
}

func newExpiringCache[V any](now func() time.Time) *expiringCache[V] {
	if now == nil {
		now = time.Now
	}
	return &expiringCache[V]{now: now, entries: map[string]expiringEntry[V]{}}
}

// get returns key's value unless it is missing or expired.
func (c *expiringCache[V]) get(key string) (V, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	e, ok := c.entries[key]
	if !ok || !c.now().Before(e.expires) {
		var zero V
		return zero, false
	}
	return e.value, true
}

// add keeps value under key for ttl (nothing when ttl is not positive).
func (c *expiringCache[V]) add(key string, value V, ttl time.Duration) {
	if ttl <= 0 {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	now := c.now()
	if len(c.entries) >= maxCacheEntries {
		for k, e := range c.entries {
			if !now.Before(e.expires) {
				delete(c.entries, k)
			}
		}
		if len(c.entries) >= maxCacheEntries {
			clear(c.entries)
		}
	}
	c.entries[key] = expiringEntry[V]{value: value, expires: now.Add(ttl)}
}
