package flowcontrol

import (
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

func TestLevelMaxSeats(t *testing.T) {
	for _, tc := range []struct{ nominal, hand, want int }{
		{5, 6, 1}, // nominal/hand is 0: at least one
		{10, 6, 1},
		{15, 6, 2},
		{20, 6, 3},
		{35, 6, 5},   // nominal/hand (5) under 15% (6)
		{100, 6, 15}, // 15% under nominal/hand (16)
		{200, 6, 30}, // 15%
		{10, 1, 2},   // 15% of 10 rounded up
		{100, 20, 5}, // nominal/hand
		{245, 6, 37}, // workload-low at the default 600 seats
		{0, 6, 1},    // no seats: still one
		{100, 0, 0},  // no queues (a Reject level): no level limit
		{100, -1, 0}, // nonsense hand: none either
		{1000, 1, 150},
	} {
		if got := LevelMaxSeats(tc.nominal, tc.hand); got != tc.want {
			t.Errorf("LevelMaxSeats(%d, %d) = %d, want %d", tc.nominal, tc.hand, got, tc.want)
		}
	}
}

// TestEstimateList: by object count (SizeBasedListCostEstimate off).
func TestEstimateList(t *testing.T) {
	for _, tc := range []struct {
		name     string
		w        ListWork
		levelMax int
		want     int
	}{
		{"from the cache: every stored object", ListWork{Count: 799}, 0, 8},
		{"from the cache: capped at the list maximum", ListWork{Count: 5000}, 0, MaximumListSeats},
		{"from the cache: the limit does not help", ListWork{Count: 799, Limit: 10}, 0, 8},
		{"from the cache: capped at the level's maximum", ListWork{Count: 799}, 3, 3},
		{"a level maximum above the list maximum does not count", ListWork{Count: 5000}, 37, MaximumListSeats},
		{"from etcd: the page read and encoded", ListWork{Count: 699, Limit: 399, FromStorage: true}, 0, 8},
		{"from etcd without a limit: everything twice", ListWork{Count: 399, FromStorage: true}, 0, 8},
		{"from etcd with a limit above the count", ListWork{Count: 150, Limit: 500, FromStorage: true}, 0, 3},
		{"from etcd with a selector: everything plus the page", ListWork{Count: 600, Limit: 50, Selective: true, FromStorage: true}, 0, 7},
		{"from etcd, small", ListWork{Count: 20, Limit: 20, FromStorage: true}, 0, 1},
		{"no objects: the minimum", ListWork{Count: 0}, 0, MinimumSeats},
		{"one object by name", ListWork{Count: 100000, Single: true}, 0, MinimumSeats},
		{"count not known: the minimum", ListWork{CountErr: ErrCountUnknown}, 0, MinimumSeats},
		{"count stale: the maximum", ListWork{Count: 1, CountErr: ErrCountStale}, 0, MaximumListSeats},
		{"count stale at a small level", ListWork{Count: 1, CountErr: ErrCountStale}, 2, 2},
		{"count stale but one object", ListWork{Count: 1, CountErr: ErrCountStale, Single: true}, 0, MinimumSeats},
		{"options that do not parse: the maximum", ListWork{BadOptions: true, Count: 1}, 0, MaximumListSeats},
		{"a watch without initial events", ListWork{Watch: true, Count: 100000}, 0, MinimumSeats},
		{"a watch with initial events: from the cache", ListWork{Watch: true, SendInitialEvents: true, Count: 799, FromStorage: true}, 0, 8},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := EstimateList(tc.w, tc.levelMax)
			if got != (WorkEstimate{InitialSeats: tc.want}) {
				t.Errorf("EstimateList(%+v, %d) = %+v, want %d initial seats", tc.w, tc.levelMax, got, tc.want)
			}
		})
	}
}

