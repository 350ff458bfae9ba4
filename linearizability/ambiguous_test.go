package linearizability

import (
	"compress/gzip"
	"encoding/json"
	"os"
	"testing"
	"time"
)

func readGzipHistory(t *testing.T, path string) *History {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var h History
	if err := json.NewDecoder(zr).Decode(&h); err != nil {
		t.Fatalf("decoding %s: %v", path, err)
	}
	return &h
}

// TestCheckRecordedAmbiguousPileUp checks the history on which session
// 7's make test failed: TestCompaction/watchcache recorded under load,
// where porcupine found no verdict in 5 minutes. Kept here is its hard key
// (4,123 operations; lists and watch events projected on that key): at
// the end of the run the clients' context expired and client-go's rate
// limiter failed 31 writes of that key without sending them, each
// recorded as ambiguous, next to two real ambiguous writes that must be
// linearized in the opposite order of their calls. Every pending write
// doubled the states porcupine explores while backtracking over them.
// The check must now reach a verdict (a timeout is Unknown, which fails
// this test) and find the history consistent.
func TestCheckRecordedAmbiguousPileUp(t *testing.T) {
	h := readGzipHistory(t, "testdata/ambiguous-pileup.json.gz")
	res := Check(h, CheckOptions{PorcupineTimeout: time.Minute})
	t.Log(Summary(h, res))
	if !res.OK() {
		t.Fatalf("porcupine %s, violations %v", res.Linearizable, res.Violations)
	}
	// The 31 writes that were never sent (5 of them deletes) and the two
	// observed ones are all resolved.
	if res.Pending > 0 {
		t.Errorf("%d ambiguous writes left open, want none", res.Pending)
	}
}

// Histories for the resolution of ambiguous writes: x is created at 2 and
// updated at 5 (baseOps); a final quorum list by the final reader (client
// 9 = History.Clients) ends the history at revision 6.
func resolutionHistory(extra []Op, watches ...Watch) *History {
	ops := append(baseOps(), extra...)
	ops = append(ops, Op{Kind: List, Client: 9, Call: 300, Return: 310, Outcome: OK, ListRV: 6, Items: []Object{*obj("x", "x2", "a", 5), *obj("y", "y1", "a", 3)}})
	h := history(ops, watches...)
	h.Clients = 9
	return h
}

// at sets the time an event arrived.
func at(time int64, e WatchEvent) WatchEvent {
	e.Time = time
	return e
}

// wholeWatch reports every change from revision 1 to 6, each event
// shortly after the write that made it returned.
func wholeWatch() Watch {
	return Watch{ResourceVersion: "1", Events: []WatchEvent{at(15, ev(Added, "x", "x1", 2)), at(35, ev(Added, "y", "y1", 3)), at(55, ev(Modified, "x", "x2", 5)), at(250, bookmark(6, false))}}
}

func ambiguousUpdate(value string) Op {
	return Op{Kind: Update, Client: 1, Call: 60, Return: 70, Key: "x", Value: value, Group: "a", Outcome: Ambiguous}
}

func pendingOf(t *testing.T, h *History) map[string]bool {
	t.Helper()
	tl, vs := buildTimeline(h)
	if len(vs) > 0 {
		t.Fatalf("inconsistent test history: %v", vs)
	}
	pending := map[string]bool{}
	for _, o := range porcupineHistory(h, tl) {
		if in := o.Input.(*Op); in.Outcome == Ambiguous && in.isWrite() {
			pending[in.Value] = true
		}
	}
	return pending
}

