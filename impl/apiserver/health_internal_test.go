package apiserver

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"slices"
	"sync/atomic"
	"testing"
	"time"
)

// healthOnly is a Server with nothing but its health state (no storage:
// the etcd checks pass).
func healthOnly(hooks ...string) *Server {
	return &Server{log: slog.New(slog.DiscardHandler), health: newHealth(hooks)}
}

func serveHealthPath(s *Server, path string) *httptest.ResponseRecorder {
	rec := httptest.NewRecorder()
	s.serveHealth(rec, httptest.NewRequest("GET", path, nil))
	return rec
}

func TestHealthShutdownFailsReadyzOnly(t *testing.T) {
	s := healthOnly()
	s.health.informersSynced.Store(true)
	if rec := serveHealthPath(s, "/readyz"); rec.Code != http.StatusOK {
		t.Fatalf("readyz before shutdown: %d %s", rec.Code, rec.Body)
	}
	s.health.shuttingDown.Store(true)
	rec := serveHealthPath(s, "/readyz")
	want := "[+]ping ok\n[+]log ok\n[+]etcd ok\n[+]etcd-readiness ok\n[+]informer-sync ok\n[-]shutdown failed: reason withheld\nreadyz check failed\n"
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != want {
		t.Errorf("readyz while shutting down: %d\n%s\nwant\n%s", rec.Code, rec.Body, want)
	}
	rec = serveHealthPath(s, "/readyz/shutdown")
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != "internal server error: process is shutting down\n" {
		t.Errorf("readyz/shutdown: %d %q", rec.Code, rec.Body)
	}
	// Excluded, the server reads as ready (kube-apiserver's way to drain
	// without failing probes that exclude it).
	if rec := serveHealthPath(s, "/readyz?exclude=shutdown"); rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Errorf("readyz excluding shutdown: %d %q", rec.Code, rec.Body)
	}
	if rec := serveHealthPath(s, "/livez"); rec.Code != http.StatusOK {
		t.Errorf("livez while shutting down: %d %s", rec.Code, rec.Body)
	}
}

func TestHealthHookFailsUntilDone(t *testing.T) {
	s := healthOnly(hookServiceIPRepair)
	s.health.informersSynced.Store(true)
	rec := serveHealthPath(s, "/livez?verbose")
	want := "[+]ping ok\n[+]log ok\n[+]etcd ok\n[-]poststarthook/start-service-ip-repair-controllers failed: reason withheld\nlivez check failed\n"
	if rec.Code != http.StatusInternalServerError || rec.Body.String() != want {
		t.Errorf("livez before the hook is done: %d\n%s", rec.Code, rec.Body)
	}
	s.health.hookDone(hookServiceIPRepair)
	if rec := serveHealthPath(s, "/livez/poststarthook/start-service-ip-repair-controllers"); rec.Code != http.StatusOK || rec.Body.String() != "ok" {
		t.Errorf("the hook's check once done: %d %q", rec.Code, rec.Body)
	}
}

func TestHookOrder(t *testing.T) {
	all := hookOrder(true, true, true, true, true, []string{"rbac/bootstrap-roles"})
	want := []string{hookStartInformers, hookAPFConsumer, hookObjectCountTracker, hookSystemNamespaces,
		hookLegacyTokenTracking, hookServiceIPRepair, "rbac/bootstrap-roles", hookAPFProducer, hookBootstrapController}
	if !slices.Equal(all, want) {
		t.Errorf("all hooks: %q, want %q", all, want)
	}
	// Without API Priority and Fairness, services, configmaps: only
	// what the server runs.
	if got := hookOrder(false, false, true, false, false, nil); !slices.Equal(got, []string{hookStartInformers, hookSystemNamespaces}) {
		t.Errorf("minimal server's hooks: %q", got)
	}
}

// The log check fails once no flush has completed for two periods.
func TestLogCheckFailsWhenFlushBlocks(t *testing.T) {
	var now atomic.Int64
	now.Store(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).UnixNano())
	clock := func() time.Time { return time.Unix(0, now.Load()) }
	release := make(chan struct{})
	blocked := make(chan struct{})
	var flushes atomic.Int32
	l := newLogCheck(func() {
		if flushes.Add(1) == 2 {
			close(blocked) // the second flush blocks: logging is stuck
			<-release
		}
	}, clock, time.Millisecond)
	defer func() { close(release); l.close() }()
	if err := l.check(context.Background()); err != nil {
		t.Fatalf("first check: %v", err)
	}
	<-blocked // the first flush completed and was recorded
	if err := l.check(context.Background()); err != nil {
		t.Fatalf("check right after a flush: %v", err)
	}
	now.Add(int64(time.Hour))
	if err := l.check(context.Background()); err == nil || err.Error() != "logging blocked" {
		t.Errorf("check with the flush blocked for an hour: %v, want logging blocked", err)
	}
}

func TestEtcdHealthWordsItsFailureAsUpstream(t *testing.T) {
	cause := errors.New("etcdserver: request timed out")
	err := etcdHealth(context.Background(), func(context.Context) error { return cause })
	if err == nil || err.Error() != "error getting data from etcd: etcdserver: request timed out" || !errors.Is(err, cause) {
		t.Errorf("etcdHealth: %v", err)
	}
	if err := etcdHealth(context.Background(), func(ctx context.Context) error {
		if _, ok := ctx.Deadline(); !ok {
			return errors.New("no timeout")
		}
		return nil
	}); err != nil {
		t.Errorf("etcdHealth of a healthy read: %v", err)
	}
}
