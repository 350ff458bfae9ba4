package eventsink

import "hash/maphash"

// lru is a least-recently-used cache of at most max entries, with the
// semantics of k8s.io/utils/lru (max 0: no limit; a hit moves its entry to the front; adding
// a new key to a full cache drops the least recently used one), kept in
// one slice of slots linked by index and one open-addressing table of
// slot numbers: a few large allocations instead of an entry, a list
// element and a boxed value per key. Not safe for concurrent use
// (Correlator locks).
//
// The table holds 4 bytes per bucket, at most 3/4 of them taken, and the
// key only in its slot: a Go map from key to slot held each 16-byte key a
// second time, with its 4-byte value, a control byte and up to 1/8 of the
// slots free (~40 bytes per entry between growths against ~8 here), and
// the caches hold seven entries per pod.
type lru[K comparable, V any] struct {
	max        int
	seed       maphash.Seed
	table      []int32 // slot number per bucket, none if empty; linear probing
	slots      []slot[K, V]
	head, tail int32 // most and least recently used slot; none when empty
}

type slot[K comparable, V any] struct {
	key        K
	prev, next int32 // towards head and towards tail; none at the ends
	val        V
}

const none = -1

func newLRU[K comparable, V any](max int) *lru[K, V] {
	return &lru[K, V]{max: max, seed: maphash.MakeSeed(), head: none, tail: none}
}

// bucket is where key's probe starts (len(c.table) is a power of 2).
func (c *lru[K, V]) bucket(key K) int {
	return int(maphash.Comparable(c.seed, key) & uint64(len(c.table)-1))
}

// find returns the bucket holding key's slot number, or the empty bucket
// ending its probe (ok false). The table has an empty bucket.
func (c *lru[K, V]) find(key K) (b int, ok bool) {
	if len(c.table) == 0 {
		return 0, false
	}
	mask := len(c.table) - 1
	for b = c.bucket(key); ; b = (b + 1) & mask {
		i := c.table[b]
		if i == none {
			return b, false
		}
		if c.slots[i].key == key {
			return b, true
		}
	}
}

// get returns the value of key, marking it most recently used.
func (c *lru[K, V]) get(key K) (*V, bool) {
	b, ok := c.find(key)
	if !ok {
		return nil, false
	}
	i := c.table[b]
	c.toFront(i)
	return &c.slots[i].val, true
}

// add sets key's value, marking it most recently used, and returns where
// the value is kept (valid until the next add). A new key in a full cache
// takes the least recently used entry's place.
func (c *lru[K, V]) add(key K, v V) *V {
	if b, ok := c.find(key); ok {
		i := c.table[b]
		c.toFront(i)
		c.slots[i].val = v
		return &c.slots[i].val
	}
	var i int32
	if c.max <= 0 || len(c.slots) < c.max {
		c.grow()
		c.slots = append(c.slots, slot[K, V]{})
		i = int32(len(c.slots) - 1)
		c.reserve()
	} else {
		i = c.tail
		c.unlink(i)
		c.remove(c.slots[i].key)
	}
	c.slots[i] = slot[K, V]{key: key, prev: none, next: none, val: v}
	b, _ := c.find(key)
	c.table[b] = i
	c.pushFront(i)
	return &c.slots[i].val
}

// grow makes room for one more slot. A full slice grows by a quarter
// (at least 8 slots, at most up to max), not by append's doubling: the
// slots are the caches' memory, and a kubelet's caches stop growing
// wherever its pods do (30 pods per node in the startup benchmark: 90 of
// the logger's entries in 128 slots doubling, a third of it never used).
// The copying stays linear in the entries added (each grows the slice by
// a fifth of what it copies).
func (c *lru[K, V]) grow() {
	if len(c.slots) < cap(c.slots) {
		return
	}
	n := len(c.slots) + max(len(c.slots)/4, 8)
	if c.max > 0 {
		n = min(n, c.max)
	}
	slots := make([]slot[K, V], len(c.slots), n)
	copy(slots, c.slots)
	c.slots = slots
}

// reserve makes the table big enough for every slot, at most 3/4 full:
// twice as big, with every slot but the newest (not in it yet) placed
// again.
func (c *lru[K, V]) reserve() {
	if 4*len(c.slots) <= 3*len(c.table) {
		return
	}
	n := 8
	for 4*len(c.slots) > 3*n {
		n *= 2
	}
	c.table = make([]int32, n)
	for b := range c.table {
		c.table[b] = none
	}
	for i := range len(c.slots) - 1 {
		b, _ := c.find(c.slots[i].key)
		c.table[b] = int32(i)
	}
}

// remove takes key out of the table (its slot stays), moving back the
// buckets after it in its run that may no longer be reached past the gap
// (backward shift deletion), so that no probe stops early.
func (c *lru[K, V]) remove(key K) {
	gap, ok := c.find(key)
	if !ok {
		return
	}
	mask := len(c.table) - 1
	for b := (gap + 1) & mask; c.table[b] != none; b = (b + 1) & mask {
		home := c.bucket(c.slots[c.table[b]].key)
		// The entry at b may fill the gap if its probe passes the gap
		// on its way from home to b: the gap is cyclically in [home, b).
		if (b-home)&mask >= (b-gap)&mask {
			c.table[gap] = c.table[b]
			gap = b
		}
	}
	c.table[gap] = none
}

func (c *lru[K, V]) len() int { return len(c.slots) }

func (c *lru[K, V]) toFront(i int32) {
	if c.head == i {
		return
	}
	c.unlink(i)
	c.pushFront(i)
}

func (c *lru[K, V]) unlink(i int32) {
	s := &c.slots[i]
	if s.prev != none {
		c.slots[s.prev].next = s.next
	} else {
		c.head = s.next
	}
	if s.next != none {
		c.slots[s.next].prev = s.prev
	} else {
		c.tail = s.prev
	}
	s.prev, s.next = none, none
}

func (c *lru[K, V]) pushFront(i int32) {
	s := &c.slots[i]
	s.prev, s.next = none, c.head
	if c.head != none {
		c.slots[c.head].prev = i
	}
	c.head = i
	if c.tail == none {
		c.tail = i
	}
}
