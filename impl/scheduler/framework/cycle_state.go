package framework

import "slices"

// StateKey names a plugin's entry in a CycleState.
type StateKey string

// StateData is a plugin's per-cycle data. Clone must return a copy that can
// be changed without affecting the original (preemption simulates removals
// on clones).
type StateData interface {
	Clone() StateData
}

// CycleState holds the data plugins compute once per scheduling attempt.
// Writes happen in PreFilter and PreScore, which run on one goroutine;
// Filter and Score, which run in parallel across nodes, only read.
type CycleState struct {
	// data has one entry per plugin that keeps state (a handful), in the
	// order written. Filter and Score read it for every node of every pod
	// (thousands of reads per pod): comparing the few keys, which are the
	// plugins' constants, costs less than hashing the key into a map.
	data []stateEntry
	// SkipFilterPlugins and SkipScorePlugins are plugins whose PreFilter or
	// PreScore returned Skip.
	SkipFilterPlugins map[string]bool
	SkipScorePlugins  map[string]bool

	// filters and scores are the plugins this cycle runs after the skips,
	// resolved once per cycle instead of per node.
	filters []FilterPlugin
	scores  []weightedScorePlugin
}

type stateEntry struct {
	key StateKey
	val StateData
}

// NewCycleState returns an empty CycleState.
func NewCycleState() *CycleState {
	return &CycleState{data: make([]stateEntry, 0, 8)}
}

// Read returns the data under key, or ErrNotFound.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	for i := range c.data {
		if c.data[i].key == key {
			return c.data[i].val, nil
		}
	}
	return nil, ErrNotFound
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, val StateData) {
	for i := range c.data {
		if c.data[i].key == key {
			c.data[i].val = val
			return
		}
	}
	c.data = append(c.data, stateEntry{key, val})
}

// Delete removes key.
func (c *CycleState) Delete(key StateKey) {
	c.data = slices.DeleteFunc(c.data, func(e stateEntry) bool { return e.key == key })
}

// Clone copies the state, cloning every entry.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	n := &CycleState{data: make([]stateEntry, len(c.data))}
	for i, e := range c.data {
		n.data[i] = stateEntry{e.key, e.val.Clone()}
	}
	n.SkipFilterPlugins = c.SkipFilterPlugins
	n.SkipScorePlugins = c.SkipScorePlugins
	n.filters = c.filters
	n.scores = c.scores
	return n
}
