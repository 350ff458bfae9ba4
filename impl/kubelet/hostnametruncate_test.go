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

// TestHostnameTruncationLoggedPerContainerStart: upstream builds a pod's
// hostname (GeneratePodHostNameAndDomain, which logs its cut) for the
// sandbox config, and again for every container it starts
// (GenerateRunContainerOptions, whose hostname the /etc/hosts mount
// names), whatever the runtime and for a host-network pod too (whose
// sandbox config has no hostname). The sync that makes a two-container
// pod's sandbox logs the cut four times (the sandbox's config, the
// containers' config, each container's start), a later sync of the
// running pod once (the config built for the containers to start, none);
// a host-network pod's first sync once per container. Before, only the
// sandbox configs logged it (two, one, none).
func TestHostnameTruncationLoggedPerContainerStart(t *testing.T) {
	var buf syncBuffer
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError}))
	})
	cuts := func() int {
		n := strings.Count(buf.String(), "Hostname for pod was too long, truncated it")
		buf.mu.Lock()
		buf.b.Reset()
		buf.mu.Unlock()
		return n
	}
	long := h.create(h.pod(strings.Repeat("a", 62)+"-b", func(p *v1.Pod) {
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "side", Image: "nginx:1.27"})
	}))
	if got := h.sync(long); got.Status.Phase != v1.PodRunning {
		t.Fatalf("long: %s", got.Status.Phase)
	}
	if n := cuts(); n != 4 {
		t.Errorf("cuts logged by the sync making the sandbox: %d, want 4", n)
	}
	h.sync(long)
	if n := cuts(); n != 1 {
		t.Errorf("cuts logged by a later sync: %d, want 1", n)
	}
	hostNet := h.create(h.pod(strings.Repeat("h", 64), func(p *v1.Pod) { p.Spec.HostNetwork = true }))
	if got := h.sync(hostNet); got.Status.Phase != v1.PodRunning {
		t.Fatalf("host network: %s", got.Status.Phase)
	}
	if n := cuts(); n != 1 {
		t.Errorf("cuts logged by a host-network pod's first sync: %d, want 1", n)
	}
}
