package bench

import (
	"fmt"
	"math/rand/v2"
	"sort"

	"github.com/kubeproof/kubeproof/linearizability"
)

// HistoryConfig shapes a generated history for the porcupine part of the
// checkers workload.
type HistoryConfig struct {
	Ops     int    // operations in the history
	Clients int    // concurrent clients (default 16)
	Keys    int    // ConfigMaps operated on (default 5, as the recorder)
	Seed    uint64 // the same seed gives the same history
}

// GenerateHistory builds a linearizable history of creates, updates (with
// and without a resourceVersion precondition), quorum gets and deletes on
// a few keys from concurrent clients, as linearizability's recorder would
// record it against a correct API server: every operation takes effect at
// one instant between its call and its return, writes take consecutive
// global revisions (etcd's), and each client issues its next operation
// after the previous one returned. It is deterministic in the seed, so
// check time can be compared across commits.
func GenerateHistory(cfg HistoryConfig) *linearizability.History {
	if cfg.Clients <= 0 {
		cfg.Clients = 16
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 5
	}
	rnd := rand.New(rand.NewPCG(cfg.Seed, 0x6b75626570726f6f))
	keys := make([]string, cfg.Keys)
	for i := range keys {
		keys[i] = fmt.Sprintf("key-%d", i)
	}

	// Timing first: each client's operations follow one another, and each
	// takes effect at a point inside its [call, return] interval. Outcomes
	// do not influence timing, so they are computed afterwards by applying
	// the operations in the order of those points.
	type planned struct {
		op    linearizability.Op
		point int64
	}
	plan := make([]planned, 0, cfg.Ops)
	clock := make([]int64, cfg.Clients)
	for i := range clock {
		clock[i] = rnd.Int64N(50_000)
	}
	for id := range cfg.Ops {
		c := id % cfg.Clients
		call := clock[c] + 1_000 + rnd.Int64N(20_000)
		point := call + 1 + rnd.Int64N(400_000)
		ret := point + 1 + rnd.Int64N(400_000)
		clock[c] = ret
		plan = append(plan, planned{op: linearizability.Op{ID: id, Client: c, Call: call, Return: ret}, point: point})
	}
	order := make([]int, len(plan))
	for i := range order {
		order[i] = i
	}
	sort.Slice(order, func(a, b int) bool { return plan[order[a]].point < plan[order[b]].point })

	type version struct {
		exists bool
		obj    linearizability.Object
	}
	store := map[string]version{}
	var revision int64 = 1 // the namespace's creation took revision 1
	// lastSeen is each client's last observed resourceVersion per key, the
	// precondition of its conditional updates (as the recorder's clients).
	lastSeen := make([]map[string]int64, cfg.Clients)
	for i := range lastSeen {
		lastSeen[i] = map[string]int64{}
	}
	written := 0
	for _, i := range order {
		o := &plan[i].op
		o.Key = keys[rnd.IntN(len(keys))]
		cur := store[o.Key]
		write := func() {
			revision++
			written++
			obj := linearizability.Object{Key: o.Key, Value: fmt.Sprintf("c%d-v%d", o.Client, written), RV: revision}
			o.Value = obj.Value
			o.Object = &obj
			o.Outcome = linearizability.OK
			store[o.Key] = version{exists: true, obj: obj}
			lastSeen[o.Client][o.Key] = revision
		}
		switch p := rnd.IntN(100); {
		case p < 20:
			o.Kind = linearizability.Create
			if cur.exists {
				o.Value = fmt.Sprintf("c%d-lost%d", o.Client, o.ID)
				o.Outcome = linearizability.AlreadyExists
				break
			}
			write()
		case p < 55:
			o.Kind = linearizability.Get
			if !cur.exists {
				o.Outcome = linearizability.NotFound
				break
			}
			obj := cur.obj
			o.Object = &obj
			o.Outcome = linearizability.OK
			lastSeen[o.Client][o.Key] = obj.RV
		case p < 90:
			o.Kind = linearizability.Update
			if p < 80 {
				o.Precondition = lastSeen[o.Client][o.Key]
			}
			switch {
			case !cur.exists:
				o.Value = fmt.Sprintf("c%d-lost%d", o.Client, o.ID)
				o.Outcome = linearizability.NotFound
			case o.Precondition != 0 && o.Precondition != cur.obj.RV:
				o.Value = fmt.Sprintf("c%d-lost%d", o.Client, o.ID)
				o.Outcome = linearizability.Conflict
			default:
				write()
			}
		default:
			o.Kind = linearizability.Delete
			if !cur.exists {
				o.Outcome = linearizability.NotFound
				break
			}
			revision++
			o.Outcome = linearizability.OK
			store[o.Key] = version{}
		}
	}
	h := &linearizability.History{Scenario: fmt.Sprintf("generated-%dops", cfg.Ops), Clients: cfg.Clients, Keys: keys, Ops: make([]linearizability.Op, len(plan))}
	for i := range plan {
		h.Ops[i] = plan[i].op
		h.Duration = max(h.Duration, plan[i].op.Return)
	}
	return h
}
