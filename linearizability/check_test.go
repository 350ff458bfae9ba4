package linearizability

import (
	"testing"

	"github.com/anishathalye/porcupine"
)

// Small hand-made histories, each breaking (or keeping) one guarantee.

func obj(key, value, group string, rv int64) *Object {
	return &Object{Key: key, Value: value, Group: group, RV: rv}
}

func write(kind Kind, call, ret int64, key, value string, rv int64) Op {
	return Op{Kind: kind, Call: call, Return: ret, Key: key, Value: value, Group: "a", Outcome: OK, Object: obj(key, value, "a", rv)}
}

func get(call, ret int64, key, value string, rv int64) Op {
	return Op{Kind: Get, Call: call, Return: ret, Key: key, Outcome: OK, Object: obj(key, value, "a", rv)}
}

func ev(t EventType, key, value string, rv int64) WatchEvent {
	return WatchEvent{Type: t, Object: Object{Key: key, Value: value, Group: "a", RV: rv}}
}

func bookmark(rv int64, initialEnd bool) WatchEvent {
	return WatchEvent{Type: Bookmark, Object: Object{RV: rv}, InitialEventsEnd: initialEnd}
}

// base: x created at 2, y created at 3, x updated at 5.
func baseOps() []Op {
	return []Op{
		write(Create, 0, 10, "x", "x1", 2),
		write(Create, 20, 30, "y", "y1", 3),
		write(Update, 40, 50, "x", "x2", 5),
	}
}

func history(ops []Op, watches ...Watch) *History {
	for i := range ops {
		ops[i].ID = i
	}
	for i := range watches {
		watches[i].ID = i
		if watches[i].Outcome == "" {
			watches[i].Outcome = OK
		}
	}
	return &History{Scenario: "unit", Keys: []string{"x", "y"}, Ops: ops, Watches: watches}
}

