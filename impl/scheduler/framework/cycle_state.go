package framework

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
	data map[StateKey]StateData
	// SkipFilterPlugins and SkipScorePlugins are plugins whose PreFilter or
	// PreScore returned Skip.
	SkipFilterPlugins map[string]bool
	SkipScorePlugins  map[string]bool

	// filters and scores are the plugins this cycle runs after the skips,
	// resolved once per cycle instead of per node.
	filters []FilterPlugin
	scores  []weightedScorePlugin
}

// NewCycleState returns an empty CycleState.
func NewCycleState() *CycleState {
	return &CycleState{data: map[StateKey]StateData{}}
}

// Read returns the data under key, or ErrNotFound.
func (c *CycleState) Read(key StateKey) (StateData, error) {
	if v, ok := c.data[key]; ok {
		return v, nil
	}
	return nil, ErrNotFound
}

// Write stores data under key.
func (c *CycleState) Write(key StateKey, val StateData) { c.data[key] = val }

// Delete removes key.
func (c *CycleState) Delete(key StateKey) { delete(c.data, key) }

// Clone copies the state, cloning every entry.
func (c *CycleState) Clone() *CycleState {
	if c == nil {
		return nil
	}
	n := &CycleState{data: make(map[StateKey]StateData, len(c.data))}
	for k, v := range c.data {
		n.data[k] = v.Clone()
	}
	n.SkipFilterPlugins = c.SkipFilterPlugins
	n.SkipScorePlugins = c.SkipScorePlugins
	n.filters = c.filters
	n.scores = c.scores
	return n
}
