package eventsink

// lru is a least-recently-used cache of at most max entries, with the
// semantics of k8s.io/utils/lru (max 0: no limit; a hit moves its entry to the front; adding
// a new key to a full cache drops the least recently used one), kept in
// one slice of slots linked by index and one map from key to slot: a few
// large allocations instead of an entry, a list element and a boxed value
// per key. Not safe for concurrent use (Correlator locks).
type lru[K comparable, V any] struct {
	max        int
	index      map[K]int32
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
	return &lru[K, V]{max: max, index: map[K]int32{}, head: none, tail: none}
}

// get returns the value of key, marking it most recently used.
func (c *lru[K, V]) get(key K) (*V, bool) {
	i, ok := c.index[key]
	if !ok {
		return nil, false
	}
	c.toFront(i)
	return &c.slots[i].val, true
}

// add sets key's value, marking it most recently used, and returns where
// the value is kept (valid until the next add). A new key in a full cache
// takes the least recently used entry's place.
func (c *lru[K, V]) add(key K, v V) *V {
	if i, ok := c.index[key]; ok {
		c.toFront(i)
		c.slots[i].val = v
		return &c.slots[i].val
	}
	var i int32
	if c.max <= 0 || len(c.slots) < c.max {
		c.slots = append(c.slots, slot[K, V]{})
		i = int32(len(c.slots) - 1)
	} else {
		i = c.tail
		c.unlink(i)
		delete(c.index, c.slots[i].key)
	}
	c.slots[i] = slot[K, V]{key: key, prev: none, next: none, val: v}
	c.index[key] = i
	c.pushFront(i)
	return &c.slots[i].val
}

func (c *lru[K, V]) len() int { return len(c.index) }

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
