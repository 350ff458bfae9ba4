package flowcontrol

import (
	"math"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// Work estimation as kube-apiserver's defaults: a request takes at least
// MinimumSeats; a list one seat per BytesPerSeat of objects it holds at
// once, at most MaximumSizeBasedListSeats (SizeBasedListCostEstimate, on
// by default since 1.34), or with that off one seat per ObjectsPerSeat
// objects it goes through, at most MaximumListSeats; a write one seat,
// and when WatchesPerSeat or more watches may be interested in it, one
// final seat per WatchesPerSeat of them (at most MaximumMutatingSeats)
// for EventAdditionalDuration per final seat after it is done. A priority
// level that queues caps them further at LevelMaxSeats.
const (
	MinimumSeats              = 1
	MaximumListSeats          = 10
	MaximumSizeBasedListSeats = 100
	MaximumMutatingSeats      = 10
	ObjectsPerSeat            = 100
	BytesPerSeat              = 100_000
	WatchesPerSeat            = 10
	EventAdditionalDuration   = 5 * time.Millisecond

	// levelMaxSeatsShare of a level's nominal seats is the most one
	// request may take (kube-apiserver's 15%: 10 seats for the default
	// levels at the default 600 seats).
	levelMaxSeatsShare = 0.15
	// unknownCount stands for the count of a resource whose stats went
	// stale: as many objects as can be (the most seats).
	unknownCount = 1_000_000_000
	// maxObjectBytes stands for the size of an object whose size is not
	// known (or whose stats went stale): the largest request etcd takes by
	// default, 1.5 MB.
	maxObjectBytes = 1_500_000
	// cacheListMaxBytes is the most a list served by the watch cache is
	// counted for by size (10 seats): the cache streams it.
	cacheListMaxBytes = 1_000_000
)

// LevelMaxSeats is the most seats one request may take at a priority
// level that queues, with nominal seats and handSize: 15% of its nominal
// seats rounded up, but no more than nominal/handSize (so that a hand of
// queues can hold such requests), at least 1, as kube-apiserver's
// configuration controller computes it. Levels that do not queue have
// none (0): the package limits apply.
func LevelMaxSeats(nominal, handSize int) int {
	if handSize <= 0 {
		return 0
	}
	return max(1, min(int(math.Ceil(float64(nominal)*levelMaxSeatsShare)), nominal/handSize))
}

// ListWork is what the estimate of a list, or of a watch, looks at.
type ListWork struct {
	// Watch: a watch, which costs like a list only when it asks for its
	// initial events (SendInitialEvents).
	Watch, SendInitialEvents bool
	// Single: the request names one object (by path or a metadata.name
	// field selector); it is read like a get.
	Single bool
	// BadOptions: the list options do not parse; the request will fail,
	// and is estimated at the most seats until it does.
	BadOptions bool
	// Count is the number of stored objects of the resource and
	// AverageSize their average stored size in bytes (0: not known);
	// CountErr ErrCountStale or ErrCountUnknown when they are not known
	// (see ObjectCounts).
	Count       int64
	AverageSize int64
	CountErr    error
	// Limit is the list's limit (0: none); Selective: it has a label or
	// field selector.
	Limit     int64
	Selective bool
	// FromStorage: the list is read from etcd, not from the watch cache.
	FromStorage bool
	// BySize: estimate by the objects' size (kube-apiserver's
	// SizeBasedListCostEstimate), not by their number.
	BySize bool
}

// EstimateList is the work of a list or watch, as kube-apiserver's list
// work estimator says it, at a level whose LevelMaxSeats is levelMax (0:
// none). Watches without initial events and resources without known
// stats take MinimumSeats, unparsable options the most seats; stale stats
// stand for unknownCount objects of maxObjectBytes. Then:
//   - by size (w.BySize): a seat per BytesPerSeat the list holds at once,
//     at most MaximumSizeBasedListSeats. It holds one object for a single
//     object; from the watch cache the page (its limit, or every stored
//     object), counted for at most cacheListMaxBytes as the cache streams
//     it; from etcd the page, or with a selector at least half the stored
//     objects. An object weighs the resource's average size, or
//     maxObjectBytes when that is not known.
//   - by count: a seat per ObjectsPerSeat objects gone through, at most
//     MaximumListSeats: one for a single object; every stored one from
//     the cache; from etcd every stored one plus the page with a
//     selector, else the page twice (read, then encoded).
func EstimateList(w ListWork, levelMax int) WorkEstimate {
	maxSeats := MaximumListSeats
	if w.BySize {
		maxSeats = MaximumSizeBasedListSeats
	}
	if levelMax > 0 && levelMax < maxSeats {
		maxSeats = levelMax
	}
	if w.BadOptions {
		return WorkEstimate{InitialSeats: maxSeats}
	}
	if w.Watch && !w.SendInitialEvents {
		return WorkEstimate{InitialSeats: MinimumSeats}
	}
	count, size := w.Count, w.AverageSize
	switch w.CountErr {
	case nil:
	case ErrCountUnknown:
		return WorkEstimate{InitialSeats: MinimumSeats}
	default: // stale, or anything unexpected: assume the worst
		count, size = unknownCount, maxObjectBytes
	}
	fromCache := w.Watch || !w.FromStorage
	var seats int64
	if w.BySize {
		seats = listSeatsBySize(w, count, size, fromCache)
	} else {
		seats = listSeatsByCount(w, count, fromCache)
	}
	return WorkEstimate{InitialSeats: int(min(max(seats, MinimumSeats), int64(maxSeats)))}
}

// listSeatsBySize is EstimateList's seats by size, before its bounds.
func listSeatsBySize(w ListWork, count, size int64, fromCache bool) int64 {
	if size <= 0 && count != 0 {
		size = maxObjectBytes
	}
	page := count
	if w.Limit > 0 && w.Limit < count {
		page = w.Limit
	}
	held := page
	switch {
	case w.Single:
		held = 1
	case !fromCache && w.Selective:
		held = max(page, count/2)
	}
	bytes := held * size
	if fromCache {
		bytes = min(bytes, cacheListMaxBytes)
	}
	return ceilDiv(bytes, BytesPerSeat)
}

// listSeatsByCount is EstimateList's seats by count, before its bounds.
func listSeatsByCount(w ListWork, count int64, fromCache bool) int64 {
	page := count
	if w.Limit > 0 && w.Limit < count {
		page = w.Limit
	}
	var objects int64
	switch {
	case w.Single:
		objects = 1
	case fromCache:
		objects = count
	case w.Selective:
		objects = count + page
	default:
		objects = 2 * page
	}
	return ceilDiv(objects, ObjectsPerSeat)
}

// ceilDiv is n/d rounded up, for n >= 0 and d > 0.
func ceilDiv(n, d int64) int64 { return (n + d - 1) / d }

// EstimateMutating is the work of a write that watchers watches may be
// interested in, at a level whose LevelMaxSeats is levelMax (0: none), as
// kube-apiserver's mutating work estimator says it: one seat while it
// executes; with WatchesPerSeat watchers or more, ceil(watchers /
// WatchesPerSeat) final seats for EventAdditionalDuration each, reshaped
// to at most the level's (or MaximumMutatingSeats) seats for
// proportionally longer. Writes that notify no watch (a service account
// token) take one seat.
func EstimateMutating(watchers int, notifiesNoWatch bool, levelMax int) WorkEstimate {
	maxSeats := levelMax
	if maxSeats <= 0 || maxSeats > MaximumMutatingSeats {
		maxSeats = MaximumMutatingSeats
	}
	if notifiesNoWatch || watchers < WatchesPerSeat {
		return WorkEstimate{InitialSeats: MinimumSeats}
	}
	final := int(math.Ceil(float64(watchers) / WatchesPerSeat))
	// The final work in seat-seconds, in kube-apiserver's fixed point
	// (10 ns units), then spread over at most maxSeats seats.
	work := math.Round(float64(final) * float64(EventAdditionalDuration) / 10)
	final = min(final, maxSeats)
	return WorkEstimate{InitialSeats: MinimumSeats, FinalSeats: final,
		AdditionalLatency: time.Duration(work / float64(final) * 10)}
}

// Estimator estimates the work of each request from the stored objects'
// stats and the open watches.
type Estimator struct {
	// Counts are the stored objects' stats per resource; nil: none known.
	Counts *ObjectCounts
	// DisableSizeBasedListCostEstimate estimates lists by their objects'
	// number, as kube-apiserver with
	// --feature-gates=SizeBasedListCostEstimate=false, instead of their
	// size (its default since 1.34).
	DisableSizeBasedListCostEstimate bool
	// Watches are the open watches; nil: none counted.
	Watches *WatchTracker
	// ListFromStorage reports whether a list with opts is read from etcd
	// (the watch cache's rule, cacher.DelegatesList); nil: lists are read
	// from the cache.
	ListFromStorage func(opts storage.ListOptions) bool
}

// Estimate is the work of the request info describes, with raw URL query
// rawQuery (parsed only for lists and watches), at a level whose
// LevelMaxSeats levelMax gives (called only when a limit matters): lists
// and watches by EstimateList, creates,
// updates, patches and deletes by EstimateMutating, anything else one
// seat, as kube-apiserver's work estimator. watchers is the number of
// watches a write may have to notify (-1 for other requests, and for
// writes that notify none).
func (e *Estimator) Estimate(info *request.Info, rawQuery string, levelMax func() int) (work WorkEstimate, watchers int) {
	one := WorkEstimate{InitialSeats: MinimumSeats}
	if e == nil || info == nil || !info.IsResourceRequest {
		return one, -1
	}
	switch info.Verb {
	case "list", "watch":
		w := e.listWork(info, rawQuery)
		if w.Watch && !w.SendInitialEvents {
			return one, -1
		}
		return EstimateList(w, levelMax()), -1
	case "create", "update", "patch", "delete":
		if e.Watches == nil || (info.Resource == "serviceaccounts" && info.Subresource == "token") {
			return one, -1
		}
		watchers := e.Watches.Interested(info)
		if watchers < WatchesPerSeat {
			return one, watchers
		}
		return EstimateMutating(watchers, false, levelMax()), watchers
	}
	return one, -1
}

// ObserveWork records the work estimated for the request classified cl
// (apiserver_flowcontrol_work_estimated_seats) and, for a write, the
// watches it may notify (apiserver_flowcontrol_watch_count_samples;
// watchers < 0: none recorded), as kube-apiserver's filter does.
func (c *Controller) ObserveWork(cl Classification, work WorkEstimate, watchers int) {
	fm := cl.flow.metrics
	fm.workSeats.Observe(float64(work.maxSeats()))
	if watchers >= 0 {
		fm.watchCount.Observe(float64(watchers))
	}
}

// listWork describes a list or watch request for EstimateList.
func (e *Estimator) listWork(info *request.Info, rawQuery string) ListWork {
	w := ListWork{Watch: info.Verb == "watch", Single: objectName(info) != "", BySize: !e.DisableSizeBasedListCostEstimate}
	query, _ := url.ParseQuery(rawQuery) // what parses, as url.URL.Query
	var opts metav1.ListOptions
	if err := metav1.Convert_url_Values_To_v1_ListOptions(&query, &opts, nil); err != nil {
		w.BadOptions = true
		return w
	}
	w.SendInitialEvents = opts.SendInitialEvents != nil && *opts.SendInitialEvents
	if w.Watch && !w.SendInitialEvents {
		return w
	}
	w.Limit, w.Selective = opts.Limit, opts.LabelSelector != "" || opts.FieldSelector != ""
	if e.ListFromStorage != nil {
		w.FromStorage = e.ListFromStorage(storage.ListOptions{
			ResourceVersion: opts.ResourceVersion, ResourceVersionMatch: opts.ResourceVersionMatch,
			Predicate: storage.SelectionPredicate{Limit: opts.Limit, Continue: opts.Continue},
			Recursive: true,
		})
	}
	if e.Counts == nil {
		w.CountErr = ErrCountUnknown
	} else {
		var st storage.Stats
		// Keyed as kube-apiserver's deprecated apiserver_storage_objects'
		// resource label, resource[.group].
		gr := schema.GroupResource{Group: info.APIGroup, Resource: info.Resource}
		st, w.CountErr = e.Counts.Get(gr.String())
		w.Count, w.AverageSize = st.ObjectCount, st.EstimatedAverageObjectSizeBytes
	}
	return w
}

// MaxSeats is LevelMaxSeats of the level the request classified cl waits
// at (0 for the exempt level and levels that reject instead of queuing).
func (c *Controller) MaxSeats(cl Classification) int {
	if cl.flow.exempt {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	l := cl.flow.at
	if l == nil || l.reject || l.exempt {
		return 0
	}
	return LevelMaxSeats(l.nominal, l.handSize)
}
