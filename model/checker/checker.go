// Package checker is an explicit-state model checker for the specification
// in package model: breadth-first search, level by level, by parallel
// workers; visited states kept as 64-bit fingerprints of their canonical
// encodings (fpset.go: sharded tables of 4-byte slots over blocks of
// fingerprints and liveness goal masks, 14–16 bytes in memory a state, the
// parent links in an unlinked temporary file read back only for a
// counterexample); the frontier kept encoded; optional symmetry reduction over
// interchangeable nodes, pod name slots and IPs (model.Model.Canonical);
// shortest counterexamples printed action by action with the state
// difference at each step (report.go); liveness under weak fairness
// (liveness.go); and the trace-validation query CanReach (reach.go).
package checker

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/kubeproof/kubeproof/model"
)

// Options tune a run.
type Options struct {
	Symmetry         bool          // reduce by node and pod-slot symmetry
	Workers          int           // parallel workers; 0 = GOMAXPROCS
	Progress         io.Writer     // progress lines; nil = quiet
	ProgressInterval time.Duration // default 5s
	MaxStates        int64         // stop with an error beyond this many distinct states; 0 = no limit
}

// Step is one step of a trace: the action taken and the state it led to
// (the first step of a trace has no action: it is the initial state).
type Step struct {
	Action model.Action
	State  model.State
}

// Violation is a property that does not hold, with the shortest trace to it.
type Violation struct {
	Property string // property ID, or "PROGRESS" for a transition that breaks the progress measure
	Kind     string // invariant, step, liveness (a quiescent state or a fair cycle)
	Trace    []Step
	// CycleLength > 0: the last state of Trace lies on a fair cycle of that
	// many states (a strongly connected component) through which the goal
	// stays false infinitely often.
	CycleLength int
}

// Result of a run.
type Result struct {
	Config        string
	Mutant        string
	Symmetry      bool
	Distinct      int64 // distinct states (orbits, with symmetry)
	Transitions   int64 // transitions explored
	Depth         int   // length of the longest shortest path from an initial state
	Quiescent     int64 // reachable states with no fair action enabled
	Liveness      bool  // liveness properties were checked
	Edges         int64 // distinct transitions kept for the liveness check
	FairSCCs      int   // non-trivial strongly connected components examined
	Duration      time.Duration
	BytesPerState float64 // visited-set memory per distinct state (fpSet.bytesPerState: parents on disk not counted)
	Violation     *Violation
}

// OK reports whether every checked property holds.
func (r Result) OK() bool { return r.Violation == nil }

// ErrTooManyStates is returned when Options.MaxStates is exceeded.
var ErrTooManyStates = errors.New("state space larger than the configured limit")

// The frontier is kept encoded: records of the state's encoding followed by
// its id (4 bytes, little endian), about a third of a State each.
type frontier struct {
	buf    []byte
	stride int
}

func (f *frontier) push(enc []byte, id uint32) {
	f.buf = append(f.buf, enc...)
	f.buf = binary.LittleEndian.AppendUint32(f.buf, id)
}

func (f *frontier) len() int { return len(f.buf) / f.stride }

func (f *frontier) at(m *model.Model, j int) (model.State, uint32) {
	r := f.buf[j*f.stride : (j+1)*f.stride]
	return m.Decode(r[:f.stride-4]), binary.LittleEndian.Uint32(r[f.stride-4:])
}

type found struct {
	kind, id string
	from     uint32 // id of the state the violating step starts in
	action   model.Action
	to       model.State // raw successor (zero for liveness)
	hasStep  bool
	cycle    int // liveness by a fair cycle: its size
}

// Edges are packed src<<36 | dst<<8 | kind: at most 2^28 states.
const maxLivenessStates = 1 << 28

func packEdge(src, dst uint32, k model.Kind) uint64 {
	return uint64(src)<<36 | uint64(dst)<<8 | uint64(k)
}

func unpackEdge(e uint64) (src, dst uint32, k model.Kind) {
	return uint32(e >> 36), uint32(e>>8) & (1<<28 - 1), model.Kind(e)
}

