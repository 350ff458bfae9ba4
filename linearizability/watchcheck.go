package linearizability

import (
	"fmt"
	"sort"
	"strconv"
)

// expectedEvent is an event the timeline says a watch must (or, when what
// came before is not known, may) deliver at a revision.
type expectedEvent struct {
	types    []EventType
	object   Object
	optional bool
}

func watchViolation(check string, w *Watch, format string, args ...any) Violation {
	return Violation{Check: check, Op: -1, Watch: w.ID, Message: fmt.Sprintf("watch %d (from %q, group %q): ", w.ID, w.ResourceVersion, w.Group) + fmt.Sprintf(format, args...)}
}

func (w *Watch) matches(o Object) bool { return w.Group == "" || w.Group == o.Group }

// checkWatches validates every recorded watch stream.
func checkWatches(h *History, t *timeline) []Violation {
	var vs []Violation
	for i := range h.Watches {
		vs = append(vs, checkWatch(h, t, &h.Watches[i])...)
	}
	return vs
}

func checkWatch(h *History, t *timeline, w *Watch) []Violation {
	var vs []Violation
	start, numeric := int64(0), false
	if r, err := strconv.ParseInt(w.ResourceVersion, 10, 64); err == nil && r > 0 {
		start, numeric = r, true
	}
	switch w.Outcome {
	// A watch from R reads revisions from R+1 on: it is compacted when
	// R+1 is below the compaction revision.
	case Expired:
		if h.ExpiredExact && numeric && !compactedBefore(h, start+1, w.End) {
			vs = append(vs, watchViolation("expired", w, "410 Expired for revision %d, which was not compacted", start))
		}
		return vs
	case Failed:
		return vs
	}
	if h.ExpiredExact && numeric && compactedSurely(h, start+1, w.Call) {
		vs = append(vs, watchViolation("expired", w, "revision %d was compacted before the watch started, yet no 410 Expired", start))
	}
	events := w.Events
	if w.SendInitialEvents {
		end := -1
		for i, ev := range events {
			if ev.Type == Bookmark && ev.InitialEventsEnd {
				end = i
				break
			}
		}
		if end < 0 {
			// The stream ended before its initial events did; nothing
			// after them to check either.
			return vs
		}
		bookmark := events[end].Object.RV
		vs = append(vs, checkInitialEvents(h, t, w, events[:end], bookmark)...)
		start = bookmark
		events = events[end+1:]
	} else if !numeric {
		return append(vs, watchViolation("unsupported", w, "recorded watches start at a revision or send initial events"))
	}

	// Ordered, unique, atomic, bookmarkable.
	last, lastEvent, lastBookmark := start, int64(-1), int64(-1)
	got := map[int64]WatchEvent{}
	for _, ev := range events {
		rv := ev.Object.RV
		if ev.Type == Bookmark {
			if rv < last {
				vs = append(vs, watchViolation("ordered", w, "bookmark at %d after revision %d", rv, last))
			}
			if rv > lastBookmark {
				lastBookmark = rv
			}
			if rv > last {
				last = rv
			}
			continue
		}
		switch {
		case rv == lastEvent:
			vs = append(vs, watchViolation("unique", w, "two events at revision %d (a revision is one single-object write, so also not atomic)", rv))
		case rv <= lastBookmark:
			vs = append(vs, watchViolation("bookmarkable", w, "%s %s@%d at or below bookmark %d", ev.Type, ev.Object.Key, rv, lastBookmark))
		case rv <= start:
			vs = append(vs, watchViolation("resumable", w, "%s %s@%d not after the start revision %d", ev.Type, ev.Object.Key, rv, start))
		case rv < last:
			vs = append(vs, watchViolation("ordered", w, "%s %s@%d after revision %d", ev.Type, ev.Object.Key, rv, last))
		}
		if rv > last {
			last = rv
		}
		lastEvent = rv
		if _, dup := got[rv]; !dup {
			got[rv] = ev
		}
	}

	// Reliable and resumable: exactly the timeline's changes in
	// (start, last] that the selector lets through.
	expected := expectedEvents(h, t, w, start, last)
	var missing []int64
	for rv, e := range expected {
		ev, ok := got[rv]
		if !ok {
			if !e.optional {
				missing = append(missing, rv)
			}
			continue
		}
		if !typeIn(ev.Type, e.types) || ev.Object.Key != e.object.Key || (e.object.Value != "" && ev.Object.Value != e.object.Value) {
			vs = append(vs, watchViolation("reliable", w, "at revision %d got %s %s=%s, want %v %s=%s", rv, ev.Type, ev.Object.Key, ev.Object.Value, e.types, e.object.Key, e.object.Value))
		}
	}
	for rv, ev := range got {
		if _, ok := expected[rv]; !ok && rv > start && rv <= last {
			vs = append(vs, watchViolation("reliable", w, "unexpected %s %s=%s[%s]@%d", ev.Type, ev.Object.Key, ev.Object.Value, ev.Object.Group, rv))
		}
	}
	sort.Slice(missing, func(i, j int) bool { return missing[i] < missing[j] })
	firstEvent := int64(-1)
	for _, ev := range events {
		if ev.Type != Bookmark {
			firstEvent = ev.Object.RV
			break
		}
	}
	for _, rv := range missing {
		e := expected[rv]
		check := "reliable"
		if firstEvent < 0 || rv < firstEvent {
			check = "resumable"
		}
		vs = append(vs, watchViolation(check, w, "missing %v %s=%s at revision %d (stream covers (%d, %d])", e.types, e.object.Key, e.object.Value, rv, start, last))
	}
	return vs
}

