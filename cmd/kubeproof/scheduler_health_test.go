package main

import (
	"context"
	"io"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/tools/leaderelection"
)

// TestSchedulerHealthChecks: kubeproof scheduler's health endpoints carry
// kube-scheduler 1.37's checks (cmd/kube-scheduler/app/server.go Run):
// /healthz the leader election watchdog (ping without leader election),
// /livez ping, /readyz the watchdog, "shutdown" and "sched-handler-sync",
// which fails until the informers synced; per-check paths, ?verbose and
// ?exclude as the healthz package. Before, all three answered "ok" to
// everything, /readyz included before the caches synced.
func TestSchedulerHealthChecks(t *testing.T) {
	for _, leaderElect := range []bool{true, false} {
		var synced atomic.Bool
		var watchDog *leaderelection.HealthzAdaptor
		if leaderElect {
			watchDog = leaderelection.NewLeaderHealthzAdaptor(leaderElectionHealthTimeout)
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		ctx, cancel := context.WithCancel(context.Background())
		checks := schedulerHealthChecks(ctx, watchDog, synced.Load)
		running := make(chan struct{})
		done := make(chan error, 1)
		go func() {
			done <- runSchedulerWithMetrics(ctx, slog.New(slog.DiscardHandler), addr, nil, http.NotFoundHandler(), checks, false,
				func(ctx context.Context) error { close(running); <-ctx.Done(); return nil })
		}()
		<-running
		client := &http.Client{Timeout: 5 * time.Second}
		get := func(path string) (int, string) {
			t.Helper()
			for range 50 {
				resp, err := client.Get("http://" + addr + path)
				if err != nil {
					time.Sleep(20 * time.Millisecond)
					continue
				}
				body, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				return resp.StatusCode, string(body)
			}
			t.Fatalf("GET %s: never answered", path)
			return 0, ""
		}
		le := "[+]leaderElection ok\n"
		healthzWant := le + "healthz check passed\n"
		if !leaderElect {
			le, healthzWant = "", "[+]ping ok\nhealthz check passed\n"
		}
		for _, tc := range []struct {
			path string
			code int
			body string
		}{
			{"/healthz?verbose", 200, healthzWant},
			{"/livez?verbose", 200, "[+]ping ok\nlivez check passed\n"},
			{"/livez/ping", 200, "ok"},
			{"/readyz", 500, le + "[+]shutdown ok\n[-]sched-handler-sync failed: reason withheld\nreadyz check failed\n"},
			{"/readyz/sched-handler-sync", 500, "internal server error: handlers are not fully synchronized\n"},
			{"/readyz?exclude=sched-handler-sync", 200, "ok"},
		} {
			if code, body := get(tc.path); code != tc.code || body != tc.body {
				t.Errorf("leader-elect %v: %s: %d %q, want %d %q", leaderElect, tc.path, code, body, tc.code, tc.body)
			}
		}
		if leaderElect {
			if code, body := get("/healthz/leaderElection"); code != 200 || body != "ok" {
				t.Errorf("/healthz/leaderElection: %d %q", code, body)
			}
		}
		synced.Store(true)
		if code, body := get("/readyz"); code != 200 || body != "ok" {
			t.Errorf("leader-elect %v: /readyz once synced: %d %q", leaderElect, code, body)
		}
		cancel()
		if err := <-done; err != nil {
			t.Error(err)
		}
	}
}