// TestEstimateListBySize: by the objects' size, kube-apiserver's default:
// a seat per 100 kB held at once, at most 100 (or the level's maximum).
func TestEstimateListBySize(t *testing.T) {
	const kB = 1000
	for _, tc := range []struct {
		name     string
		w        ListWork
		levelMax int
		want     int
	}{
		{"from the cache: the page, streamed (at most 1 MB)", ListWork{Count: 799, AverageSize: 10 * kB}, 0, 10},
		{"from the cache: a small page", ListWork{Count: 799, AverageSize: 10 * kB, Limit: 10}, 0, 1},
		{"from the cache: small objects", ListWork{Count: 99, AverageSize: kB}, 0, 1},
		{"exactly 100 kB: one seat", ListWork{Count: 100, AverageSize: kB, FromStorage: true}, 0, 1},
		{"a byte a object more: two", ListWork{Count: 100, AverageSize: kB + 1, FromStorage: true}, 0, 2},
		{"from etcd: the page", ListWork{Count: 799, AverageSize: 10 * kB, Limit: 399, FromStorage: true}, 0, 40},
		{"from etcd without a limit: everything", ListWork{Count: 1000, AverageSize: 10 * kB, FromStorage: true}, 0, 100},
		{"from etcd: capped at the size-based maximum", ListWork{Count: 2000, AverageSize: 10 * kB, FromStorage: true}, 0, MaximumSizeBasedListSeats},
		{"from etcd: capped at the level's maximum", ListWork{Count: 2000, AverageSize: 10 * kB, FromStorage: true}, 37, 37},
		{"from etcd with a selector: at least half", ListWork{Count: 1000, AverageSize: 10 * kB, Limit: 100, Selective: true, FromStorage: true}, 0, 50},
		{"from etcd with a selector: the page when larger", ListWork{Count: 1000, AverageSize: 10 * kB, Limit: 600, Selective: true, FromStorage: true}, 0, 60},
		{"from the cache a selector does not matter", ListWork{Count: 1000, AverageSize: 10 * kB, Limit: 10, Selective: true}, 0, 1},
		{"one big object by name from etcd", ListWork{Count: 1000, AverageSize: 1000 * kB, Single: true, FromStorage: true}, 0, 10},
		{"one small object by name", ListWork{Count: 100000, AverageSize: kB, Single: true}, 0, MinimumSeats},
		{"size not known: 1.5 MB an object", ListWork{Count: 10, FromStorage: true}, 0, 100},
		{"size not known, a page of one", ListWork{Count: 10, Limit: 1, FromStorage: true}, 0, 15},
		{"size not known, from the cache", ListWork{Count: 10}, 0, 10},
		{"no objects: the minimum", ListWork{}, 0, MinimumSeats},
		{"stats not known: the minimum", ListWork{CountErr: ErrCountUnknown}, 0, MinimumSeats},
		{"stats stale: the cache's most", ListWork{Count: 1, AverageSize: 1, CountErr: ErrCountStale}, 0, 10},
		{"stats stale: from etcd the most", ListWork{Count: 1, AverageSize: 1, CountErr: ErrCountStale, FromStorage: true}, 0, MaximumSizeBasedListSeats},
		{"stats stale: a page of one from etcd", ListWork{Count: 1, CountErr: ErrCountStale, Limit: 1, FromStorage: true}, 0, 15},
		{"options that do not parse: the maximum", ListWork{BadOptions: true}, 0, MaximumSizeBasedListSeats},
		{"options that do not parse at a small level", ListWork{BadOptions: true}, 8, 8},
		{"a watch without initial events", ListWork{Watch: true, Count: 100000, AverageSize: 10 * kB}, 0, MinimumSeats},
		{"a watch with initial events: from the cache", ListWork{Watch: true, SendInitialEvents: true, Count: 799, AverageSize: 10 * kB, FromStorage: true}, 0, 10},
	} {
		t.Run(tc.name, func(t *testing.T) {
			tc.w.BySize = true
			got := EstimateList(tc.w, tc.levelMax)
			if got != (WorkEstimate{InitialSeats: tc.want}) {
				t.Errorf("EstimateList(%+v, %d) = %+v, want %d initial seats", tc.w, tc.levelMax, got, tc.want)
			}
		})
	}
}

func TestEstimateMutating(t *testing.T) {
	for _, tc := range []struct {
		watchers int
		noWatch  bool
		levelMax int
		want     WorkEstimate
	}{
		{0, false, 0, WorkEstimate{InitialSeats: 1}},
		{9, false, 0, WorkEstimate{InitialSeats: 1}}, // under WatchesPerSeat: nothing after
		{10, false, 0, WorkEstimate{InitialSeats: 1, FinalSeats: 1, AdditionalLatency: 5 * time.Millisecond}},
		{25, false, 0, WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: 5 * time.Millisecond}},
		{100, false, 0, WorkEstimate{InitialSeats: 1, FinalSeats: 10, AdditionalLatency: 5 * time.Millisecond}},
		// Over the maximum the work is reshaped: fewer seats, longer.
		{101, false, 0, WorkEstimate{InitialSeats: 1, FinalSeats: 10, AdditionalLatency: 5500 * time.Microsecond}},
		{1000, false, 0, WorkEstimate{InitialSeats: 1, FinalSeats: 10, AdditionalLatency: 50 * time.Millisecond}},
		{50, false, 3, WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: 8333333 * time.Nanosecond}},
		{50, false, 40, WorkEstimate{InitialSeats: 1, FinalSeats: 5, AdditionalLatency: 5 * time.Millisecond}},
		{1000, true, 0, WorkEstimate{InitialSeats: 1}}, // a service account token notifies no watch
	} {
		if got := EstimateMutating(tc.watchers, tc.noWatch, tc.levelMax); got != tc.want {
			t.Errorf("EstimateMutating(%d, %v, %d) = %+v, want %+v", tc.watchers, tc.noWatch, tc.levelMax, got, tc.want)
		}
	}
}

