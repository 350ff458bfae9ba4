// Package eventsink is the way a kubelet's events go to the API server:
// the correlation client-go's record package applies before writing (a
// token bucket per source and object that drops spam, aggregation of
// similar events whose messages differ, de-duplication of repeated events
// into a count patched onto the first), with the same defaults and
// results, and the write with its retries.
//
// Why not client-go's own (record.EventBroadcaster.StartRecordingToSink):
// its correlator keeps three LRU caches of 4,096 entries per broadcaster,
// each entry a list element, an entry, a boxed record and a joined key, the
// aggregator's record a map of messages — about 48 heap objects per pod at
// 30 pods per node. Every simulated kubelet has its own broadcaster, as
// upstream's do, so at 1,000 nodes and 30,000 pods they held 1.45 M of the
// process's 5.6 M heap objects, each marked in every GC cycle. Here the
// same state is kept in one slice and one table of slot numbers per
// cache, with one string per event (the server's name and resourceVersion
// of it) as the only heap objects: the caches are keyed by a digest of client-go's key string
// (cacheKey), not the string, and hold the token buckets by value.
//
// Spec properties: none (events are advisory); the behaviour is client-go's
// and a differential test holds it to that.
package eventsink

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

// client-go record's defaults (events_cache.go).
const (
	defaultCacheSize = 4096
	// Aggregate once a source sends more than aggregateMaxEvents events
	// about an object that differ only by message within the interval.
	aggregateMaxEvents = 10
	aggregateInterval  = 600 * time.Second
	// A source may send spamBurst events about an object, then one every
	// five minutes.
	spamBurst = 25
)

// spamQPS is a float32 as client-go's (CorrelatorOptions.QPS), so that the
// token bucket refills at exactly the same rate.
var spamQPS float32 = 1. / 300.

// Correlator filters, aggregates and counts events before they are
// written, as client-go's record.EventCorrelator with default options. It
// is safe for concurrent use.
type Correlator struct {
	clock clock.PassiveClock

	mu   sync.Mutex
	spam *lru[cacheKey, tokenBucket]
	agg  *lru[cacheKey, aggregate]
	seen *lru[cacheKey, observation]
}

// cacheKey stands for one of client-go's cache keys (a string joined from
// an event's fields): the first 128 bits of its SHA-256. Equal strings
// give equal keys, and different ones different keys barring a SHA-256
// collision, so the caches behave as client-go's. Kept instead of the
// string, a cache entry holds no key object (three or four strings of
// 100-200 bytes per pod's events, each a heap object the collector marks
// for as long as the entry lives) and the index maps hold no pointers.
type cacheKey [16]byte

// keyOf is the cacheKey of the concatenation of parts.
func keyOf(parts ...string) cacheKey {
	var buf [512]byte
	b := buf[:0]
	for _, p := range parts {
		b = append(b, p...)
	}
	sum := sha256.Sum256(b)
	return cacheKey(sum[:16])
}

// aggregate is what the aggregator knows of similar events: the distinct
// messages seen (at most aggregateMaxEvents) and when the last came.
//
// An entry of the aggregator's cache holds it by value, so it is kept
// small (56 bytes, an entry 80): the other messages, which most
// aggregates never have, behind a pointer, and the count in 32 bits (it
// never passes aggregateMaxEvents).
type aggregate struct {
	first    string // messages[0], kept inline: most aggregates have one
	lastTime time.Time
	more     *[]string // the others (nil: none); never changed once set, only replaced
	n        int32
}

// observation is what the logger knows of an event already written: its
// count, first timestamp, name and resourceVersion. Most names are
// client-go's "<involved object's name>.<hex nanoseconds>" and most
// resourceVersions decimal: those are kept as the object's name string,
// which the kubelet's pod already holds (shared, not copied), and two
// numbers, so that an entry is no heap object of its own (it was one
// string per event, ~2.7 heap objects per pod at 300 x 9,000, marked in
// every GC cycle). Others are kept as one string (the name followed by
// the resourceVersion, the name its first nameHex bytes). Either way
// name() and resourceVersion() give back exactly the strings observed.
//
// The logger's cache holds it by value in each entry, one per distinct
// event (three per pod in the startup benchmark), so both forms share
// their fields: 64 bytes, an entry 88 (it was 96 and 120, ~100 bytes per
// pod with the cache's spare room).
type observation struct {
	firstTimestamp metav1.Time
	// compact: the name is str (the object's name) + "." + nameHex in
	// lowercase hex, the resourceVersion "" (rv 0) or rv-1 in decimal.
	// Otherwise str is the name and then the resourceVersion, the name
	// its first nameHex bytes (rv unused).
	str     string
	nameHex uint64
	rv      uint64
	// count is the event's (client-go's eventLog keeps uint(ev.Count): a
	// count is there when it is not 0, and int32 gives it back).
	count   int32
	compact bool
}

