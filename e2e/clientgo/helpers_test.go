// Package clientgo tests kubeproof's API server through client-go the way
// controllers use it: a shared informer that must observe every update and
// survive a watch break and a compaction, and the API semantics issue 2
// lists (resourceVersion rules, watch from a resourceVersion, selector
// transitions on watches, pagination, bookmarks, watch-list, Conflict and
// Invalid errors), each with the watch cache on and off.
package clientgo

import (
	"bytes"
	"context"
	"io"
	"net"
	"net/http"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// cacheModes is the table every semantic test runs over.
var cacheModes = []struct {
	name       string
	watchCache bool
}{
	{"watchcache", true},
	{"etcd", false},
}

// startCluster starts a cluster on dataDir at bindAddress (port 0 picks
// one); the caller stops it.
func startCluster(t *testing.T, dataDir, bindAddress string, watchCache bool) *cluster.Cluster {
	t.Helper()
	c, err := cluster.Start(context.Background(), cluster.Config{
		DataDir:            dataDir,
		BindAddress:        bindAddress,
		WatchCache:         watchCache,
		CompactionInterval: -1,
		UnsafeNoFsync:      true,
	})
	if err != nil {
		t.Fatalf("starting cluster on %s: %v", dataDir, err)
	}
	return c
}

func hostPort(t *testing.T, url string) string {
	t.Helper()
	hp := strings.TrimPrefix(url, "https://")
	if _, _, err := net.SplitHostPort(hp); err != nil {
		t.Fatalf("cluster URL %q: %v", url, err)
	}
	return hp
}

func mustClient(t *testing.T, cfg *rest.Config) kubernetes.Interface {
	t.Helper()
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

// probe is a client transport that records what the client asks (list,
// watch, watch-list) and whether the server answered 410 Expired, and that
// can hold every new request back (a gate) while the cluster restarts.
type probe struct {
	rt http.RoundTripper

	mu      sync.Mutex
	log     []string      // "list", "watch", "watchlist", "expired", in order
	gate    chan struct{} // requests wait until it is closed
	waiting int           // requests waiting at the gate
}

func newProbe() *probe {
	p := &probe{gate: make(chan struct{})}
	close(p.gate)
	return p
}

// wrap installs the probe into cfg's transport.
func (p *probe) wrap(cfg *rest.Config) *rest.Config {
	cfg = rest.CopyConfig(cfg)
	cfg.ContentType = "application/json" // so the probe can read Status codes in watch streams
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		p.rt = rt
		return p
	})
	return cfg
}

// hold makes new requests wait; release lets them through.
func (p *probe) hold() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.gate = make(chan struct{})
}

func (p *probe) release() {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.gate:
	default:
		close(p.gate)
	}
}

// waitersAtGate is how many requests wait for release.
func (p *probe) waitersAtGate() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waiting
}

func (p *probe) record(s string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.log = append(p.log, s)
}

func (p *probe) events() []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]string(nil), p.log...)
}

func (p *probe) RoundTrip(req *http.Request) (*http.Response, error) {
	p.mu.Lock()
	gate := p.gate
	p.waiting++
	p.mu.Unlock()
	select {
	case <-gate:
	case <-req.Context().Done():
	}
	p.mu.Lock()
	p.waiting--
	p.mu.Unlock()
	if err := req.Context().Err(); err != nil {
		return nil, err
	}
	q := req.URL.Query()
	kind := ""
	if req.Method == http.MethodGet && strings.HasSuffix(req.URL.Path, "/pods") {
		switch {
		case q.Get("watch") == "true" && q.Get("sendInitialEvents") == "true":
			kind = "watchlist"
		case q.Get("watch") == "true":
			kind = "watch"
		default:
			kind = "list"
		}
		p.record(kind + " rv=" + q.Get("resourceVersion"))
	}
	resp, err := p.rt.RoundTrip(req)
	if err != nil || kind == "" {
		return resp, err
	}
	if resp.StatusCode == http.StatusGone {
		p.record("expired")
	} else if kind != "list" {
		resp.Body = &expirySniffer{ReadCloser: resp.Body, found: func() { p.record("expired") }}
	}
	return resp, nil
}

// expirySniffer watches a JSON watch stream for an ERROR event carrying a
// 410 Status.
type expirySniffer struct {
	io.ReadCloser
	found func()
	tail  []byte
	seen  bool
}

func (s *expirySniffer) Read(b []byte) (int, error) {
	n, err := s.ReadCloser.Read(b)
	if !s.seen && n > 0 {
		buf := append(s.tail, b[:n]...)
		if bytes.Contains(buf, []byte(`"code":410`)) {
			s.seen = true
			s.found()
		}
		if len(buf) > 32 {
			buf = buf[len(buf)-32:]
		}
		s.tail = append([]byte(nil), buf...)
	}
	return n, err
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, timeout time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		ok, detail := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: not within %s: %s", what, timeout, detail)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkGoroutines fails if more goroutines run than before the test (with a
// little slack for the runtime and HTTP keep-alives winding down).
func checkGoroutines(t *testing.T, before int) {
	t.Helper()
	deadline := time.Now().Add(15 * time.Second)
	for {
		n := runtime.NumGoroutine()
		if n <= before+3 {
			return
		}
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			buf = buf[:runtime.Stack(buf, true)]
			t.Fatalf("goroutines: %d after the test, %d before:\n%s", n, before, buf)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func rvInt(t *testing.T, rv string) int64 {
	t.Helper()
	n, err := strconv.ParseInt(rv, 10, 64)
	if err != nil {
		t.Fatalf("resourceVersion %q: %v", rv, err)
	}
	return n
}