func typeIn(t EventType, ts []EventType) bool {
	for _, x := range ts {
		if x == t {
			return true
		}
	}
	return false
}

// expectedEvents lists, by revision, the events a watch of w's selector
// from start must deliver up to last.
func expectedEvents(h *History, t *timeline, w *Watch, start, last int64) map[int64]expectedEvent {
	out := map[int64]expectedEvent{}
	for key, cs := range t.changes {
		prev := t.at(key, start)
		for i := range cs {
			c := &cs[i]
			if c.RV <= start {
				continue
			}
			if c.RV > last {
				break
			}
			// What came before c is known unless c is an update of an
			// object whose creation (or earlier version) nobody observed.
			prevKnown := true
			prevMatch := prev != nil && !prev.Deleted && w.matches(prev.Object)
			if !c.Deleted && (prev == nil || prev.Deleted) {
				if wr := t.writers[c.Object.Value]; wr != nil && (wr.Kind == Update || wr.Kind == Patch) {
					prevKnown = false
				}
			}
			if wr := t.writers[c.Object.Value]; !c.Deleted && wr != nil && wr.Kind == Create {
				// A create follows a deletion, observed or not.
				prevMatch = false
			}
			if c.Deleted && (prev == nil || prev.Deleted) {
				prevKnown = false
			}
			curMatch := !c.Deleted && w.matches(c.Object)
			switch {
			case !prevKnown && curMatch:
				out[c.RV] = expectedEvent{types: []EventType{Added, Modified}, object: c.Object}
			case !prevKnown:
				out[c.RV] = expectedEvent{types: []EventType{Deleted}, object: Object{Key: key}, optional: true}
			case c.Deleted && prevMatch:
				out[c.RV] = expectedEvent{types: []EventType{Deleted}, object: Object{Key: key, Value: prev.Object.Value}}
			case curMatch && prevMatch:
				out[c.RV] = expectedEvent{types: []EventType{Modified}, object: c.Object}
			case curMatch:
				out[c.RV] = expectedEvent{types: []EventType{Added}, object: c.Object}
			case prevMatch:
				// Left the selector: DELETED with the previous content.
				out[c.RV] = expectedEvent{types: []EventType{Deleted}, object: Object{Key: key, Value: prev.Object.Value}}
			}
			prev = c
		}
	}
	return out
}

// checkInitialEvents checks that the initial events of a watch-list
// stream are the state at the end bookmark's revision (selector applied),
// and that this revision is not older than any write that finished before
// the watch was requested (resourceVersion "" asks for a consistent read).
func checkInitialEvents(h *History, t *timeline, w *Watch, initial []WatchEvent, bookmark int64) []Violation {
	var vs []Violation
	if w.ResourceVersion == "" {
		for i := range h.Ops {
			o := &h.Ops[i]
			if o.Outcome == OK && o.Object != nil && o.isWrite() && o.Return < w.Call && o.Object.RV > bookmark {
				vs = append(vs, watchViolation("initial-events", w, "initial state at revision %d misses op %d (%s), which finished before the watch started", bookmark, o.ID, describeOp(o)))
				break
			}
		}
	}
	seen := map[string]bool{}
	for _, ev := range initial {
		obj := ev.Object
		switch {
		case ev.Type != Added:
			vs = append(vs, watchViolation("initial-events", w, "initial %s %s@%d, want ADDED", ev.Type, obj.Key, obj.RV))
		case seen[obj.Key]:
			vs = append(vs, watchViolation("initial-events", w, "%s sent twice", obj.Key))
		case obj.RV > bookmark:
			vs = append(vs, watchViolation("initial-events", w, "%s@%d newer than the end bookmark %d", obj.Key, obj.RV, bookmark))
		case !w.matches(obj):
			vs = append(vs, watchViolation("initial-events", w, "%s[%s] does not match the selector", obj.Key, obj.Group))
		default:
			if next := t.after(obj.Key, obj.RV); next != nil && next.RV <= bookmark {
				vs = append(vs, watchViolation("initial-events", w, "%s=%s@%d was replaced at %d ≤ bookmark %d", obj.Key, obj.Value, obj.RV, next.RV, bookmark))
			}
		}
		seen[obj.Key] = true
	}
	for _, key := range h.Keys {
		if seen[key] {
			continue
		}
		c := t.at(key, bookmark)
		if c != nil && !c.Deleted && w.matches(c.Object) && !t.mayBeAbsentAt(key, bookmark, w.End) {
			vs = append(vs, watchViolation("initial-events", w, "%s=%s@%d current at bookmark %d but not sent", key, c.Object.Value, c.RV, bookmark))
		}
	}
	return vs
}
