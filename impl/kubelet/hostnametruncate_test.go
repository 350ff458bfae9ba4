package kubelet

import (
	"bytes"
	"log/slog"
	"strings"
	"sync"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// syncBuffer is a bytes.Buffer safe for a logger and a test at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestHostnameTruncationLogged: a pod whose hostname (here its name) is
// longer than 63 characters has its sandbox named by the first 63, and the
// kubelet logs upstream's truncatePodHostnameIfNeeded line at its level
// (klog ErrorS, slog Error) with the pod's name, the limit and the cut
// hostname; a pod of a short name logs nothing of it.
func TestHostnameTruncationLogged(t *testing.T) {
	var buf syncBuffer
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError}))
	})
	short := h.create(h.pod("web", nil))
	if _, err := h.k.syncPod(h.ctx, short.UID); err != nil {
		t.Fatal(err)
	}
	if strings.Contains(buf.String(), "too long") {
		t.Fatalf("a short hostname logged %q", buf.String())
	}
	name := strings.Repeat("a", 62) + "-b"
	long := h.create(h.pod(name, nil))
	if _, err := h.k.syncPod(h.ctx, long.UID); err != nil {
		t.Fatal(err)
	}
	want := `level=ERROR msg="Hostname for pod was too long, truncated it" node=node-`
	want2 := ` podName=` + name + ` hostnameMaxLen=63 truncatedHostname=` + strings.Repeat("a", 62) + "-\n"
	if got := buf.String(); !strings.Contains(got, want) || !strings.Contains(got, want2) {
		t.Fatalf("log %q, want a line with %q and %q", got, want, want2)
	}
	var cfg v1.Pod = *long
	if got, err := sandboxHostname(&cfg, ""); err != nil || got != strings.Repeat("a", 62) {
		t.Errorf("sandbox hostname %q (%v), want the 62 a's", got, err)
	}
}