func TestAmbiguousWriteResolution(t *testing.T) {
	t.Run("unobserved and covered by the watches: left out", func(t *testing.T) {
		h := resolutionHistory([]Op{ambiguousUpdate("x9")}, wholeWatch())
		if p := pendingOf(t, h); p["x9"] {
			t.Fatal("x9 is still pending although every change up to the end was watched")
		}
		if res := Check(h, CheckOptions{}); !res.OK() {
			t.Fatalf("rejected: %v", res.Violations)
		}
	})
	t.Run("a gap in the watches: pending", func(t *testing.T) {
		// x9 was called after x2 (revision 5) returned; the watch reports
		// up to 5, nobody watched revision 6.
		w := wholeWatch()
		w.Events = w.Events[:3]
		h := resolutionHistory([]Op{ambiguousUpdate("x9")}, w)
		if p := pendingOf(t, h); !p["x9"] {
			t.Fatal("x9 was resolved although revision 6 was not watched")
		}
	})
	t.Run("covered only by a filtered watch: pending", func(t *testing.T) {
		w := wholeWatch()
		w.Group = "a"
		h := resolutionHistory([]Op{ambiguousUpdate("x9")}, w)
		if p := pendingOf(t, h); !p["x9"] {
			t.Fatal("x9 was resolved by a watch of group a only")
		}
	})
	t.Run("no final list or get: pending", func(t *testing.T) {
		h := history(append(baseOps(), ambiguousUpdate("x9")), wholeWatch())
		if p := pendingOf(t, h); !p["x9"] {
			t.Fatal("x9 was resolved without knowing where the history ends")
		}
	})
	t.Run("observed: returns at its first observation", func(t *testing.T) {
		h := resolutionHistory([]Op{
			{Kind: Update, Client: 1, Call: 60, Return: 70, Key: "x", Value: "x9", Group: "a", Outcome: Ambiguous},
			get(80, 90, "x", "x9", 6),
		}, Watch{ResourceVersion: "1", Events: []WatchEvent{at(15, ev(Added, "x", "x1", 2)), at(35, ev(Added, "y", "y1", 3)), at(55, ev(Modified, "x", "x2", 5)), at(200, ev(Modified, "x", "x9", 6))}})
		h.Ops[len(h.Ops)-1].Items[0] = *obj("x", "x9", "a", 6)
		tl, _ := buildTimeline(h)
		for _, o := range porcupineHistory(h, tl) {
			if in := o.Input.(*Op); in.Value == "x9" && in.Kind == Update {
				if in.Outcome != OK || o.Return != 90 {
					t.Fatalf("x9 enters the search as %s returning at %d, want ok at 90 (the get that saw it)", in.Outcome, o.Return)
				}
			}
		}
		if res := Check(h, CheckOptions{}); !res.OK() {
			t.Fatalf("rejected: %v", res.Violations)
		}
	})
	pendingDeletes := func(t *testing.T, h *History) int {
		t.Helper()
		tl, _ := buildTimeline(h)
		n := 0
		for _, o := range porcupineHistory(h, tl) {
			if in := o.Input.(*Op); in.Outcome == Ambiguous && in.Kind == Delete {
				n++
			}
		}
		return n
	}
	t.Run("delete with no deletion reported after it: left out", func(t *testing.T) {
		h := resolutionHistory([]Op{{Kind: Delete, Client: 1, Call: 60, Return: 70, Key: "x", Outcome: Ambiguous}}, wholeWatch())
		if n := pendingDeletes(t, h); n != 0 {
			t.Fatalf("%d deletes pending, want 0", n)
		}
		if res := Check(h, CheckOptions{}); !res.OK() {
			t.Fatalf("rejected: %v", res.Violations)
		}
	})
	deletedY := func() *History {
		w := wholeWatch()
		w.Events = append(w.Events[:3], at(80, ev(Deleted, "y", "y1", 6)))
		h := resolutionHistory(nil, w)
		h.Ops[len(h.Ops)-1].Items = []Object{*obj("x", "x2", "a", 5)}
		return h
	}
	t.Run("delete that may have made a reported deletion: pending", func(t *testing.T) {
		h := deletedY()
		h.Ops = append(h.Ops, Op{ID: len(h.Ops), Kind: Delete, Client: 1, Call: 60, Return: 70, Key: "y", Outcome: Ambiguous})
		if n := pendingDeletes(t, h); n != 1 {
			t.Fatalf("%d deletes pending, want 1", n)
		}
		if res := Check(h, CheckOptions{}); !res.OK() {
			t.Fatalf("rejected: %v", res.Violations)
		}
	})
	t.Run("delete whose precondition matches no deleted version: left out", func(t *testing.T) {
		h := deletedY()
		h.Ops = append(h.Ops,
			Op{ID: len(h.Ops), Kind: Delete, Client: 1, Call: 60, Return: 70, Key: "y", Precondition: 2, Outcome: Ambiguous},
			Op{ID: len(h.Ops) + 1, Kind: Delete, Client: 2, Call: 60, Return: 70, Key: "y", Outcome: OK})
		if n := pendingDeletes(t, h); n != 0 {
			t.Fatalf("%d deletes pending, want 0 (y1 is at revision 3, the precondition says 2)", n)
		}
		if res := Check(h, CheckOptions{}); !res.OK() {
			t.Fatalf("rejected: %v", res.Violations)
		}
	})
	t.Run("left out although it happened: not linearizable", func(t *testing.T) {
		// y is deleted (6); an ambiguous create of y happens (7), a create
		// of y gets AlreadyExists, an ambiguous delete removes y (8), and
		// the watch dropped both. Only the unreported create explains the
		// AlreadyExists, so a server whose watch lost it fails the check
		// (with both writes pending it would pass).
		h := resolutionHistory([]Op{
			{Kind: Delete, Client: 1, Call: 60, Return: 70, Key: "y", Outcome: OK},
			{Kind: Create, Client: 2, Call: 80, Return: 90, Key: "y", Value: "y9", Group: "a", Outcome: Ambiguous},
			{Kind: Create, Client: 3, Call: 100, Return: 110, Key: "y", Value: "y10", Group: "a", Outcome: AlreadyExists},
			{Kind: Delete, Client: 3, Call: 120, Return: 130, Key: "y", Outcome: Ambiguous},
		}, Watch{ResourceVersion: "1", Events: []WatchEvent{at(15, ev(Added, "x", "x1", 2)), at(35, ev(Added, "y", "y1", 3)), at(55, ev(Modified, "x", "x2", 5)), at(75, ev(Deleted, "y", "y1", 6)), at(250, bookmark(8, false))}})
		h.Ops[len(h.Ops)-1] = Op{Kind: List, Client: 9, Call: 300, Return: 310, Outcome: OK, ListRV: 8, Items: []Object{*obj("x", "x2", "a", 5)}}
		res := Check(h, CheckOptions{})
		if res.OK() {
			t.Fatal("accepted an AlreadyExists that only a write the watch never reported explains")
		}
	})
}