func TestEstimatorReadsTheRequest(t *testing.T) {
	now := time.Unix(1000, 0)
	counts := NewObjectCounts(func() time.Time { return now })
	counts.Set("pods", storage.Stats{ObjectCount: 2500, EstimatedAverageObjectSizeBytes: 4000})
	counts.Set("deployments.apps", storage.Stats{ObjectCount: 450, EstimatedAverageObjectSizeBytes: 20000})
	watches := NewWatchTracker()
	for range 30 {
		watches.Register(&request.Info{IsResourceRequest: true, Verb: "watch", Resource: "configmaps"})
	}
	est := &Estimator{Counts: counts, Watches: watches, DisableSizeBasedListCostEstimate: true,
		ListFromStorage: func(o storage.ListOptions) bool { return o.ResourceVersion == "" || o.Predicate.Continue != "" }}
	list := func(group, resource, name string) *request.Info {
		return &request.Info{IsResourceRequest: true, Verb: "list", APIGroup: group, Resource: resource, Name: name}
	}
	levelMaxCalls := 0
	levelMax := func(n int) func() int { return func() int { levelMaxCalls++; return n } }
	for _, tc := range []struct {
		name     string
		info     *request.Info
		query    string
		levelMax int
		want     WorkEstimate
	}{
		{"a list from the cache", list("", "pods", ""), "resourceVersion=0", 0, WorkEstimate{InitialSeats: 10}},
		{"a list from the cache at a small level", list("", "pods", ""), "resourceVersion=0", 4, WorkEstimate{InitialSeats: 4}},
		{"a quorum list of a page from etcd", list("", "pods", ""), "limit=100", 0, WorkEstimate{InitialSeats: 2}},
		{"a continued list", list("apps", "deployments", ""), "limit=200&continue=abc", 0, WorkEstimate{InitialSeats: 4}},
		{"a list of a group's resource", list("apps", "deployments", ""), "resourceVersion=0", 0, WorkEstimate{InitialSeats: 5}},
		{"a list of an uncounted resource", list("", "secrets", ""), "resourceVersion=0", 0, WorkEstimate{InitialSeats: 1}},
		{"a bad limit", list("", "pods", ""), "limit=many", 0, WorkEstimate{InitialSeats: 10}},
		{"a list of one pod by field", &request.Info{IsResourceRequest: true, Verb: "list", Resource: "pods",
			FieldSelector: "metadata.name=a"}, "fieldSelector=metadata.name%3Da&resourceVersion=0", 0, WorkEstimate{InitialSeats: 1}},
		{"a watch", &request.Info{IsResourceRequest: true, Verb: "watch", Resource: "pods"}, "watch=true&resourceVersion=0", 0, WorkEstimate{InitialSeats: 1}},
		{"a watch-list", &request.Info{IsResourceRequest: true, Verb: "watch", Resource: "pods"},
			"watch=true&sendInitialEvents=true&resourceVersionMatch=NotOlderThan", 0, WorkEstimate{InitialSeats: 10}},
		{"a get", &request.Info{IsResourceRequest: true, Verb: "get", Resource: "pods", Name: "a"}, "", 0, WorkEstimate{InitialSeats: 1}},
		{"a create watched 30 times", &request.Info{IsResourceRequest: true, Verb: "create", Resource: "configmaps", Namespace: "ns"}, "", 0,
			WorkEstimate{InitialSeats: 1, FinalSeats: 3, AdditionalLatency: 5 * time.Millisecond}},
		{"a create watched 30 times at a 2-seat level", &request.Info{IsResourceRequest: true, Verb: "update", Resource: "configmaps", Namespace: "ns", Name: "a"}, "", 2,
			WorkEstimate{InitialSeats: 1, FinalSeats: 2, AdditionalLatency: 7500 * time.Microsecond}},
		{"a create nobody watches", &request.Info{IsResourceRequest: true, Verb: "create", Resource: "secrets", Namespace: "ns"}, "", 0, WorkEstimate{InitialSeats: 1}},
		{"a non-resource request", &request.Info{Verb: "get", Path: "/healthz"}, "", 0, WorkEstimate{InitialSeats: 1}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got, _ := est.Estimate(tc.info, tc.query, levelMax(tc.levelMax)); got != tc.want {
				t.Errorf("Estimate = %+v, want %+v", got, tc.want)
			}
		})
	}
	// A stale count stands for as many objects as can be: the most seats
	// from the cache, but a page of one from etcd is still one seat.
	now = now.Add(ObjectCountStaleAfter + time.Second)
	if got, _ := est.Estimate(list("", "pods", ""), "resourceVersion=0", levelMax(0)); got.InitialSeats != MaximumListSeats {
		t.Errorf("a list from the cache with a stale count: %+v, want %d seats", got, MaximumListSeats)
	}
	if got, _ := est.Estimate(list("", "pods", ""), "limit=1", levelMax(0)); got.InitialSeats != 1 {
		t.Errorf("a page of one from etcd with a stale count: %+v, want 1 seat", got)
	}
	// The level's limit is only asked for when it matters.
	levelMaxCalls = 0
	est.Estimate(&request.Info{IsResourceRequest: true, Verb: "get", Resource: "pods", Name: "a"}, "", levelMax(0))
	est.Estimate(&request.Info{IsResourceRequest: true, Verb: "create", Resource: "secrets"}, "", levelMax(0))
	est.Estimate(&request.Info{IsResourceRequest: true, Verb: "watch", Resource: "pods"}, "", levelMax(0))
	if levelMaxCalls != 0 {
		t.Errorf("the level's limit was asked for %d times for a get, an unwatched create and a watch", levelMaxCalls)
	}
	// The watches a write may notify are reported (for
	// apiserver_flowcontrol_watch_count_samples), of writes only.
	for _, tc := range []struct {
		info *request.Info
		want int
	}{
		{&request.Info{IsResourceRequest: true, Verb: "create", Resource: "configmaps", Namespace: "ns"}, 30},
		{&request.Info{IsResourceRequest: true, Verb: "delete", Resource: "secrets", Namespace: "ns", Name: "s"}, 0},
		{&request.Info{IsResourceRequest: true, Verb: "create", Resource: "serviceaccounts", Namespace: "ns", Name: "sa", Subresource: "token"}, -1},
		{list("", "configmaps", ""), -1},
	} {
		if _, got := est.Estimate(tc.info, "", levelMax(0)); got != tc.want {
			t.Errorf("%s %s: %d watchers reported, want %d", tc.info.Verb, tc.info.Resource, got, tc.want)
		}
	}
	// Without an estimator every request takes one seat.
	if got, _ := (*Estimator)(nil).Estimate(list("", "pods", ""), "", levelMax(0)); got != (WorkEstimate{InitialSeats: 1}) {
		t.Errorf("nil estimator: %+v", got)
	}
}