// Check explores every reachable state of m and checks the properties its
// configuration lists.
func Check(ctx context.Context, m *model.Model, opt Options) (Result, error) {
	start := time.Now()
	cfg := m.Config()
	res := Result{Config: cfg.Name, Mutant: m.Mutant(), Symmetry: opt.Symmetry}
	var invariants, steps, goals []model.Property
	for _, id := range append(append([]string{}, cfg.Invariants...), cfg.Properties...) {
		p, _ := model.LookupProperty(id)
		switch {
		case p.Invariant != nil:
			invariants = append(invariants, p)
		case p.Step != nil:
			steps = append(steps, p)
		default:
			goals = append(goals, p)
		}
	}
	res.Liveness = len(goals) > 0
	workers := opt.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	set := newFPSet()
	defer set.close()
	encodeCanonical := func(s *model.State, buf []byte) (model.State, []byte) {
		if opt.Symmetry {
			return m.Canonical(s, buf)
		}
		return *s, m.Encode(s, buf[:0])
	}

	var (
		mu       sync.Mutex
		first    *found
		stop     atomic.Bool
		distinct atomic.Int64
		trans    atomic.Int64
		quiet    atomic.Int64
		depthNow atomic.Int64
		queueLen atomic.Int64
	)
	report := func(f found) {
		mu.Lock()
		defer mu.Unlock()
		if first == nil {
			first = &f
		}
		stop.Store(true)
	}

	goalMask := func(s *model.State) uint8 {
		var g uint8
		for i, p := range goals {
			if !p.Goal(m, s) {
				g |= 1 << i
			}
		}
		return g
	}
	stride := m.EncodedSize() + 4
	cur := frontier{stride: stride}
	buf := make([]byte, 0, 512)
	for _, s0 := range m.Init() {
		c, enc := encodeCanonical(&s0, buf)
		id, isNew := set.insert(fingerprint(enc), noState, goalMask(&c))
		if isNew {
			distinct.Add(1)
			cur.push(enc, id)
			for _, p := range invariants {
				if !p.Invariant(m, &c) {
					report(found{kind: "invariant", id: p.ID, from: id})
				}
			}
		}
	}
	var edges [][]uint64

	stopProgress := startProgress(opt, &distinct, &queueLen, &depthNow, start)
	defer stopProgress()

	depth := 0
	for cur.len() > 0 && !stop.Load() {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		depthNow.Store(int64(depth))
		queueLen.Store(int64(cur.len()))
		var next atomic.Int64
		nexts := make([]frontier, workers)
		levelEdges := make([][]uint64, workers)
		var wg sync.WaitGroup
		for w := 0; w < workers; w++ {
			wg.Add(1)
			go func(w int) {
				defer wg.Done()
				buf := make([]byte, 0, 512)
				local := frontier{stride: stride}
				var localEdges []uint64
				const chunk = 64
				for !stop.Load() && ctx.Err() == nil {
					i := int(next.Add(chunk)) - chunk
					if i >= cur.len() {
						break
					}
					for j := i; j < min(i+chunk, cur.len()) && !stop.Load(); j++ {
						state, sid := cur.at(m, j)
						s := &state
						fair := false
						var n int64
						m.Successors(s, func(a model.Action, t *model.State) {
							n++
							if a.Kind.Fair() {
								fair = true
							}
							for _, p := range steps {
								if !p.Step(m, s, t) {
									report(found{kind: "step", id: p.ID, from: sid, action: a, to: *t, hasStep: true})
								}
							}
							c, enc := encodeCanonical(t, buf)
							buf = enc
							var g uint8
							if res.Liveness {
								g = goalMask(&c)
							}
							id, isNew := set.insert(fingerprint(enc), sid, g)
							if res.Liveness {
								localEdges = append(localEdges, packEdge(sid, id, a.Kind))
							}
							if !isNew {
								return
							}
							distinct.Add(1)
							for _, p := range invariants {
								if !p.Invariant(m, &c) {
									report(found{kind: "invariant", id: p.ID, from: sid, action: a, to: *t, hasStep: true})
								}
							}
							local.push(enc, id) // the encoding of c, the canonical state
						})
						trans.Add(n)
						if res.Liveness && !fair {
							quiet.Add(1)
							for _, p := range goals {
								if !p.Goal(m, s) {
									report(found{kind: "liveness", id: p.ID, from: sid})
								}
							}
						}
					}
					queueLen.Add(-chunk)
				}
				nexts[w] = local
				levelEdges[w] = localEdges
			}(w)
		}
		wg.Wait()
		if err := ctx.Err(); err != nil {
			return res, err
		}
		if err := set.failure(); err != nil {
			return res, fmt.Errorf("checking %s: %w", cfg.Name, err)
		}
		for _, e := range levelEdges {
			if len(e) > 0 {
				edges = append(edges, e)
			}
		}
		total := 0
		for _, l := range nexts {
			total += len(l.buf)
		}
		cur = frontier{buf: make([]byte, 0, total), stride: stride}
		for _, l := range nexts {
			cur.buf = append(cur.buf, l.buf...)
		}
		if cur.len() > 0 {
			depth++
		}
		if opt.MaxStates > 0 && distinct.Load() > opt.MaxStates {
			return res, fmt.Errorf("checking %s: %w (%d)", cfg.Name, ErrTooManyStates, opt.MaxStates)
		}
		if res.Liveness && set.size() >= maxLivenessStates {
			return res, fmt.Errorf("checking %s: liveness needs fewer than %d states", cfg.Name, maxLivenessStates)
		}
	}
	stopProgress()
	res.Distinct = distinct.Load()
	res.Transitions = trans.Load()
	res.Quiescent = quiet.Load()
	res.Depth = depth
	res.BytesPerState = set.bytesPerState()
	if first == nil && res.Liveness {
		if err := ctx.Err(); err != nil {
			return res, err
		}
		var f *found
		f, res.FairSCCs = fairCycles(set, edges, goals, &res.Edges)
		first = f
	}
	if first != nil {
		v, err := reconstruct(m, set, opt, *first, steps)
		if err != nil {
			return res, err
		}
		res.Violation = v
	}
	res.Duration = time.Since(start)
	return res, nil
}

