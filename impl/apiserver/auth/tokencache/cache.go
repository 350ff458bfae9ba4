// Package tokencache is the cache kube-apiserver puts in front of its
// bearer token authenticators (the union of the token file, service
// account, bootstrap and webhook token authenticators): an accepted token
// is not authenticated again for SuccessTTL (10 s in kube-apiserver), so a
// client sending the same token request after request costs one
// authentication, not one per request, and the side effects counted per
// authentication (the service account token counters) count once per
// cache miss.
//
// As kube-apiserver's cache:
//   - the key is the token and the audiences it is checked for, hashed
//     with HMAC-SHA256 under a random key made when the cache is, so the
//     cache holds no token and clients cannot choose colliding keys;
//   - a refusal is cached for FailureTTL (0 in kube-apiserver: never), an
//     error only when CacheErrors is set and then as a refusal;
//   - the authentication runs detached from the request (its own context,
//     30 s at most, carrying only the audiences), shared by the concurrent
//     requests with the same key; a request whose context ends first stops
//     waiting with its context's error, the authentication goes on for the
//     others and for the cache;
//   - the audit annotations and warnings the authentication recorded are
//     kept with the result and added to every request it accepts, whether
//     it fetched the result or found it cached; a refused request gets
//     none of them;
//   - its metrics are authentication_token_cache_request_total and
//     _request_duration_seconds (status hit or miss), _fetch_total (status
//     ok or error) and _active_fetch_count (status in_flight or blocked).
//
// Entries live in a least-recently-used list of at most MaxEntries (32768).
// kube-apiserver's cache (32 stripes of expiring maps) has no such bound:
// it holds every entry for its TTL, removing expired ones as new ones are
// stored; since only acceptances are cached, its size follows the valid
// tokens seen in 10 s. Here, more than 32768 of them within 10 s are
// authenticated again sooner than there. An expired entry is dropped when
// looked up, and the least recently used one when a new one needs room,
// so expired entries never hold more than that bound.
package tokencache

import (
	"container/list"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"log/slog"
	"runtime"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// kube-apiserver's defaults: successes are cached 10 s, refusals not at
// all (it has no flag for either).
const (
	DefaultSuccessTTL = 10 * time.Second
	DefaultFailureTTL = 0
	// DefaultMaxEntries bounds the entries of a cache.
	DefaultMaxEntries = 32 * 1024
	// fetchTimeout bounds an authentication shared by several requests,
	// as kube-apiserver's shared lookup timeout.
	fetchTimeout = 30 * time.Second
)

// Result is what authenticating a token gives.
type Result struct {
	User *request.User
	// Audiences are those, of the audiences asked for, the token is good
	// for (filled by audience-aware fetches only).
	Audiences []string
	OK        bool
	Err       error
}

// Fetch authenticates token for audiences: what the cache stands in
// front of. Its context carries no request, only a deadline; the audit
// annotations (audit.AddAnnotation) and warnings (request.AddWarning) it
// adds are kept with its result.
type Fetch func(ctx context.Context, token string, audiences []string) Result

// Config configures a Cache.
type Config struct {
	// SuccessTTL and FailureTTL are how long an acceptance and a refusal
	// are cached; 0 caches none.
	SuccessTTL, FailureTTL time.Duration
	// CacheErrors caches an authentication that failed with an error as a
	// refusal (kube-apiserver's outer cache does; its webhook's does not).
	CacheErrors bool
	// MaxEntries bounds the entries (DefaultMaxEntries when 0).
	MaxEntries int
	// Now is the clock of the entries' lifetimes (time.Now when nil).
	Now func() time.Time
	// Metrics, when set, counts lookups and fetches.
	Metrics *Metrics
	// Logger logs failed authentications (slog.Default when nil).
	Logger *slog.Logger
}

// Cache is a token cache in front of one Fetch.
type Cache struct {
	fetch Fetch
	cfg   Config
	// hashes are HMAC-SHA256 hashes under the cache's random key.
	hashes sync.Pool

	mu sync.Mutex
	// entries index order's elements (values *entry) by key; order's
	// front is the most recently used.
	entries  map[string]*list.Element
	order    list.List
	inflight map[string]*call
}

// record is a fetched result with what its authentication recorded.
type record struct {
	res         Result
	annotations map[string]string
	warnings    []string
}

type entry struct {
	key     string
	rec     *record
	expires time.Time
}

// call is a fetch in progress; done is closed once rec is set.
type call struct {
	done chan struct{}
	rec  *record
}

// New returns a cache in front of fetch.
func New(fetch Fetch, cfg Config) (*Cache, error) {
	if cfg.MaxEntries <= 0 {
		cfg.MaxEntries = DefaultMaxEntries
	}
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	key := make([]byte, 32)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("token cache key: %w", err)
	}
	c := &Cache{fetch: fetch, cfg: cfg, entries: map[string]*list.Element{}, inflight: map[string]*call{}}
	c.hashes.New = func() any { return hmac.New(sha256.New, key) }
	return c, nil
}

// errAuthnCrash is the error of a fetch that panicked, as kube-apiserver's
// (an internal error).
var errAuthnCrash = apierrors.NewInternalError(errors.New("authentication failed unexpectedly"))