func TestCheckHandMadeHistories(t *testing.T) {
	for _, tc := range []struct {
		name string
		h    *History
		want string // "" = consistent; else the check that must fire
	}{
		{"consistent", history(append(baseOps(), get(60, 70, "x", "x2", 5),
			Op{Kind: List, Call: 60, Return: 70, Outcome: OK, ListRV: 5, PageRVs: []int64{5, 5}, Pages: 2, Items: []Object{*obj("x", "x2", "a", 5), *obj("y", "y1", "a", 3)}}),
			Watch{ResourceVersion: "1", Events: []WatchEvent{ev(Added, "x", "x1", 2), ev(Added, "y", "y1", 3), bookmark(4, false), ev(Modified, "x", "x2", 5)}}), ""},
		{"stale quorum get of one key", history(append(baseOps(), get(60, 70, "x", "x1", 2))), "linearizable"},
		{"stale read across keys", history([]Op{
			write(Create, 0, 10, "x", "x1", 2),
			write(Update, 20, 100, "x", "x2", 5), // concurrent with the read
			write(Create, 20, 30, "y", "y1", 6),  // finished before the read
			get(40, 50, "x", "x1", 2),
		}), "stale-read"},
		{"revisions against real time", history([]Op{
			write(Create, 0, 10, "x", "x1", 8),
			write(Create, 20, 30, "y", "y1", 7),
		}), "revision-order"},
		{"conflict although the precondition held", history(append(baseOps(),
			Op{Kind: Update, Call: 60, Return: 70, Key: "x", Value: "x3", Group: "a", Precondition: 5, Outcome: Conflict})), "linearizable"},
		{"acknowledged create never written", history(append(baseOps(),
			Op{Kind: Delete, Call: 60, Return: 70, Key: "y", Outcome: OK},
			write(Create, 80, 90, "y", "y2", 9),
			Op{Kind: Get, Call: 100, Return: 110, Key: "y", Outcome: NotFound})), "linearizable"},
		{"ambiguous create observed later", history(append(baseOps(),
			Op{Kind: Delete, Call: 60, Return: 70, Key: "y", Outcome: OK},
			Op{Kind: Create, Call: 80, Return: 90, Key: "y", Value: "y2", Group: "a", Outcome: Ambiguous},
			get(200, 210, "y", "y2", 9))), ""},
		{"ambiguous create never observed", history(append(baseOps(),
			Op{Kind: Create, Call: 80, Return: 90, Key: "z", Value: "z1", Group: "a", Outcome: Ambiguous},
			Op{Kind: Get, Call: 100, Return: 110, Key: "z", Outcome: NotFound})), ""},
		{"list not a snapshot", history(append(baseOps(),
			Op{Kind: List, ResourceVersion: "0", Call: 60, Return: 70, Outcome: OK, ListRV: 5, Items: []Object{*obj("x", "x1", "a", 2), *obj("y", "y1", "a", 3)}})), "list-snapshot"},
		{"list misses an object", history(append(baseOps(),
			Op{Kind: List, ResourceVersion: "0", Call: 60, Return: 70, Outcome: OK, ListRV: 5, Items: []Object{*obj("x", "x2", "a", 5)}})), "list-snapshot"},
		{"pages at two revisions", history(append(baseOps(),
			Op{Kind: List, Call: 60, Return: 70, Outcome: OK, ListRV: 5, PageRVs: []int64{5, 6}, Pages: 2, Items: []Object{*obj("x", "x2", "a", 5), *obj("y", "y1", "a", 3)}})), "paginated-snapshot"},
		{"exact list at another revision", history(append(baseOps(),
			Op{Kind: List, ResourceVersion: "3", Match: "Exact", Call: 60, Return: 70, Outcome: OK, ListRV: 5, Items: []Object{*obj("x", "x2", "a", 5), *obj("y", "y1", "a", 3)}})), "exact"},
		{"get not older than", history(append(baseOps(),
			Op{Kind: Get, ResourceVersion: "5", Call: 60, Return: 70, Key: "x", Outcome: OK, Object: obj("x", "x1", "a", 2)})), "not-older-than"},
		{"value nobody wrote", history(append(baseOps(), get(60, 70, "x", "zz", 5))), "phantom"},
		{"watch out of order", history(baseOps(),
			Watch{ResourceVersion: "1", Events: []WatchEvent{ev(Added, "y", "y1", 3), ev(Added, "x", "x1", 2), ev(Modified, "x", "x2", 5)}}), "ordered"},
		{"watch event twice", history(baseOps(),
			Watch{ResourceVersion: "1", Events: []WatchEvent{ev(Added, "x", "x1", 2), ev(Added, "y", "y1", 3), ev(Added, "y", "y1", 3)}}), "unique"},
		{"event at a bookmark", history(baseOps(),
			Watch{ResourceVersion: "1", Events: []WatchEvent{ev(Added, "x", "x1", 2), bookmark(3, false), ev(Added, "y", "y1", 3)}}), "bookmarkable"},
		{"watch gap", history(baseOps(),
			Watch{ResourceVersion: "1", Events: []WatchEvent{ev(Added, "x", "x1", 2), ev(Modified, "x", "x2", 5)}}), "reliable"},
		{"resumed watch skips the first change", history(baseOps(),
			Watch{ResourceVersion: "2", Events: []WatchEvent{ev(Modified, "x", "x2", 5)}}), "resumable"},
		{"selector transition must be DELETED", history(append(baseOps(),
			Op{Kind: Patch, Call: 60, Return: 70, Key: "y", Value: "y2", Group: "b", Outcome: OK, Object: obj("y", "y2", "b", 7)}),
			Watch{ResourceVersion: "4", Group: "a", Events: []WatchEvent{ev(Modified, "x", "x2", 5), {Type: Modified, Object: Object{Key: "y", Value: "y2", Group: "b", RV: 7}}}}), "reliable"},
		{"selector transition as DELETED", history(append(baseOps(),
			Op{Kind: Patch, Call: 60, Return: 70, Key: "y", Value: "y2", Group: "b", Outcome: OK, Object: obj("y", "y2", "b", 7)}),
			Watch{ResourceVersion: "4", Group: "a", Events: []WatchEvent{ev(Modified, "x", "x2", 5), ev(Deleted, "y", "y1", 7)}}), ""},
		{"initial events miss an object", history(baseOps(),
			Watch{SendInitialEvents: true, Call: 60, Events: []WatchEvent{ev(Added, "x", "x2", 5), bookmark(5, true)}}), "initial-events"},
		{"initial events", history(baseOps(),
			Watch{SendInitialEvents: true, Call: 60, Events: []WatchEvent{ev(Added, "x", "x2", 5), ev(Added, "y", "y1", 3), bookmark(5, true)}}), ""},
		{"410 without compaction", func() *History {
			h := history(baseOps(), Watch{ResourceVersion: "1", Outcome: Expired})
			h.ExpiredExact = true
			return h
		}(), "expired"},
		{"no 410 after compaction", func() *History {
			h := history(baseOps(), Watch{ResourceVersion: "1", Call: 100, Events: []WatchEvent{ev(Added, "y", "y1", 3), ev(Modified, "x", "x2", 5)}})
			h.ExpiredExact, h.Compactions = true, []Compaction{{Call: 60, Return: 70, Revision: 4}}
			return h
		}(), "expired"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			res := Check(tc.h, CheckOptions{})
			if tc.want == "" {
				if !res.OK() {
					t.Fatalf("consistent history rejected (porcupine %s): %v", res.Linearizable, res.Violations)
				}
				return
			}
			if res.OK() {
				t.Fatalf("%s not detected", tc.want)
			}
			for _, v := range res.Violations {
				if v.Check == tc.want {
					return
				}
			}
			if tc.want == "linearizable" && res.Linearizable == porcupine.Illegal {
				return
			}
			t.Fatalf("want a %s violation, got %v", tc.want, res.Violations)
		})
	}
}
