package eventsink

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"
	utilslru "k8s.io/utils/lru"
)

// TestLRUMatchesUpstream drives this lru and k8s.io/utils/lru with the same
// random gets and adds and compares every answer and the length; after
// every add each entry must be in the table where a probe from its bucket
// finds it, and nothing else, and the slots' spare room is at most a
// quarter of them (or 8) and never beyond the limit.
func TestLRUMatchesUpstream(t *testing.T) {
	for _, size := range []int{1, 2, 5, 16, 100, 700} {
		rng := rand.New(rand.NewPCG(uint64(size), 7))
		mine, theirs := newLRU[string, int](size), utilslru.New(size)
		for i := range 20000 {
			key := strconv.Itoa(rng.IntN(3 * size))
			if rng.IntN(2) == 0 {
				got, ok := mine.get(key)
				want, wantOK := theirs.Get(key)
				if ok != wantOK || (ok && *got != want.(int)) {
					t.Fatalf("size %d step %d: get(%s) = %v %v, want %v %v", size, i, key, got, ok, want, wantOK)
				}
				continue
			}
			mine.add(key, i)
			theirs.Add(key, i)
			if mine.len() != theirs.Len() {
				t.Fatalf("size %d step %d: len %d, want %d", size, i, mine.len(), theirs.Len())
			}
			if c := cap(mine.slots); c > size || c > mine.len()+max(mine.len()/4, 8) {
				t.Fatalf("size %d step %d: room for %d slots at %d entries", size, i, c, mine.len())
			}
			if i%97 == 0 || size <= 16 {
				checkTable(t, mine)
			}
		}
	}
}

// checkTable fails unless every slot of c is in its table exactly once,
// reached by a probe from its key's bucket without an empty bucket on
// the way, and the table holds nothing else.
func checkTable[K comparable, V any](t *testing.T, c *lru[K, V]) {
	t.Helper()
	taken := 0
	for _, i := range c.table {
		if i != none {
			taken++
		}
	}
	if taken != len(c.slots) || 4*taken > 3*len(c.table) {
		t.Fatalf("table of %d buckets holds %d slot numbers, %d slots", len(c.table), taken, len(c.slots))
	}
	mask := len(c.table) - 1
	for i := range c.slots {
		b := c.bucket(c.slots[i].key)
		for c.table[b] != int32(i) {
			if c.table[b] == none {
				t.Fatalf("slot %d (%v) not reached from its bucket", i, c.slots[i].key)
			}
			b = (b + 1) & mask
		}
	}
}

// TestCorrelatorMatchesClientGo runs random event streams through this
// correlator and client-go's (record.NewEventCorrelatorWithOptions, same
// cache size and clock) and requires the same result for every event:
// skipped or not, the event to write, the patch. The server's answers
// (UpdateState) go to both. Small caches make entries fall out.
//
// Per aggregate key the messages are either a few fixed ones (never ten, so
// the aggregation set stays below its limit) or always new ones: client-go
// drops an arbitrary message once ten differ, so a stream that repeats a
// message after that has no single expected answer.
func TestCorrelatorMatchesClientGo(t *testing.T) {
	for _, tc := range []struct {
		name      string
		cacheSize int
		seed      uint64
		allRoads  bool // whether the stream must skip, aggregate and patch
	}{
		{"default caches", 0, 1, true},
		{"default caches, other seed", 0, 5, true},
		{"caches of 64", 64, 6, true},
		{"tiny caches", 3, 2, false}, // entries fall out before ten messages aggregate
		{"small caches", 8, 3, false},
		{"small caches, other seed", 8, 4, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rng := rand.New(rand.NewPCG(tc.seed, 99))
			clk := testingclock.NewFakePassiveClock(time.Date(2026, 11, 23, 2, 0, 0, 0, time.UTC))
			mine := NewCorrelator(tc.cacheSize, clk)
			theirs := record.NewEventCorrelatorWithOptions(record.CorrelatorOptions{LRUCacheSize: tc.cacheSize, Clock: clk})
			rv, unique := 100, 0
			skipped, aggregated, patched := 0, 0, 0
			for i := range 4000 {
				switch r := rng.IntN(100); {
				case r < 2:
					clk.SetTime(clk.Now().Add(time.Duration(rng.IntN(700)) * time.Second)) // past the aggregation interval
				case r < 30:
					clk.SetTime(clk.Now().Add(time.Duration(rng.IntN(20)) * time.Second))
				}
				ev := randomEvent(rng, clk.Now(), &unique)
				got, err := mine.Correlate(ev.DeepCopy())
				want, wantErr := theirs.EventCorrelate(ev.DeepCopy())
				if (err == nil) != (wantErr == nil) {
					t.Fatalf("event %d: err %v, client-go's %v", i, err, wantErr)
				}
				if got.Skip != want.Skip || !reflect.DeepEqual(got.Event, want.Event) || !bytes.Equal(got.Patch, want.Patch) {
					t.Fatalf("event %d (%s/%s %q):\n got  skip=%v %+v patch %s\n want skip=%v %+v patch %s",
						i, ev.InvolvedObject.Name, ev.Reason, ev.Message, got.Skip, got.Event, got.Patch, want.Skip, want.Event, want.Patch)
				}
				if got.Skip {
					skipped++
					continue
				}
				if got.Event.Message != ev.Message {
					aggregated++
				}
				if got.Patch != nil {
					patched++
				}
				if rng.IntN(10) == 0 {
					continue // the write failed: no answer to record
				}
				answer := got.Event.DeepCopy()
				rv++
				answer.ResourceVersion = strconv.Itoa(rv)
				mine.UpdateState(answer.DeepCopy())
				theirs.UpdateState(answer.DeepCopy())
			}
			// The streams must have exercised every road.
			if tc.allRoads && (skipped == 0 || aggregated == 0 || patched == 0) {
				t.Fatalf("skipped %d, aggregated %d, patched %d: a road not taken", skipped, aggregated, patched)
			}
		})
	}
}

