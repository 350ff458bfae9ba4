package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
)

// countEvents counts the events starting with prefix.
func countEvents(evs []string, prefix string) int {
	n := 0
	for _, e := range evs {
		if strings.HasPrefix(e, prefix) {
			n++
		}
	}
	return n
}

// TestDNSEventsEverySync: the DNS configuration's events are recorded as
// often as upstream's GetPodDNS runs: its SyncPod builds the sandbox
// config once to create the sandbox (createPodSandbox) and once more for
// the containers to start (generatePodSandboxConfig, Step 4's end), on
// every sync of a pod that is not terminating, whether or not anything
// starts. So the sync creating the sandbox records them twice, each
// resync of the running pod once, a sync whose sandbox failed once, and
// a terminating pod's sync not at all.
func TestDNSEventsEverySync(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.168.1.1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	rec := record.NewFakeRecorder(1000)
	h := newHarness(t, nil)
	client, dir := dialFakeCRI(t, namedRuntime{h.rt, "fake-containerd"})
	h.krt = client
	h.k = h.newKubelet(func(c *Config) {
		c.PodLogsDir, c.RootDir, c.Recorder, c.ResolverConfig, c.ClusterDomain = filepath.Join(dir, "pods"), t.TempDir(), rec, &resolv, "cluster.local"
	})
	// ClusterFirst without --cluster-dns (MissingClusterDNS on the node
	// and on the pod), 4 nameservers with the host's (DNSConfigForming).
	dnsPod := func(p *v1.Pod) {
		p.Spec.DNSPolicy = v1.DNSClusterFirst
		p.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"10.0.0.1", "10.0.0.2", "10.0.0.3"}}
	}
	const (
		onNode  = "Warning MissingClusterDNS kubelet does not have ClusterDNS IP configured"
		onPod   = `Warning MissingClusterDNS pod: "web_default(uid-web)". kubelet does not have ClusterDNS IP configured`
		forming = "Warning DNSConfigForming Nameserver limits were exceeded"
	)
	check := func(what string, evs []string, n int) {
		t.Helper()
		for _, prefix := range []string{onNode, onPod, forming} {
			if got := countEvents(evs, prefix); got != n {
				t.Errorf("%s: %d events %q, want %d; events %q", what, got, prefix, n, evs)
			}
		}
	}

	p := h.create(h.pod("web", dnsPod))
	if got := h.sync(p); got.Status.Phase != v1.PodRunning {
		t.Fatalf("pod %+v", got.Status)
	}
	check("the sync creating the sandbox", drain(rec), 2)
	h.sync(p)
	check("a resync of the running pod", drain(rec), 1)
	h.sync(p)
	check("another resync", drain(rec), 1)

	deletePod(t, h, p, 30)
	h.sync(p)
	check("the terminating pod's sync", drain(rec), 0)

	// A sandbox that fails after the DNS configuration (its hostname's
	// FQDN too long): once.
	q := h.create(h.pod("fqdn", func(p *v1.Pod) {
		dnsPod(p)
		p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = strings.Repeat("h", 40), "s", ptr.To(true)
	}))
	if _, err := h.k.syncPod(h.ctx, q.UID); err == nil {
		t.Fatalf("the sandbox of an FQDN too long was created")
	}
	evs := drain(rec)
	if n := countEvents(evs, `Warning MissingClusterDNS pod: "fqdn_default(uid-fqdn)"`); n != 1 || countEvents(evs, "Warning FailedCreatePodSandBox") != 1 {
		t.Errorf("a failed sandbox: %d MissingClusterDNS on the pod, want 1; events %q", n, evs)
	}
}
