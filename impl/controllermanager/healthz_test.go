package controllermanager

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"
)

// TestHealthzChecks: the controller manager's /healthz has
// kube-controller-manager 1.37's checks (cmd/kube-controller-manager/app
// Run and StartControllers): the leader election watchdog
// ("leaderElection") with --leader-elect, then one check per started
// controller named by its canonical name (deployment-controller, ...);
// ping without leader election until the controllers start. As
// upstream's base handler, only /healthz is served (no per-check paths,
// no /readyz). Before, /healthz answered "ok" to anything, ?verbose
// included.
func TestHealthzChecks(t *testing.T) {
	for _, leaderElect := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		_ = ln.Close()
		cfg := DefaultConfig()
		cfg.Controllers = []string{ReplicaSet, Deployment}
		cfg.LeaderElect = leaderElect
		cfg.Election.Identity = "a"
		cfg.Election.LeaseDuration, cfg.Election.RenewDeadline, cfg.Election.RetryPeriod = 2*time.Second, 1500*time.Millisecond, 100*time.Millisecond
		cfg.MetricsAddr = addr
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- RunWithClients(ctx, fakeClients(t, fake.NewClientset()), cfg) }()
		get := func(path string) (int, string) {
			resp, err := http.Get("http://" + addr + path)
			if err != nil {
				return 0, err.Error()
			}
			defer resp.Body.Close()
			body, _ := io.ReadAll(resp.Body)
			return resp.StatusCode, string(body)
		}
		want := "[+]replicaset-controller ok\n[+]deployment-controller ok\nhealthz check passed\n"
		if leaderElect {
			want = "[+]leaderElection ok\n" + want
		}
		var code int
		var body string
		waitFor(t, "/healthz to list the controllers", func() bool {
			code, body = get("/healthz?verbose")
			return code == 200 && body == want
		})
		if code, body := get("/healthz"); code != 200 || body != "ok" {
			t.Errorf("/healthz: %d %q", code, body)
		}
		if code, body := get("/healthz?exclude=deployment-controller&verbose"); code != 200 || !strings.Contains(body, "[+]deployment-controller excluded: ok\n") {
			t.Errorf("/healthz excluding: %d %q", code, body)
		}
		for _, path := range []string{"/healthz/deployment-controller", "/healthz/leaderElection", "/readyz", "/livez"} {
			if code, _ := get(path); code != 404 {
				t.Errorf("leader-elect %v: %s: %d, want 404 as kube-controller-manager's", leaderElect, path, code)
			}
		}
		cancel()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