// Authenticate authenticates token for audiences (the request's: the API
// audiences, or a TokenReview's), from the cache when it holds the
// result. An accepted result adds its audit annotations and warnings to
// ctx's request; a refused one returns only its error.
func (c *Cache) Authenticate(ctx context.Context, token string, audiences []string) Result {
	start := time.Now()
	key := c.key(token, audiences)
	c.mu.Lock()
	rec, hit := c.lookup(key)
	c.mu.Unlock()
	if hit {
		c.cfg.Metrics.requested(true, start)
		return rec.replay(ctx)
	}
	defer c.cfg.Metrics.blocking()()
	defer c.cfg.Metrics.requested(false, start)
	cl := c.join(key, token, audiences)
	select {
	case <-cl.done:
		return cl.rec.replay(ctx)
	case <-ctx.Done():
		return Result{Err: ctx.Err()}
	}
}

// replay is the result for one request: an acceptance with the
// annotations and warnings added to ctx, or a refusal alone.
func (r *record) replay(ctx context.Context) Result {
	if !r.res.OK || r.res.Err != nil {
		return Result{Err: r.res.Err}
	}
	for k, v := range r.annotations {
		audit.AddAnnotation(ctx, k, v)
	}
	for _, w := range r.warnings {
		request.AddWarning(ctx, w)
	}
	return r.res
}

// lookup returns key's live entry, dropping it when expired (c.mu held).
func (c *Cache) lookup(key string) (*record, bool) {
	el, ok := c.entries[key]
	if !ok {
		return nil, false
	}
	e := el.Value.(*entry)
	if !c.cfg.Now().Before(e.expires) {
		c.order.Remove(el)
		delete(c.entries, key)
		return nil, false
	}
	c.order.MoveToFront(el)
	return e.rec, true
}

// join returns the fetch of key in progress, starting one when none is
// (or a finished call when the result was cached meanwhile).
func (c *Cache) join(key, token string, audiences []string) *call {
	c.mu.Lock()
	defer c.mu.Unlock()
	if cl, ok := c.inflight[key]; ok {
		return cl
	}
	if rec, ok := c.lookup(key); ok {
		cl := &call{done: make(chan struct{}), rec: rec}
		close(cl.done)
		return cl
	}
	cl := &call{done: make(chan struct{})}
	c.inflight[key] = cl
	go c.run(key, cl, token, audiences)
	return cl
}

// run fetches key's result for cl, caches it as the TTLs say, and ends
// cl. The fetch's context is its own (bounded by fetchTimeout), so the
// goroutine ends when the fetch does, whoever still waits.
func (c *Cache) run(key string, cl *call, token string, audiences []string) {
	rec := &record{}
	done := c.cfg.Metrics.fetching()
	defer func() {
		if r := recover(); r != nil {
			buf := make([]byte, 64<<10)
			buf = buf[:runtime.Stack(buf, false)]
			c.cfg.Logger.Error("token authentication panicked", "panic", r, "stack", string(buf))
			rec = &record{res: Result{Err: errAuthnCrash}}
		}
		if rec.res.Err != nil {
			c.cfg.Logger.Error("error authenticating token", "err", rec.res.Err)
		}
		done(rec.res.Err == nil)
		c.mu.Lock()
		if ttl := c.ttl(rec.res); ttl > 0 {
			c.store(key, rec, ttl)
		}
		delete(c.inflight, key)
		cl.rec = rec
		c.mu.Unlock()
		close(cl.done)
	}()
	ctx, cancel := context.WithTimeout(context.Background(), fetchTimeout)
	defer cancel()
	ctx, annotations := audit.CollectAnnotations(ctx)
	ctx, warnings := request.WithWarnings(ctx)
	rec.res = c.fetch(ctx, token, audiences)
	rec.annotations = annotations()
	rec.warnings = warnings.List()
}

// ttl is how long res is cached (0: not at all).
func (c *Cache) ttl(res Result) time.Duration {
	switch {
	case res.Err != nil && !c.cfg.CacheErrors:
		return 0
	case res.OK && res.Err == nil:
		return c.cfg.SuccessTTL
	default:
		return c.cfg.FailureTTL
	}
}

// store caches rec under key for ttl, making room by dropping the least
// recently used entries (c.mu held).
func (c *Cache) store(key string, rec *record, ttl time.Duration) {
	e := &entry{key: key, rec: rec, expires: c.cfg.Now().Add(ttl)}
	if el, ok := c.entries[key]; ok {
		el.Value = e
		c.order.MoveToFront(el)
		return
	}
	for len(c.entries) >= c.cfg.MaxEntries {
		last := c.order.Back()
		c.order.Remove(last)
		delete(c.entries, last.Value.(*entry).key)
	}
	c.entries[key] = c.order.PushFront(e)
}

// Len is the number of entries held, expired ones not yet dropped
// included.
func (c *Cache) Len() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.entries)
}

// key hashes the token and the audiences, each length-prefixed (and the
// audiences counted) so that no two different inputs run together.
func (c *Cache) key(token string, audiences []string) string {
	h := c.hashes.Get().(hash.Hash)
	defer c.hashes.Put(h)
	return Key(h, token, audiences)
}

// Key is the cache key of token for audiences, hashed with h (a keyed
// HMAC, reset first) so that no token is kept in memory. Every string is
// written after its length and the audiences after their number, as
// kube-apiserver's token cache derives its keys, so no two (token,
// audiences) pairs share a key: joined with a separator, ["a\x00b"] and
// ["a", "b"], or [""] and none, would, and an answer for one set of
// audiences would be served for the other. The webhook token
// authenticator's own cache keys its answers with it too.
func Key(h hash.Hash, token string, audiences []string) string {
	h.Reset()
	var n [4]byte
	writeString := func(s string) {
		binary.BigEndian.PutUint32(n[:], uint32(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	writeString(token)
	binary.BigEndian.PutUint32(n[:], uint32(len(audiences)))
	h.Write(n[:])
	for _, a := range audiences {
		writeString(a)
	}
	return string(h.Sum(nil))
}
