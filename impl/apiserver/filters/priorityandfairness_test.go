package filters

import (
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/flowcontrol"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// apfChain is request info → panic recovery → user alice → priority and
// fairness of total seats (waiting at most 1 ms) → next.
func apfChain(t *testing.T, total int, next http.Handler) http.Handler {
	t.Helper()
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	fc, err := flowcontrol.New(flowcontrol.Config{TotalSeats: total, WaitLimit: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	h := WithPriorityAndFairness(next, c, fc)
	user := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := &request.User{Name: "alice", Groups: []string{"system:authenticated"}}
		h.ServeHTTP(w, r.WithContext(request.SetUser(r.Context(), u)))
	})
	return WithRequestInfo(WithPanicRecovery(user, c, slog.New(slog.NewTextHandler(io.Discard, nil))))
}

// TestPriorityAndFairnessReleasesSeatsOnPanic: a handler that panics gives
// its seat back, so many panics in a row do not use the level up.
func TestPriorityAndFairnessReleasesSeatsOnPanic(t *testing.T) {
	h := apfChain(t, 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Query().Get("panic") != "" {
			panic("boom")
		}
		w.WriteHeader(http.StatusOK)
	}))
	for i := range 20 {
		rw := httptest.NewRecorder()
		h.ServeHTTP(rw, httptest.NewRequest("GET", "/api/v1/namespaces/a/pods?panic=1", nil))
		if rw.Code != http.StatusInternalServerError {
			t.Fatalf("panic %d: %d, want 500 (a 429 means a seat was not given back)", i, rw.Code)
		}
	}
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, httptest.NewRequest("GET", "/api/v1/namespaces/a/pods", nil))
	if rw.Code != http.StatusOK {
		t.Fatalf("after the panics: %d %s", rw.Code, rw.Body)
	}
}

// TestWatchesDoNotHoldSeats: open watches do not use their level's
// seats up; streaming subresources are not classified at all.
func TestWatchesDoNotHoldSeats(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	started := make(chan struct{}, 64)
	h := apfChain(t, 1, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info := request.InfoFrom(r.Context()); info.IsLongRunning() {
			started <- struct{}{}
			<-block // streaming until the test ends
		}
		w.WriteHeader(http.StatusOK)
	}))
	for i := range 20 {
		rw := httptest.NewRecorder()
		answered := make(chan struct{})
		go func() {
			defer close(answered)
			h.ServeHTTP(rw, httptest.NewRequest("GET", "/api/v1/namespaces/a/pods?watch=true", nil))
		}()
		select {
		case <-started:
		case <-answered:
			t.Fatalf("watch %d was answered %d instead of streaming", i, rw.Code)
		}
	}
	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, httptest.NewRequest("GET", "/api/v1/namespaces/a/pods", nil))
	if rw.Code != http.StatusOK || rw.Header().Get("X-Kubernetes-PF-FlowSchema-UID") == "" {
		t.Fatalf("a list beside 20 open watches: %d, flow schema %q", rw.Code, rw.Header().Get("X-Kubernetes-PF-FlowSchema-UID"))
	}
	logs := httptest.NewRecorder()
	go h.ServeHTTP(logs, httptest.NewRequest("GET", "/api/v1/namespaces/a/pods/p/log?follow=true", nil))
	<-started
	if got := logs.Header().Get("X-Kubernetes-PF-FlowSchema-UID"); got != "" {
		t.Errorf("a log stream was classified (flow schema %q)", got)
	}
}