// observed is the observation of an event written or to be written. A
// previous observation of the same key (or the zero one) may lend its
// object name string, equal to ev's, so that the server's answer does not
// keep the answer's own copy.
func observed(ev *v1.Event, prev observation) observation {
	o := observation{count: ev.Count, firstTimestamp: ev.FirstTimestamp}
	objName := ev.InvolvedObject.Name
	if prev.compact && prev.str == objName {
		objName = prev.str
	}
	n := len(objName)
	ok := len(ev.Name) > n+1 && ev.Name[:n] == objName && ev.Name[n] == '.'
	if ok {
		o.nameHex, ok = canonicalUint(ev.Name[n+1:], 16)
	}
	if ok && ev.ResourceVersion != "" {
		var v uint64
		v, ok = canonicalUint(ev.ResourceVersion, 10)
		o.rv = v + 1
		ok = ok && o.rv != 0
	}
	if ok {
		o.compact, o.str = true, objName
		return o
	}
	o.compact, o.rv = false, 0
	o.str, o.nameHex = ev.Name+ev.ResourceVersion, uint64(len(ev.Name))
	return o
}

// canonicalUint parses s as an unsigned number in base and reports
// whether s is exactly how strconv formats it (no sign, no leading zeros,
// lowercase), so that formatting the number gives s back.
func canonicalUint(s string, base int) (uint64, bool) {
	v, err := strconv.ParseUint(s, base, 64)
	if err != nil {
		return 0, false
	}
	var buf [64]byte
	return v, string(strconv.AppendUint(buf[:0], v, base)) == s
}

func (o *observation) name() string {
	if o.compact {
		return o.str + "." + strconv.FormatUint(o.nameHex, 16)
	}
	return o.str[:o.nameHex]
}

func (o *observation) resourceVersion() string {
	if o.compact {
		if o.rv == 0 {
			return ""
		}
		return strconv.FormatUint(o.rv-1, 10)
	}
	return o.str[o.nameHex:]
}

// Result is a correlated event: skip it, or write Event (with Patch, when
// it counts an event written before).
type Result struct {
	Event *v1.Event
	Patch []byte
	Skip  bool
}

