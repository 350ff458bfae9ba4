package main

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/storage/embedded"
)

// TestAPIServerSecurePortZeroPrintsChosenAddress: --secure-port 0 picks a
// free port, so "Serving securely on" must name the port picked (the only
// way a user learns it), and the server must answer there.
func TestAPIServerSecurePortZeroPrintsChosenAddress(t *testing.T) {
	etcd, err := embedded.Start(context.Background(), embedded.Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("starting etcd: %v", err)
	}
	t.Cleanup(func() { _ = etcd.Close() })

	ctx, cancel := context.WithCancel(context.Background())
	cmd := newAPIServerCommand()
	var out syncBuffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs([]string{"--etcd-servers=" + strings.Join(etcd.Endpoints(), ","), "--secure-port=0",
		"--cert-dir=" + t.TempDir(), "--etcd-count-metric-poll-period=0"})
	done := make(chan error, 1)
	go func() { done <- cmd.ExecuteContext(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("apiserver: %v", err)
			}
		case <-time.After(30 * time.Second):
			t.Error("apiserver did not stop")
		}
	})

	const prefix = "Serving securely on "
	var addr string
	for deadline := time.Now().Add(30 * time.Second); addr == "" && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		for _, line := range strings.Split(out.String(), "\n") {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				addr = rest
			}
		}
	}
	if addr == "" {
		t.Fatalf("no %q line; output:\n%s", prefix, out.String())
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil || host != "127.0.0.1" || port == "0" {
		t.Fatalf("printed address %q, want 127.0.0.1 and the port picked (err %v)", addr, err)
	}
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var lastErr error
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		resp, err := client.Get("https://" + addr + "/livez")
		if err != nil {
			lastErr = err
			continue
		}
		_ = resp.Body.Close()
		return // any HTTP answer: the server is at the printed address
	}
	t.Fatalf("nothing answers at the printed address %s: %v", addr, lastErr)
}