// randomEvent is an event a kubelet could send: one of a few pods and
// containers, reasons whose messages are few ("Started", "Pulled") or
// always new ("Unhealthy", counted by *unique).
func randomEvent(rng *rand.Rand, now time.Time, unique *int) *v1.Event {
	pod := rng.IntN(4)
	ref := v1.ObjectReference{
		Kind: "Pod", APIVersion: "v1", Namespace: "default", Name: fmt.Sprintf("web-%d", pod),
		UID: types.UID(fmt.Sprintf("uid-%d", pod)), ResourceVersion: strconv.Itoa(rng.IntN(3)),
	}
	if rng.IntN(2) == 0 {
		ref.FieldPath = fmt.Sprintf("spec.containers{c%d}", rng.IntN(2))
	}
	typ, reason, msg := v1.EventTypeNormal, "Started", fmt.Sprintf("Started container c%d", rng.IntN(3))
	switch rng.IntN(4) {
	case 1:
		reason, msg = "Pulled", fmt.Sprintf("Container image %q already present on machine", fmt.Sprintf("img:%d", rng.IntN(2)))
	case 2:
		*unique++
		typ, reason, msg = v1.EventTypeWarning, "Unhealthy", fmt.Sprintf("Readiness probe failed: attempt %d", *unique)
	}
	t := metav1.NewTime(now)
	return &v1.Event{
		ObjectMeta:     metav1.ObjectMeta{Name: fmt.Sprintf("%v.%x", ref.Name, now.UnixNano()), Namespace: ref.Namespace},
		InvolvedObject: ref, Reason: reason, Message: msg, Type: typ,
		Source:         v1.EventSource{Component: "kubelet", Host: "node-1"},
		FirstTimestamp: t, LastTimestamp: t, Count: 1,
	}
}

// TestCacheKeysAreTheJoinedStrings checks that the caches' digest keys
// tell events apart exactly as client-go's joined key strings do: a
// change of any one field gives another key, a field boundary moved
// (the strings are joined without separators) the same key, and a key
// string longer than keyOf's stack buffer is digested whole.
func TestCacheKeysAreTheJoinedStrings(t *testing.T) {
	clk := time.Date(2026, 11, 23, 9, 0, 0, 0, time.UTC)
	base := func() *v1.Event {
		unique := 0
		ev := randomEvent(rand.New(rand.NewPCG(1, 2)), clk, &unique)
		ev.InvolvedObject.FieldPath = "spec.containers{c0}"
		return ev
	}
	joined := func(ev *v1.Event) string {
		return ev.Source.Component + ev.Source.Host + ev.InvolvedObject.Kind + ev.InvolvedObject.Namespace +
			ev.InvolvedObject.Name + ev.InvolvedObject.FieldPath + string(ev.InvolvedObject.UID) +
			ev.InvolvedObject.APIVersion + ev.Type + ev.Reason + ev.Message
	}
	for _, tc := range []struct {
		name     string
		change   func(*v1.Event)
		sameKey  bool // eventKey
		sameSpam bool // spamKey
	}{
		{"component", func(ev *v1.Event) { ev.Source.Component = "kubelet2" }, false, false},
		{"host", func(ev *v1.Event) { ev.Source.Host = "node-2" }, false, false},
		{"kind", func(ev *v1.Event) { ev.InvolvedObject.Kind = "Node" }, false, false},
		{"namespace", func(ev *v1.Event) { ev.InvolvedObject.Namespace = "other" }, false, false},
		{"name", func(ev *v1.Event) { ev.InvolvedObject.Name += "x" }, false, false},
		{"field path", func(ev *v1.Event) { ev.InvolvedObject.FieldPath = "spec.containers{c1}" }, false, true},
		{"uid", func(ev *v1.Event) { ev.InvolvedObject.UID += "x" }, false, false},
		{"api version", func(ev *v1.Event) { ev.InvolvedObject.APIVersion = "v2" }, false, false},
		{"type", func(ev *v1.Event) { ev.Type = v1.EventTypeWarning }, false, false},
		{"reason", func(ev *v1.Event) { ev.Reason = "Killing" }, false, true},
		{"message", func(ev *v1.Event) { ev.Message += "." }, false, true},
		{"resource version (not in the keys)", func(ev *v1.Event) { ev.InvolvedObject.ResourceVersion = "77" }, true, true},
		{"boundary moved between name and field path", func(ev *v1.Event) {
			ev.InvolvedObject.Name, ev.InvolvedObject.FieldPath = ev.InvolvedObject.Name+"spec.", "containers{c0}"
		}, true, false},
		{"long message", func(ev *v1.Event) { ev.Message = strings.Repeat("m", 600) }, false, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := base(), base()
			tc.change(b)
			if got, want := eventKey(a) == eventKey(b), joined(a) == joined(b); got != want || got != tc.sameKey {
				t.Errorf("eventKey equal = %v, joined strings equal = %v, want %v", got, want, tc.sameKey)
			}
			if got := spamKey(a) == spamKey(b); got != tc.sameSpam {
				t.Errorf("spamKey equal = %v, want %v", got, tc.sameSpam)
			}
			if eventKey(b) != keyOf(joined(b)) {
				t.Errorf("eventKey is not the digest of the joined string %q", joined(b))
			}
		})
	}
	long := strings.Repeat("m", 600)
	if keyOf(long) == keyOf(long[:599]+"n") {
		t.Error("keys of strings longer than the stack buffer differ only past it but are equal")
	}
}