// NewCorrelator returns a correlator with client-go's defaults; cacheSize
// 0 means 4,096 entries per cache, clk nil the real clock.
func NewCorrelator(cacheSize int, clk clock.PassiveClock) *Correlator {
	if cacheSize == 0 {
		cacheSize = defaultCacheSize
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Correlator{
		clock: clk,
		spam:  newLRU[cacheKey, tokenBucket](cacheSize),
		agg:   newLRU[cacheKey, aggregate](cacheSize),
		seen:  newLRU[cacheKey, observation](cacheSize),
	}
}

// Correlate is record.EventCorrelator.EventCorrelate: ev may be replaced by
// an aggregate event, or by a count of an event already written (with the
// patch that updates it), or skipped as spam. The error is the patch's;
// the event is to be written anyway, as client-go does.
func (c *Correlator) Correlate(ev *v1.Event) (Result, error) {
	if ev == nil {
		return Result{}, fmt.Errorf("event is nil")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	aggregated, key := c.aggregate(ev)
	observed, patch, err := c.observe(aggregated, key)
	if c.isSpam(observed) {
		return Result{Skip: true}, nil
	}
	return Result{Event: observed, Patch: patch}, err
}

// UpdateState records the server's answer to a write (its name,
// resourceVersion, count and first timestamp), as
// record.EventCorrelator.UpdateState.
func (c *Correlator) UpdateState(ev *v1.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	key := eventKey(ev)
	var prev observation
	if found, ok := c.seen.get(key); ok {
		prev = *found
	}
	c.seen.add(key, observed(ev, prev))
}

// aggregate returns ev, or the aggregate event that replaces it once the
// source has sent aggregateMaxEvents differing messages about the object
// within the interval, and the key the logger counts it under.
func (c *Correlator) aggregate(ev *v1.Event) (*v1.Event, cacheKey) {
	now := metav1.NewTime(c.clock.Now())
	key := eventKey(ev)
	aggString, localKey := record.EventAggregatorByReasonFunc(ev)
	aggKey := keyOf(aggString)
	var a aggregate
	if found, ok := c.agg.get(aggKey); ok {
		a = *found
	}
	if now.Time.Sub(a.lastTime) > aggregateInterval {
		a = aggregate{}
	}
	a.insert(messages.share(localKey))
	a.lastTime = now.Time
	stored := c.agg.add(aggKey, a)
	if stored.n < aggregateMaxEvents {
		return ev, key
	}
	// Keep the set below the limit: every further differing message
	// aggregates too (client-go drops an arbitrary one; this the oldest).
	stored.dropOne()
	return &v1.Event{
		ObjectMeta: metav1.ObjectMeta{
			Name:      fmt.Sprintf("%v.%x", ev.InvolvedObject.Name, now.UnixNano()),
			Namespace: ev.Namespace,
		},
		Count:          1,
		FirstTimestamp: now,
		InvolvedObject: ev.InvolvedObject,
		LastTimestamp:  now,
		Message:        record.EventAggregatorByReasonMessageFunc(ev),
		Type:           ev.Type,
		Reason:         ev.Reason,
		Source:         ev.Source,
	}, aggKey
}

// others are the messages after the first.
func (a *aggregate) others() []string {
	if a.more == nil {
		return nil
	}
	return *a.more
}

func (a *aggregate) has(m string) bool {
	if a.n > 0 && a.first == m {
		return true
	}
	for _, x := range a.others() {
		if x == m {
			return true
		}
	}
	return false
}

// insert adds m if it is not there. The other messages are a new slice
// (copies of an aggregate share the old one, which never changes).
func (a *aggregate) insert(m string) {
	if a.has(m) {
		return
	}
	if a.n == 0 {
		a.first = m
	} else {
		old := a.others()
		more := make([]string, len(old), len(old)+1)
		copy(more, old)
		more = append(more, m)
		a.more = &more
	}
	a.n++
}

// dropOne removes the oldest message, the others being a new slice.
func (a *aggregate) dropOne() {
	switch {
	case a.n == 0:
		return
	case len(a.others()) == 0:
		a.first = ""
	default:
		old := a.others()
		a.first = old[0]
		if len(old) == 1 {
			a.more = nil
		} else {
			more := append([]string(nil), old[1:]...)
			a.more = &more
		}
	}
	a.n--
}

// observe counts ev under key: an event seen before becomes the next count
// of the first one written, with the strategic merge patch that sets it.
func (c *Correlator) observe(ev *v1.Event, key cacheKey) (*v1.Event, []byte, error) {
	cp := *ev
	event := &cp
	var patch []byte
	var err error
	var prev observation
	if last, ok := c.seen.get(key); ok {
		prev = *last
	}
	if last := &prev; last.count != 0 {
		event.Name = last.name()
		event.ResourceVersion = last.resourceVersion()
		event.FirstTimestamp = last.firstTimestamp
		event.Count = last.count + 1

		old := *event
		old.Count = 0
		old.LastTimestamp = metav1.NewTime(time.Unix(0, 0))
		old.Message = ""
		newData, _ := json.Marshal(event)
		oldData, _ := json.Marshal(&old)
		patch, err = strategicpatch.CreateTwoWayMergePatch(oldData, newData, event)
	}
	c.seen.add(key, observed(event, prev))
	return event, patch, err
}

// isSpam takes a token from the bucket of ev's source and object (a new
// one holds spamBurst) and reports whether there was none.
func (c *Correlator) isSpam(ev *v1.Event) bool {
	key := spamKey(ev)
	b := newTokenBucket()
	if found, ok := c.spam.get(key); ok {
		b = *found
	}
	spam := !b.allow(c.clock.Now())
	c.spam.add(key, b)
	return spam
}

// eventKey is the cacheKey of client-go's key of an event for counting
// repeats: its source, object, type, reason and message, joined without
// separators.
func eventKey(ev *v1.Event) cacheKey {
	return keyOf(
		ev.Source.Component, ev.Source.Host,
		ev.InvolvedObject.Kind, ev.InvolvedObject.Namespace, ev.InvolvedObject.Name, ev.InvolvedObject.FieldPath,
		string(ev.InvolvedObject.UID), ev.InvolvedObject.APIVersion,
		ev.Type, ev.Reason, ev.Message,
	)
}

// spamKey is the cacheKey of client-go's key of an event's token bucket:
// its source, object and type.
func spamKey(ev *v1.Event) cacheKey {
	return keyOf(
		ev.Source.Component, ev.Source.Host,
		ev.InvolvedObject.Kind, ev.InvolvedObject.Namespace, ev.InvolvedObject.Name,
		string(ev.InvolvedObject.UID), ev.InvolvedObject.APIVersion,
		ev.Type,
	)
}

// messages shares the aggregators' message strings across the kubelets of
// a process: a workload's pods get the same messages ("Started container
// app"), each formatted anew.
var messages = newStringTable(4096)

type stringTable struct {
	mu    sync.Mutex
	max   int
	table map[string]string
}

func newStringTable(max int) *stringTable { return &stringTable{max: max, table: map[string]string{}} }

// share returns the table's copy of s, storing s if the table has room.
func (t *stringTable) share(s string) string {
	t.mu.Lock()
	defer t.mu.Unlock()
	if v, ok := t.table[s]; ok {
		return v
	}
	if len(t.table) < t.max {
		t.table[s] = s
	}
	return s
}
