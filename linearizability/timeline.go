package linearizability

import (
	"fmt"
	"sort"
)

// change is one revision of one key: a version written, or a deletion.
type change struct {
	RV      int64
	Deleted bool
	Object  Object
}

// timeline is what the whole history (operations and every watch stream)
// tells about each key: its versions, identified by their unique values,
// and the deletions whose revision some watch reported.
type timeline struct {
	// byValue maps a written value to the version that carries it.
	byValue map[string]Object
	// byRV maps a revision to the version written at it.
	byRV map[int64]Object
	// changes per key, sorted by revision.
	changes map[string][]change
	// writers maps a value to the operation that wrote it.
	writers map[string]*Op
	// deletes per key: every delete that succeeded or may have.
	deletes map[string][]*Op
	// seenAt maps a value to the earliest time (ns since the history
	// started) at which an observation of it returned: an operation's
	// return or a watch event's arrival. The write that produced the value
	// took effect before then.
	seenAt map[string]int64
}

// buildTimeline merges every observation of h into one timeline and
// reports observations that contradict each other: one value seen with two
// revisions, two versions at one revision, a value nobody wrote.
func buildTimeline(h *History) (*timeline, []Violation) {
	t := &timeline{
		byValue: map[string]Object{},
		byRV:    map[int64]Object{},
		changes: map[string][]change{},
		writers: map[string]*Op{},
		deletes: map[string][]*Op{},
		seenAt:  map[string]int64{},
	}
	var vs []Violation
	for i := range h.Ops {
		o := &h.Ops[i]
		switch o.Kind {
		case Create, Update, Patch:
			t.writers[o.Value] = o
		case Delete:
			if o.Outcome == OK || o.Outcome == Ambiguous {
				t.deletes[o.Key] = append(t.deletes[o.Key], o)
			}
		}
	}
	observe := func(obj Object, where string, at int64) {
		w, ok := t.writers[obj.Value]
		if !ok || w.Key != obj.Key || w.Group != obj.Group {
			vs = append(vs, Violation{Check: "phantom", Message: fmt.Sprintf("%s: %s/%s[%s]@%d was never written by any client", where, obj.Key, obj.Value, obj.Group, obj.RV)})
			return
		}
		if seen, ok := t.seenAt[obj.Value]; !ok || at < seen {
			t.seenAt[obj.Value] = at
		}
		if prev, ok := t.byValue[obj.Value]; ok {
			if prev != obj {
				vs = append(vs, Violation{Check: "version", Message: fmt.Sprintf("%s: value %s seen at rv %d and at rv %d", where, obj.Value, prev.RV, obj.RV)})
			}
			return
		}
		if prev, ok := t.byRV[obj.RV]; ok {
			vs = append(vs, Violation{Check: "version", Message: fmt.Sprintf("%s: two writes at revision %d: %s/%s and %s/%s", where, obj.RV, prev.Key, prev.Value, obj.Key, obj.Value)})
			return
		}
		t.byValue[obj.Value] = obj
		t.byRV[obj.RV] = obj
	}
	for i := range h.Ops {
		o := &h.Ops[i]
		if o.Outcome != OK {
			continue
		}
		where := fmt.Sprintf("op %d", o.ID)
		if o.Object != nil {
			observe(*o.Object, where, o.Return)
		}
		for _, it := range o.Items {
			observe(it, where, o.Return)
		}
	}
	deletions := map[string]map[int64]bool{}
	for wi := range h.Watches {
		w := &h.Watches[wi]
		for _, ev := range w.Events {
			if ev.Type == Added || ev.Type == Modified {
				observe(ev.Object, fmt.Sprintf("watch %d", w.ID), ev.Time)
			}
		}
	}
	// DELETED events carry the last state of the object at the revision
	// that deleted it or moved it out of the watch's selector (an update,
	// whose revision wrote a version of the same key).
	for wi := range h.Watches {
		w := &h.Watches[wi]
		for _, ev := range w.Events {
			if ev.Type != Deleted {
				continue
			}
			if prev, ok := t.byRV[ev.Object.RV]; ok && prev.Key == ev.Object.Key {
				continue
			} else if ok {
				vs = append(vs, Violation{Check: "version", Watch: w.ID, Message: fmt.Sprintf("watch %d: deletion of %s at revision %d, which wrote %s/%s", w.ID, ev.Object.Key, ev.Object.RV, prev.Key, prev.Value)})
				continue
			}
			if deletions[ev.Object.Key] == nil {
				deletions[ev.Object.Key] = map[int64]bool{}
			}
			deletions[ev.Object.Key][ev.Object.RV] = true
		}
	}
	for _, obj := range t.byValue {
		t.changes[obj.Key] = append(t.changes[obj.Key], change{RV: obj.RV, Object: obj})
	}
	for key, rvs := range deletions {
		for rv := range rvs {
			t.changes[key] = append(t.changes[key], change{RV: rv, Deleted: true, Object: Object{Key: key, RV: rv}})
		}
	}
	for key := range t.changes {
		cs := t.changes[key]
		sort.Slice(cs, func(i, j int) bool { return cs[i].RV < cs[j].RV })
	}
	return t, vs
}

// at returns the last known change of key at or below rv (nil: none).
func (t *timeline) at(key string, rv int64) *change {
	cs := t.changes[key]
	i := sort.Search(len(cs), func(i int) bool { return cs[i].RV > rv })
	if i == 0 {
		return nil
	}
	return &cs[i-1]
}

// after returns the first known change of key above rv (nil: none).
func (t *timeline) after(key string, rv int64) *change {
	cs := t.changes[key]
	i := sort.Search(len(cs), func(i int) bool { return cs[i].RV > rv })
	if i == len(cs) {
		return nil
	}
	return &cs[i]
}

// mayBeAbsentAt says whether key may not exist at revision rv, judged
// soundly: it may unless a known version is current at rv and no delete
// that could have removed it (one that returned after that version's
// write was called and was called before the observer returned) exists.
func (t *timeline) mayBeAbsentAt(key string, rv int64, observerReturn int64) bool {
	c := t.at(key, rv)
	if c == nil || c.Deleted {
		return true
	}
	w := t.writers[c.Object.Value]
	for _, d := range t.deletes[key] {
		if (d.Outcome == Ambiguous || d.Return > w.Call) && d.Call < observerReturn {
			return true
		}
	}
	return false
}