// By default an Estimator estimates lists by size, from the stats
// ObjectCounts holds: a continued page of 200 20 kB deployments from etcd
// takes 40 seats (by count: 4).
func TestEstimatorEstimatesListsBySize(t *testing.T) {
	counts := NewObjectCounts(nil)
	counts.Set("pods", storage.Stats{ObjectCount: 2500, EstimatedAverageObjectSizeBytes: 4000})
	counts.Set("deployments.apps", storage.Stats{ObjectCount: 450, EstimatedAverageObjectSizeBytes: 20000})
	est := &Estimator{Counts: counts,
		ListFromStorage: func(o storage.ListOptions) bool { return o.ResourceVersion == "" || o.Predicate.Continue != "" }}
	list := func(group, resource string) *request.Info {
		return &request.Info{IsResourceRequest: true, Verb: "list", APIGroup: group, Resource: resource}
	}
	for _, tc := range []struct {
		name     string
		info     *request.Info
		query    string
		levelMax int
		want     int
	}{
		{"every pod from the cache: 10 MB, streamed", list("", "pods"), "resourceVersion=0", 0, 10},
		{"a page of 100 pods from etcd", list("", "pods"), "limit=100", 0, 4},
		{"a continued page of deployments", list("apps", "deployments"), "limit=200&continue=abc", 0, 40},
		{"the same at workload-low's maximum", list("apps", "deployments"), "limit=200&continue=abc", 37, 37},
		{"every deployment from etcd with a selector", list("apps", "deployments"), "labelSelector=a%3Db", 0, 90},
		{"a resource without stats", list("", "secrets"), "", 0, 1},
	} {
		if got, _ := est.Estimate(tc.info, tc.query, func() int { return tc.levelMax }); got != (WorkEstimate{InitialSeats: tc.want}) {
			t.Errorf("%s: %+v, want %d seats", tc.name, got, tc.want)
		}
	}
	est.DisableSizeBasedListCostEstimate = true
	if got, _ := est.Estimate(list("apps", "deployments"), "limit=200&continue=abc", func() int { return 0 }); got.InitialSeats != 4 {
		t.Errorf("by count, the continued page of deployments: %+v, want 4 seats", got)
	}
}
