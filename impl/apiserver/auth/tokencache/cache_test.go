package tokencache

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// fakeClock is a settable clock.
type fakeClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *fakeClock) Now() time.Time { c.mu.Lock(); defer c.mu.Unlock(); return c.now }
func (c *fakeClock) step(d time.Duration) {
	c.mu.Lock()
	c.now = c.now.Add(d)
	c.mu.Unlock()
}

// counting is a Fetch that accepts "good" (for the audiences asked for,
// recording an annotation and a warning), refuses "unknown" and fails
// "bad", counting its calls.
type counting struct{ calls atomic.Int32 }

func (f *counting) fetch(ctx context.Context, token string, audiences []string) Result {
	n := f.calls.Add(1)
	switch token {
	case "good":
		audit.AddAnnotation(ctx, "example.com/fetch", fmt.Sprint(n))
		request.AddWarning(ctx, "warned")
		return Result{User: &request.User{Name: "alice"}, Audiences: audiences, OK: true}
	case "bad":
		return Result{Err: errors.New("token is bad")}
	}
	return Result{}
}

func newCache(t *testing.T, f Fetch, clock *fakeClock, cfg Config) (*Cache, *Metrics) {
	t.Helper()
	m, err := NewMetrics(prometheus.NewRegistry())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Now, cfg.Metrics = clock.Now, m
	if cfg.SuccessTTL == 0 {
		cfg.SuccessTTL = DefaultSuccessTTL
	}
	c, err := New(f, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return c, m
}

// requestContext is a request's context collecting its warnings and its
// early audit annotations.
func requestContext() (context.Context, *request.Warnings, func() map[string]string) {
	ctx, annotations := audit.CollectAnnotations(context.Background())
	ctx, w := request.WithWarnings(ctx)
	return ctx, w, annotations
}

// TestSuccessCachedForTTL: as kube-apiserver's token cache (success TTL
// 10 s), a token accepted once is not authenticated again for 10 s; each
// request it accepts gets the annotations and warnings the one
// authentication recorded; once the entry has expired the token is
// authenticated again.
func TestSuccessCachedForTTL(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	f := &counting{}
	c, m := newCache(t, f.fetch, clock, Config{})
	auds := []string{"https://kubernetes.default.svc"}
	for i, step := range []time.Duration{0, time.Second, 9*time.Second - time.Nanosecond} {
		clock.step(step)
		ctx, w, annotations := requestContext()
		res := c.Authenticate(ctx, "good", auds)
		if !res.OK || res.Err != nil || res.User.Name != "alice" || !reflect.DeepEqual(res.Audiences, auds) {
			t.Fatalf("request %d: %+v, want alice accepted for %q", i, res, auds)
		}
		if n := f.calls.Load(); n != 1 {
			t.Fatalf("request %d: %d authentications, want 1 (cached)", i, n)
		}
		if got := annotations(); !reflect.DeepEqual(got, map[string]string{"example.com/fetch": "1"}) {
			t.Errorf("request %d: annotations %v, want the first authentication's", i, got)
		}
		if got := w.List(); !reflect.DeepEqual(got, []string{"warned"}) {
			t.Errorf("request %d: warnings %q, want the first authentication's", i, got)
		}
	}
	if hit, miss := value(m.requests.WithLabelValues("hit")), value(m.requests.WithLabelValues("miss")); hit != 2 || miss != 1 {
		t.Errorf("request_total hit %v miss %v, want 2 and 1", hit, miss)
	}
	clock.step(time.Nanosecond) // 10 s after the fetch: expired
	ctx, _, annotations := requestContext()
	if res := c.Authenticate(ctx, "good", auds); !res.OK || f.calls.Load() != 2 {
		t.Fatalf("after 10 s: %+v, %d authentications, want accepted after a second one", res, f.calls.Load())
	}
	if got := annotations(); got["example.com/fetch"] != "2" {
		t.Errorf("after 10 s: annotations %v, want the second authentication's", got)
	}
	if ok := value(m.fetches.WithLabelValues("ok")); ok != 2 {
		t.Errorf("fetch_total ok %v, want 2", ok)
	}
}

// TestAudiencesAreInTheKey: the same token checked for other audiences
// (a TokenReview's) is authenticated again, and is not mistaken for the
// first.
func TestAudiencesAreInTheKey(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	f := &counting{}
	c, _ := newCache(t, f.fetch, clock, Config{})
	for i, auds := range [][]string{{"a"}, {"b"}, {"a", "b"}, {"ab"}, nil, {"a"}, {"b"}, {"a", "b"}, {"ab"}, nil} {
		res := c.Authenticate(context.Background(), "good", auds)
		if !res.OK || !reflect.DeepEqual(res.Audiences, auds) {
			t.Fatalf("audiences %q: %+v", auds, res)
		}
		want := int32(min(i+1, 5))
		if n := f.calls.Load(); n != want {
			t.Fatalf("after audiences %q (lookup %d): %d authentications, want %d", auds, i, n, want)
		}
	}
}

// TestFailuresNotCached: with kube-apiserver's failure TTL of 0 neither a
// refusal nor an error is cached; a refused request gets none of the
// fetch's annotations. With CacheErrors and a failure TTL an error is
// cached as a refusal with its error.
func TestFailuresNotCached(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	f := &counting{}
	c, m := newCache(t, f.fetch, clock, Config{CacheErrors: true})
	for range 2 {
		if res := c.Authenticate(context.Background(), "unknown", nil); res.OK || res.Err != nil || res.User != nil {
			t.Fatalf("unknown token: %+v, want refused without error", res)
		}
		if res := c.Authenticate(context.Background(), "bad", nil); res.OK || res.Err == nil || res.Err.Error() != "token is bad" {
			t.Fatalf("bad token: %+v, want its error", res)
		}
	}
	if n := f.calls.Load(); n != 4 {
		t.Errorf("%d authentications, want 4 (none cached)", n)
	}
	if ok, failed := value(m.fetches.WithLabelValues("ok")), value(m.fetches.WithLabelValues("error")); ok != 2 || failed != 2 {
		t.Errorf("fetch_total ok %v error %v, want 2 and 2", ok, failed)
	}

	g := &counting{}
	cached, _ := newCache(t, g.fetch, clock, Config{CacheErrors: true, FailureTTL: time.Minute})
	for range 2 {
		if res := cached.Authenticate(context.Background(), "bad", nil); res.Err == nil || res.OK {
			t.Fatalf("bad token: %+v, want its error", res)
		}
	}
	if n := g.calls.Load(); n != 1 {
		t.Errorf("failure TTL a minute: %d authentications of the bad token, want 1", n)
	}
	h := &counting{}
	uncached, _ := newCache(t, h.fetch, clock, Config{FailureTTL: time.Minute})
	for range 2 {
		uncached.Authenticate(context.Background(), "bad", nil)
	}
	if n := h.calls.Load(); n != 2 {
		t.Errorf("errors not cached: %d authentications of the bad token, want 2", n)
	}
}

// TestConcurrentLookupsShareOneFetch: requests with the same token
// arriving while it is being authenticated wait for that authentication
// (active_fetch_count: one in_flight, each blocked); a request whose
// context ends stops waiting with its error while the authentication
// goes on and is cached.
func TestConcurrentLookupsShareOneFetch(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	release := make(chan struct{})
	var calls atomic.Int32
	fetch := func(ctx context.Context, token string, _ []string) Result {
		calls.Add(1)
		<-release
		return Result{User: &request.User{Name: "alice"}, OK: true}
	}
	c, m := newCache(t, fetch, clock, Config{})
	const n = 8
	results := make(chan Result, n)
	for range n {
		go func() { results <- c.Authenticate(context.Background(), "tok", nil) }()
	}
	cctx, cancel := context.WithCancel(context.Background())
	cancelled := make(chan Result, 1)
	go func() { cancelled <- c.Authenticate(cctx, "tok", nil) }()
	waitFor(t, "all lookups blocked on one fetch", func() bool {
		return value(m.active.WithLabelValues("blocked")) == n+1
	})
	if f := value(m.active.WithLabelValues("in_flight")); f != 1 {
		t.Errorf("in_flight %v, want 1", f)
	}
	cancel()
	if res := <-cancelled; res.OK || !errors.Is(res.Err, context.Canceled) {
		t.Errorf("cancelled lookup: %+v, want context.Canceled", res)
	}
	close(release)
	for range n {
		if res := <-results; !res.OK || res.User.Name != "alice" {
			t.Errorf("waiting lookup: %+v, want alice", res)
		}
	}
	if got := calls.Load(); got != 1 {
		t.Errorf("%d authentications, want 1", got)
	}
	if res := c.Authenticate(context.Background(), "tok", nil); !res.OK || calls.Load() != 1 {
		t.Errorf("after the shared fetch: %+v, %d authentications, want cached", res, calls.Load())
	}
	waitFor(t, "gauges back to zero", func() bool {
		return value(m.active.WithLabelValues("blocked")) == 0 && value(m.active.WithLabelValues("in_flight")) == 0
	})
}

// TestPanickingFetch: a fetch that panics is an internal error for its
// waiters, not a crash, and is not cached.
func TestPanickingFetch(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	var calls atomic.Int32
	c, _ := newCache(t, func(context.Context, string, []string) Result { calls.Add(1); panic("boom") }, clock, Config{CacheErrors: true})
	for range 2 {
		if res := c.Authenticate(context.Background(), "tok", nil); res.OK || res.Err == nil || !strings.Contains(res.Err.Error(), "authentication failed unexpectedly") {
			t.Fatalf("%+v, want the internal error", res)
		}
	}
	if calls.Load() != 2 {
		t.Errorf("%d fetches, want 2", calls.Load())
	}
}

// TestEntriesBounded: the cache holds at most MaxEntries, the least
// recently used dropped first; an expired entry is dropped when looked up.
func TestEntriesBounded(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	f := &counting{}
	c, _ := newCache(t, f.fetch, clock, Config{MaxEntries: 2})
	c.Authenticate(context.Background(), "good", []string{"1"})
	c.Authenticate(context.Background(), "good", []string{"2"})
	c.Authenticate(context.Background(), "good", []string{"1"}) // 1 most recently used
	c.Authenticate(context.Background(), "good", []string{"3"}) // drops 2
	if n := c.Len(); n != 2 {
		t.Fatalf("%d entries, want 2", n)
	}
	before := f.calls.Load()
	c.Authenticate(context.Background(), "good", []string{"1"})
	if f.calls.Load() != before {
		t.Errorf("the recently used entry was dropped")
	}
	c.Authenticate(context.Background(), "good", []string{"2"})
	if f.calls.Load() != before+1 {
		t.Errorf("the least recently used entry was kept")
	}
	clock.step(DefaultSuccessTTL)
	c.mu.Lock()
	_, ok := c.lookup(c.key("good", []string{"1"}))
	c.mu.Unlock()
	if ok || c.Len() != 1 {
		t.Errorf("expired entry: found %v, %d entries left, want dropped (1 left)", ok, c.Len())
	}
}

// TestMetricsExposition: the metrics' names, help text, type and labels
// as kube-apiserver exposes them.
func TestMetricsExposition(t *testing.T) {
	reg := prometheus.NewRegistry()
	m, err := NewMetrics(reg)
	if err != nil {
		t.Fatal(err)
	}
	c, err := New((&counting{}).fetch, Config{SuccessTTL: DefaultSuccessTTL, Metrics: m})
	if err != nil {
		t.Fatal(err)
	}
	c.Authenticate(context.Background(), "good", nil)
	c.Authenticate(context.Background(), "good", nil)
	text := exposition(t, reg)
	for _, want := range []string{
		"# HELP authentication_token_cache_request_total [ALPHA] \n# TYPE authentication_token_cache_request_total counter\n" +
			"authentication_token_cache_request_total{status=\"hit\"} 1\nauthentication_token_cache_request_total{status=\"miss\"} 1\n",
		"# HELP authentication_token_cache_fetch_total [ALPHA] \n# TYPE authentication_token_cache_fetch_total counter\n" +
			"authentication_token_cache_fetch_total{status=\"ok\"} 1\n",
		"# HELP authentication_token_cache_active_fetch_count [ALPHA] \n# TYPE authentication_token_cache_active_fetch_count gauge\n" +
			"authentication_token_cache_active_fetch_count{status=\"blocked\"} 0\nauthentication_token_cache_active_fetch_count{status=\"in_flight\"} 0\n",
		"# HELP authentication_token_cache_request_duration_seconds [ALPHA] \n# TYPE authentication_token_cache_request_duration_seconds histogram\n" +
			"authentication_token_cache_request_duration_seconds_bucket{status=\"hit\",le=\"0.005\"} 1\n",
		"authentication_token_cache_request_duration_seconds_bucket{status=\"miss\",le=\"10\"} 1\n" +
			"authentication_token_cache_request_duration_seconds_bucket{status=\"miss\",le=\"+Inf\"} 1\n",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("exposition lacks\n%s\ngot\n%s", want, text)
		}
	}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == "authentication_token_cache_request_duration_seconds" {
			if b := mf.GetMetric()[0].GetHistogram().GetBucket(); len(b) != len(prometheus.DefBuckets) {
				t.Errorf("%d buckets, want the default %d", len(b), len(prometheus.DefBuckets))
			}
		}
	}
}