func startProgress(opt Options, distinct, queue, depth *atomic.Int64, start time.Time) func() {
	if opt.Progress == nil {
		return func() {}
	}
	interval := opt.ProgressInterval
	if interval <= 0 {
		interval = 5 * time.Second
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				el := time.Since(start)
				n := distinct.Load()
				fmt.Fprintf(opt.Progress, "  progress: %d distinct states, %.0f states/s, queue %d, depth %d, %s\n",
					n, float64(n)/el.Seconds(), max(0, queue.Load()), depth.Load(), el.Round(time.Second))
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// reconstruct turns a violation found during the search into a trace from
// an initial state: it follows parent fingerprints back, then replays
// forward, picking at each step a successor with the recorded fingerprint
// (with symmetry, a successor in the recorded orbit).
func reconstruct(m *model.Model, set *fpSet, opt Options, f found, steps []model.Property) (*Violation, error) {
	var chain []uint64
	for id := f.from; id != noState; {
		chain = append([]uint64{set.fp(id)}, chain...)
		p, err := set.parent(id)
		if err != nil {
			return nil, fmt.Errorf("trace reconstruction: %w", err)
		}
		id = p
	}
	fpOf := func(s *model.State) uint64 {
		var buf [512]byte
		if opt.Symmetry {
			_, enc := m.Canonical(s, buf[:0])
			return fingerprint(enc)
		}
		return fingerprint(m.Encode(s, buf[:0]))
	}
	var actual model.State
	ok := false
	for _, s0 := range m.Init() {
		if fpOf(&s0) == chain[0] {
			actual, ok = s0, true
		}
	}
	if !ok {
		return nil, errors.New("trace reconstruction: no initial state matches")
	}
	v := &Violation{Property: f.id, Kind: f.kind, Trace: []Step{{State: actual}}}
	for _, want := range chain[1:] {
		var nextS model.State
		var nextA model.Action
		hit := false
		m.Successors(&actual, func(a model.Action, t *model.State) {
			if !hit && fpOf(t) == want {
				nextS, nextA, hit = *t, a, true
			}
		})
		if !hit {
			return nil, errors.New("trace reconstruction: no successor matches the recorded path")
		}
		v.Trace = append(v.Trace, Step{nextA, nextS})
		actual = nextS
	}
	if f.cycle > 0 {
		v.CycleLength = f.cycle
	}
	if f.hasStep {
		want := fpOf(&f.to)
		var best *Step
		m.Successors(&actual, func(a model.Action, t *model.State) {
			if fpOf(t) != want || (best != nil && best.Action.Kind == f.action.Kind) {
				return
			}
			// Prefer the successor that breaks the same property by the same action.
			breaks := f.kind != "step"
			for _, p := range steps {
				if p.ID == f.id && !p.Step(m, &actual, t) {
					breaks = true
				}
			}
			if breaks && (best == nil || a.Kind == f.action.Kind) {
				best = &Step{a, *t}
			}
		})
		if best == nil {
			return nil, errors.New("trace reconstruction: the violating step does not replay")
		}
		v.Trace = append(v.Trace, *best)
	}
	return v, nil
}
