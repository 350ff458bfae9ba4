package kubelet

import (
	"cmp"
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// TestSandboxHostnameAsFQDN: the hostname a pod's sandbox gets, as
// upstream's generatePodSandboxConfig (GeneratePodHostNameAndDomain, then
// GetNodenameForKernel): with setHostnameAsFQDN true and a domain (a
// subdomain) the FQDN <hostname>.<subdomain>.<ns>.svc.<cluster domain>,
// at most 64 characters, longer an error in upstream's words; otherwise
// the short name; none for a host-network pod, whatever its FQDN. A pod
// name over 63 characters is cut first (and its trailing "-" or "."
// dropped), the FQDN made of what is left, as upstream's
// truncatePodHostnameIfNeeded comes before GetNodenameForKernel.
func TestSandboxHostnameAsFQDN(t *testing.T) {
	const domain = ".s.default.svc.cluster.local" // 28 characters
	h36, h37 := strings.Repeat("h", 36), strings.Repeat("h", 37)
	a62 := strings.Repeat("a", 62)
	for _, tc := range []struct {
		name          string
		podName       string // "web" if empty
		spec          v1.PodSpec
		clusterDomain string
		want, wantErr string
	}{
		{name: "a pod name of 69 characters: cut to 62, then too long", podName: a62 + "-bcdefg", spec: v1.PodSpec{Subdomain: "s", SetHostnameAsFQDN: ptr.To(true)},
			wantErr: "failed to construct FQDN from pod hostname and cluster domain, FQDN " + a62 + ".s.default.svc. is too long (64 characters is the max, 77 characters requested)"},
		{name: "a pod name of 69 characters without setHostnameAsFQDN: cut to 62", podName: a62 + "-bcdefg", spec: v1.PodSpec{Subdomain: "s"}, want: a62},
		{name: "not set: the short name", spec: v1.PodSpec{Hostname: "h", Subdomain: "s"}, clusterDomain: "cluster.local", want: "h"},
		{name: "false: the short name", spec: v1.PodSpec{Hostname: "h", Subdomain: "s", SetHostnameAsFQDN: ptr.To(false)}, clusterDomain: "cluster.local", want: "h"},
		{name: "true: the FQDN", spec: v1.PodSpec{Hostname: "h", Subdomain: "s", SetHostnameAsFQDN: ptr.To(true)}, clusterDomain: "cluster.local", want: "h" + domain},
		{name: "true, the pod's name: its FQDN", spec: v1.PodSpec{Subdomain: "s", SetHostnameAsFQDN: ptr.To(true)}, clusterDomain: "cluster.local", want: "web" + domain},
		{name: "true without a subdomain: the short name", spec: v1.PodSpec{Hostname: "h", SetHostnameAsFQDN: ptr.To(true)}, clusterDomain: "cluster.local", want: "h"},
		{name: "true without a cluster domain: the domain ends in svc.", spec: v1.PodSpec{Hostname: "h", Subdomain: "s", SetHostnameAsFQDN: ptr.To(true)}, want: "h.s.default.svc."},
		{name: "an FQDN of 64 characters", spec: v1.PodSpec{Hostname: h36, Subdomain: "s", SetHostnameAsFQDN: ptr.To(true)}, clusterDomain: "cluster.local", want: h36 + domain},
		{name: "an FQDN of 65 characters: an error", spec: v1.PodSpec{Hostname: h37, Subdomain: "s", SetHostnameAsFQDN: ptr.To(true)}, clusterDomain: "cluster.local",
			wantErr: "failed to construct FQDN from pod hostname and cluster domain, FQDN " + h37 + domain + " is too long (64 characters is the max, 65 characters requested)"},
		{name: "host network: none, whatever its FQDN", spec: v1.PodSpec{HostNetwork: true, Hostname: h37, Subdomain: "s", SetHostnameAsFQDN: ptr.To(true)}, clusterDomain: "cluster.local"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{Spec: tc.spec}
			p.Name, p.Namespace = cmp.Or(tc.podName, "web"), "default"
			got, err := sandboxHostname(p, tc.clusterDomain)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("got %q, %v; want the error %q", got, err, tc.wantErr)
				}
				return
			}
			if err != nil || got != tc.want {
				t.Errorf("got %q, %v; want %q", got, err, tc.want)
			}
		})
	}
}