// exposition is reg's metrics in the Prometheus text format.
func exposition(t *testing.T, reg *prometheus.Registry) string {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, mf := range mfs {
		if _, err := expfmt.MetricFamilyToText(&b, mf); err != nil {
			t.Fatal(err)
		}
	}
	return b.String()
}

// value is a counter's or gauge's value.
func value(c prometheus.Metric) float64 {
	var m dto.Metric
	if err := c.Write(&m); err != nil {
		panic(err)
	}
	if m.Counter != nil {
		return m.Counter.GetValue()
	}
	return m.Gauge.GetValue()
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(time.Millisecond)
	}
}

// TestTokenIsInTheKey: an acceptance cached for one token is never served
// for another with the same audiences, however close (a prefix, an
// extension, the token with the audiences run into it); each is
// authenticated itself and refused.
func TestTokenIsInTheKey(t *testing.T) {
	clock := &fakeClock{now: time.Unix(1_800_000_000, 0)}
	f := &counting{}
	c, _ := newCache(t, f.fetch, clock, Config{})
	auds := []string{"a"}
	if res := c.Authenticate(context.Background(), "good", auds); !res.OK {
		t.Fatalf("good: %+v, want accepted", res)
	}
	for i, tok := range []string{"goo", "good ", "gooda", "", "GOOD", "good\x00a"} {
		if res := c.Authenticate(context.Background(), tok, auds); res.OK || res.User != nil {
			t.Errorf("%q after good: %+v, want refused (good's acceptance served)", tok, res)
		}
		if n := f.calls.Load(); n != int32(i+2) {
			t.Errorf("%q after good: %d authentications, want %d", tok, n, i+2)
		}
	}
	if res := c.Authenticate(context.Background(), "good", auds); !res.OK || f.calls.Load() != 7 {
		t.Errorf("good again: %+v, %d authentications, want cached", res, f.calls.Load())
	}
}
