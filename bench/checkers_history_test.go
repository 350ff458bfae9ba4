package bench

import (
	"reflect"
	"testing"

	"github.com/kubeproof/kubeproof/linearizability"
)

// TestGeneratedHistoryIsLinearizable checks that the generated histories
// pass every check `kubeproof check linearizability` runs, and that a
// tampered one does not (so the check time measured is that of real work
// on a history the checker could reject).
func TestGeneratedHistoryIsLinearizable(t *testing.T) {
	h := GenerateHistory(HistoryConfig{Ops: 2000, Clients: 16, Seed: 7})
	if len(h.Ops) != 2000 || h.Clients != 16 {
		t.Fatalf("history has %d ops from %d clients, want 2000 from 16", len(h.Ops), h.Clients)
	}
	kinds := map[linearizability.Kind]int{}
	for _, o := range h.Ops {
		if o.Outcome == linearizability.OK {
			kinds[o.Kind]++
		}
	}
	for _, k := range []linearizability.Kind{linearizability.Create, linearizability.Get, linearizability.Update, linearizability.Delete} {
		if kinds[k] == 0 {
			t.Errorf("no successful %s in the history: %v", k, kinds)
		}
	}
	if res := linearizability.Check(h, linearizability.CheckOptions{}); !res.OK() {
		t.Fatalf("generated history rejected: %s: %v", linearizability.Summary(h, res), res.Violations)
	}
	if again := GenerateHistory(HistoryConfig{Ops: 2000, Clients: 16, Seed: 7}); !reflect.DeepEqual(h, again) {
		t.Error("the same seed gave a different history")
	}

	// A get that returns a value older than one the same client saw
	// before is a stale read: the checker must reject it.
	bad := GenerateHistory(HistoryConfig{Ops: 2000, Clients: 16, Seed: 7})
	tampered := false
	for i := range bad.Ops {
		o := &bad.Ops[i]
		if o.Kind != linearizability.Get || o.Outcome != linearizability.OK {
			continue
		}
		for j := range bad.Ops[:i] {
			p := bad.Ops[j]
			if p.Key == o.Key && p.Outcome == linearizability.OK && p.Object != nil && p.Return < o.Call && p.Object.RV < o.Object.RV && p.Kind != linearizability.Get {
				obj := *p.Object
				o.Object = &obj
				tampered = true
				break
			}
		}
		if tampered {
			break
		}
	}
	if !tampered {
		t.Fatal("found no get to make stale")
	}
	if res := linearizability.Check(bad, linearizability.CheckOptions{}); res.OK() {
		t.Fatal("a history with a stale read passed the check")
	}
}
