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
	"github.com/kubeproof/kubeproof/impl/storage"
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
	h := WithPriorityAndFairness(next, c, fc, nil)
	user := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		u := &request.User{Name: "alice", Groups: []string{"system:authenticated"}}
		h.ServeHTTP(w, r.WithContext(request.SetUser(r.Context(), u)))
	})
	return WithRequestInfo(WithPanicRecovery(user, c, slog.New(slog.NewTextHandler(io.Discard, nil))))
}

// TestPriorityAndFairnessReleasesSeatsOnPanic: a handler that panics gives
// its seat back, so many panics in a row do not use the level up. (16
// seats: global-default's current limit is 2 until the first adjustment;
// with fewer, an idle level that lends seats may start at 0 and queue
// everything, as kube-apiserver's.)
func TestPriorityAndFairnessReleasesSeatsOnPanic(t *testing.T) {
	h := apfChain(t, 16, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
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

// TestWatchesHoldSeatsUntilInitialized: a watch holds its seat until the
// storage says its initial events are sent (storage.WatchInitialized),
// or until it ends if that comes first; open watches past that do not
// use their level's seats up; streaming subresources are not classified
// at all.
func TestWatchesHoldSeatsUntilInitialized(t *testing.T) {
	block := make(chan struct{})
	defer close(block)
	initialize, end := make(chan struct{}), make(chan struct{})
	started := make(chan struct{}, 64)
	h := apfChain(t, 16, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if info := request.InfoFrom(r.Context()); info.IsLongRunning() {
			switch r.URL.Query().Get("initial") {
			case "late": // initial events sent once the test says so
				started <- struct{}{}
				<-initialize
				storage.WatchInitialized(r.Context())
			case "never": // the watch ends before they are sent
				started <- struct{}{}
				<-end
				return
			default: // no initial events to send
				storage.WatchInitialized(r.Context())
				started <- struct{}{}
			}
			<-block // streaming until the test ends
		}
		w.WriteHeader(http.StatusOK)
	}))
	// watch starts watches until one is turned away, and returns how many
	// got a seat.
	watch := func(initial string) int {
		for i := range 20 {
			rw := httptest.NewRecorder()
			answered := make(chan struct{})
			go func() {
				defer close(answered)
				h.ServeHTTP(rw, httptest.NewRequest("GET", "/api/v1/namespaces/a/pods?watch=true&initial="+initial, nil))
			}()
			select {
			case <-started:
			case <-answered:
				if rw.Code != http.StatusTooManyRequests {
					t.Fatalf("watch %d (%s) was answered %d", i, initial, rw.Code)
				}
				return i
			}
		}
		return 20
	}
	list := func() int {
		rw := httptest.NewRecorder()
		h.ServeHTTP(rw, httptest.NewRequest("GET", "/api/v1/namespaces/a/pods", nil))
		return rw.Code
	}
	eventuallyOK := func(what string) {
		t.Helper()
		deadline := time.Now().Add(5 * time.Second)
		for list() != http.StatusOK {
			if time.Now().After(deadline) {
				t.Fatalf("%s: the level's seats were not given back", what)
			}
			time.Sleep(time.Millisecond)
		}
	}

	if n := watch(""); n != 20 {
		t.Fatalf("watch %d without initial events was turned away", n)
	}
	held := watch("late")
	if held == 0 || held == 20 {
		t.Fatalf("%d watches sending their initial events got a seat; want some, and not all 20", held)
	}
	if code := list(); code != http.StatusTooManyRequests {
		t.Fatalf("a list while %d watches send their initial events: %d, want 429", held, code)
	}
	close(initialize)
	eventuallyOK("initial events sent")
	if n := watch("never"); n != held {
		t.Fatalf("%d watches got a seat, want %d as before", n, held)
	}
	close(end)
	eventuallyOK("watches ended before their initial events were sent")

	rw := httptest.NewRecorder()
	h.ServeHTTP(rw, httptest.NewRequest("GET", "/api/v1/namespaces/a/pods", nil))
	if rw.Code != http.StatusOK || rw.Header().Get("X-Kubernetes-PF-FlowSchema-UID") == "" {
		t.Fatalf("a list beside the open watches: %d, flow schema %q", rw.Code, rw.Header().Get("X-Kubernetes-PF-FlowSchema-UID"))
	}
	logs := httptest.NewRecorder()
	go h.ServeHTTP(logs, httptest.NewRequest("GET", "/api/v1/namespaces/a/pods/p/log?follow=true", nil))
	<-started
	if got := logs.Header().Get("X-Kubernetes-PF-FlowSchema-UID"); got != "" {
		t.Errorf("a log stream was classified (flow schema %q)", got)
	}
}