// TestSandboxHostnameAsFQDNOverCRI: a CRI node's sandbox reaches the
// runtime named by the pod's FQDN when it sets setHostnameAsFQDN, its
// managed /etc/hosts unchanged (the short name after the FQDN, as
// upstream's makeMounts is given the short name and the domain); an FQDN
// over 64 characters fails the sandbox with upstream's
// FailedCreatePodSandBox event quoting the error, on a CRI node and on a
// simulated one alike (the decision is the kubelet's), and the pod's
// containers wait in ContainerCreating.
func TestSandboxHostnameAsFQDNOverCRI(t *testing.T) {
	run := func(t *testing.T, spec func(*v1.Pod)) (*runtimeapi.PodSandboxConfig, []string, error, *harness, *v1.Pod) {
		t.Helper()
		rec := record.NewFakeRecorder(1000)
		h := newHarness(t, nil)
		capture := sandboxCapture{namedRuntime{h.rt, "fake-containerd"}, make(chan *runtimeapi.PodSandboxConfig, 10)}
		client, dir := dialFakeCRI(t, capture)
		h.krt = client
		resolv := filepath.Join(t.TempDir(), "resolv.conf")
		if err := os.WriteFile(resolv, []byte("nameserver 192.168.1.1\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		h.k = h.newKubelet(func(c *Config) {
			c.PodLogsDir, c.RootDir, c.Recorder = filepath.Join(dir, "pods"), t.TempDir(), rec
			c.ClusterDomain, c.ClusterDNS, c.ResolverConfig = "cluster.local", []string{"10.96.0.10"}, &resolv
		})
		p := h.create(h.pod("web", spec))
		_, err := h.k.syncPod(h.ctx, p.UID)
		select {
		case cfg := <-capture.configs:
			return cfg, drain(rec), err, h, p
		default:
			return nil, drain(rec), err, h, p
		}
	}
	cfg, evs, err, h, p := run(t, func(p *v1.Pod) {
		p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = "h", "s", ptr.To(true)
	})
	if err != nil || cfg.GetHostname() != "h.s.default.svc.cluster.local" {
		t.Fatalf("sandbox hostname %q (%v), want the FQDN; events %q", cfg.GetHostname(), err, evs)
	}
	got := h.get(p)
	hosts, err := os.ReadFile(h.k.etcHostsPath(p.UID))
	if want := got.Status.PodIP + "\th.s.default.svc.cluster.local\th\n"; err != nil || !strings.Contains(string(hosts), want) {
		t.Errorf("etc-hosts %q (%v), want the line %q", hosts, err, want)
	}

	long := strings.Repeat("h", 37)
	wantEvent := "Warning FailedCreatePodSandBox Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN " +
		long + ".s.default.svc.cluster.local is too long (64 characters is the max, 65 characters requested)"
	cfg, evs, err, h, p = run(t, func(p *v1.Pod) {
		p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = long, "s", ptr.To(true)
	})
	if err == nil || cfg != nil {
		t.Errorf("an FQDN of 65 characters: sandbox %+v, sync error %v", cfg, err)
	}
	wantEvents(t, evs, wantEvent)
	if got := h.get(p); got.Status.Phase != v1.PodPending || cstatus(got, "app").State.Waiting == nil || cstatus(got, "app").State.Waiting.Reason != "ContainerCreating" {
		t.Errorf("pod status %+v, want Pending with app ContainerCreating", got.Status)
	}

	// A simulated node decides the same.
	rec := record.NewFakeRecorder(1000)
	sim := newHarness(t, func(c *Config) { c.Recorder, c.ClusterDomain = rec, "cluster.local" })
	sp := sim.create(sim.pod("web", func(p *v1.Pod) {
		p.Spec.Hostname, p.Spec.Subdomain, p.Spec.SetHostnameAsFQDN = long, "s", ptr.To(true)
	}))
	if _, err := sim.k.syncPod(sim.ctx, sp.UID); err == nil {
		t.Errorf("simulated node: the sync succeeded")
	}
	wantEvents(t, drain(rec), wantEvent)
	if sbs, err := sim.rt.ListPodSandbox(sim.ctx, nil); err != nil || len(sbs) != 0 || sim.get(sp).Status.Phase != v1.PodPending {
		t.Errorf("simulated node: sandboxes %v (%v), pod %+v", sbs, err, sim.get(sp).Status)
	}
}
