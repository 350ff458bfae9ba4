package kubelet

import (
	"context"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/record"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/ptr"
)

// TestPodDNSConfig: the sandbox DNS config of each dnsPolicy, with and
// without cluster DNS servers, cluster domain and host file, as
// upstream's GetPodDNS, and the events it records.
func TestPodDNSConfig(t *testing.T) {
	host := hostDNS{servers: []string{"192.168.1.1", "192.168.1.2"}, searches: []string{"corp.example", "example"}, options: []string{"timeout:2", "rotate"}}
	cluster := dnsSettings{clusterDNS: []string{"10.96.0.10"}, clusterDomain: "cluster.local", nodeIPs: []string{"192.168.0.7"}}
	noCluster := dnsSettings{nodeIPs: []string{"192.168.0.7"}}
	missing := "kubelet does not have ClusterDNS IP configured and cannot create Pod using \"ClusterFirst\" policy. Falling back to \"Default\" policy."
	missingEvents := []dnsEvent{
		{node: true, reason: "MissingClusterDNS", message: missing},
		{reason: "MissingClusterDNS", message: `pod: "web_ns(u1)". ` + missing},
	}
	clusterFirst := &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"},
		Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example"}, Options: []string{"ndots:5"}}
	hostCfg := &runtimeapi.DNSConfig{Servers: host.servers, Searches: host.searches, Options: host.options}
	for _, tc := range []struct {
		name   string
		spec   v1.PodSpec
		s      dnsSettings
		host   hostDNS
		want   *runtimeapi.DNSConfig
		events []dnsEvent
	}{
		{name: "ClusterFirst: the cluster DNS alone, the cluster search path then the host's, ndots:5",
			spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}, s: cluster, host: host, want: clusterFirst},
		{name: "an unknown policy is ClusterFirst's",
			spec: v1.PodSpec{DNSPolicy: "Bogus"}, s: cluster, host: host, want: clusterFirst},
		{name: "ClusterFirst, host search repeating the cluster's: once",
			spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}, s: cluster, host: hostDNS{searches: []string{"cluster.local", "a.example"}},
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "a.example"}, Options: []string{"ndots:5"}}},
		{name: "ClusterFirst without a cluster domain: the host's search path",
			spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}, s: dnsSettings{clusterDNS: []string{"10.96.0.10", "fd00::a"}}, host: host,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10", "fd00::a"}, Searches: host.searches, Options: []string{"ndots:5"}}},
		{name: "ClusterFirst without cluster DNS: Default, MissingClusterDNS on the node and the pod",
			spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}, s: noCluster, host: host, want: hostCfg, events: missingEvents},
		{name: "ClusterFirst in the host network: Default, no event",
			spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst, HostNetwork: true}, s: noCluster, host: host, want: hostCfg},
		{name: "ClusterFirstWithHostNet in the host network: the cluster's",
			spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirstWithHostNet, HostNetwork: true}, s: cluster, host: host, want: clusterFirst},
		{name: "Default: the host file's",
			spec: v1.PodSpec{DNSPolicy: v1.DNSDefault}, s: cluster, host: host, want: hostCfg},
		{name: "Default without a host file (--resolv-conf \"\"): loopback per node IP family, search \".\"",
			spec: v1.PodSpec{DNSPolicy: v1.DNSDefault}, s: dnsSettings{noResolvConf: true, nodeIPs: []string{"192.168.0.7", "fd00::7"}}, host: host,
			want: &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1", "::1"}, Searches: []string{"."}}},
		{name: "ClusterFirst without cluster DNS nor host file",
			spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}, s: dnsSettings{noResolvConf: true}, host: host,
			want: &runtimeapi.DNSConfig{Servers: []string{"127.0.0.1"}, Searches: []string{"."}}, events: missingEvents},
		{name: "ClusterFirst without a host file: no host searches",
			spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst}, s: dnsSettings{clusterDNS: []string{"10.96.0.10"}, clusterDomain: "c.local", noResolvConf: true}, host: host,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"ns.svc.c.local", "svc.c.local", "c.local"}, Options: []string{"ndots:5"}}},
		{name: "None: spec.dnsConfig alone",
			spec: v1.PodSpec{DNSPolicy: v1.DNSNone, DNSConfig: &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1"}, Searches: []string{"my.example"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("2")}, {Name: "edns0"}}}}, s: cluster, host: host,
			want: &runtimeapi.DNSConfig{Servers: []string{"1.1.1.1"}, Searches: []string{"my.example"}, Options: []string{"ndots:2", "edns0"}}},
		{name: "spec.dnsConfig appended: repeats dropped, options merged by name, the pod's winning",
			spec: v1.PodSpec{DNSPolicy: v1.DNSClusterFirst, DNSConfig: &v1.PodDNSConfig{Nameservers: []string{"10.96.0.10", "1.1.1.1"}, Searches: []string{"svc.cluster.local", "my.example"},
				Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr.To("1")}, {Name: "single-request"}}}}, s: cluster, host: host,
			want: &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10", "1.1.1.1"},
				Searches: []string{"ns.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example", "example", "my.example"}, Options: []string{"ndots:1", "single-request"}}},
		{name: "more than 3 nameservers: the first 3, DNSConfigForming",
			spec: v1.PodSpec{DNSPolicy: v1.DNSDefault, DNSConfig: &v1.PodDNSConfig{Nameservers: []string{"1.1.1.1", "8.8.8.8"}}}, s: cluster, host: host,
			want:   &runtimeapi.DNSConfig{Servers: []string{"192.168.1.1", "192.168.1.2", "1.1.1.1"}, Searches: host.searches, Options: host.options},
			events: []dnsEvent{{reason: "DNSConfigForming", message: "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: 192.168.1.1 192.168.1.2 1.1.1.1"}}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &v1.Pod{Spec: tc.spec}
			p.Name, p.Namespace, p.UID = "web", "ns", "u1"
			got, evs := podDNSConfig(p, tc.s, tc.host)
			if !reflect.DeepEqual(got.Servers, tc.want.Servers) || !reflect.DeepEqual(got.Searches, tc.want.Searches) || !equalOrEmpty(got.Options, tc.want.Options) {
				t.Errorf("got %+v\nwant %+v", got, tc.want)
			}
			if !reflect.DeepEqual(evs, tc.events) {
				t.Errorf("events %+v\nwant %+v", evs, tc.events)
			}
		})
	}
	// The host's slices are not written through.
	if host.servers[0] != "192.168.1.1" || host.options[0] != "timeout:2" {
		t.Errorf("host settings changed: %+v", host)
	}
}

func equalOrEmpty(a, b []string) bool {
	return len(a) == 0 && len(b) == 0 || reflect.DeepEqual(a, b)
}

// TestFitSearches: the search path cut to 32 paths, none over 253
// characters, a line of at most 2048, as upstream's
// formDNSSearchFitsLimits; the event names what was kept.
func TestFitSearches(t *testing.T) {
	var many []string
	for i := range 40 {
		many = append(many, "d"+strings.Repeat("x", i%3)+string(rune('a'+i%26))+".example")
	}
	many = uniqueStrings(many)
	long := strings.Repeat("a", 254)
	l200 := strings.Repeat("b", 199) // with its space, 200 per path
	var wide []string
	for i := range 11 {
		wide = append(wide, l200[:198]+string(rune('a'+i)))
	}
	for _, tc := range []struct {
		name    string
		in      []string
		wantLen int
		cut     bool
	}{
		{"within the limits: all", []string{"a.example", "b.example"}, 2, false},
		{"more than 32: the first 32", append(append([]string{}, many...), many...)[:40], 32, true},
		{"one longer than 253: dropped", []string{"a.example", long, "b.example"}, 2, true},
		{"exactly 253: kept", []string{long[:253]}, 1, false},
		{"a line over 2048: the last ones dropped", wide, 10, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cut := fitSearches(tc.in)
			if len(got) != tc.wantLen || cut != tc.cut {
				t.Fatalf("got %d paths (cut %v), want %d (cut %v)", len(got), cut, tc.wantLen, tc.cut)
			}
			if n := len(strings.Join(got, " ")); n > maxDNSSearchListChars {
				t.Errorf("line of %d characters", n)
			}
		})
	}
	p := &v1.Pod{Spec: v1.PodSpec{DNSPolicy: v1.DNSNone, DNSConfig: &v1.PodDNSConfig{Searches: []string{"a.example", long}}}}
	_, evs := podDNSConfig(p, dnsSettings{}, hostDNS{})
	want := []dnsEvent{{reason: "DNSConfigForming", message: "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: a.example"}}
	if !reflect.DeepEqual(evs, want) {
		t.Errorf("events %+v, want %+v", evs, want)
	}
}

// TestParseResolvConf: the node's resolver file as upstream's
// parseResolvConf reads it.
func TestParseResolvConf(t *testing.T) {
	got, err := parseResolvConf([]byte(`# comment
nameserver 192.168.1.1
  nameserver   fd00::1 extra
search old.example
search corp.example. . example
options ndots:2 timeout:1
options ndots:3 rotate
; not a keyword
`))
	want := hostDNS{servers: []string{"192.168.1.1", "fd00::1"}, searches: []string{"corp.example", "example"}, options: []string{"ndots:3", "timeout:1", "rotate"}}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("got %+v, %v\nwant %+v", got, err, want)
	}
	if _, err := parseResolvConf([]byte("nameserver\n")); err == nil || err.Error() != "nameserver list is empty " {
		t.Errorf("a nameserver line without an address: %v", err)
	}
	// Several: one message, as upstream's aggregate says repeated ones.
	if _, err := parseResolvConf([]byte("nameserver\nnameserver 10.0.0.1\nnameserver\n")); err == nil || err.Error() != "nameserver list is empty " {
		t.Errorf("two nameserver lines without an address: %q", err)
	}
	if got, err := parseResolvConf(nil); err != nil || got.servers == nil || len(got.servers)+len(got.searches)+len(got.options) != 0 {
		t.Errorf("empty file: %+v, %v", got, err)
	}
}

// sandboxCapture is a runtime with real containers (not "sim") that keeps
// the sandbox configs it was asked to run.
type sandboxCapture struct {
	namedRuntime
	configs chan *runtimeapi.PodSandboxConfig
}

func (r sandboxCapture) RunPodSandbox(ctx context.Context, cfg *runtimeapi.PodSandboxConfig, handler string) (string, error) {
	r.configs <- cfg
	return r.namedRuntime.RunPodSandbox(ctx, cfg, handler)
}

// TestSandboxDNSOverCRI: a CRI node's sandbox reaches the runtime (over
// the CRI gRPC) with the DNS config of the pod's policy and the kubelet's
// --cluster-dns, --cluster-domain and --resolv-conf; an unreadable
// resolver file fails the sandbox (FailedCreatePodSandBox); a simulated
// node reads nothing and records no DNS event.
func TestSandboxDNSOverCRI(t *testing.T) {
	resolv := filepath.Join(t.TempDir(), "resolv.conf")
	if err := os.WriteFile(resolv, []byte("nameserver 192.168.1.1\nsearch corp.example\noptions timeout:2\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(t *testing.T, mutate func(*Config), pod func(*v1.Pod)) (*runtimeapi.DNSConfig, []string, error) {
		t.Helper()
		rec := record.NewFakeRecorder(1000)
		h := newHarness(t, nil)
		capture := sandboxCapture{namedRuntime{h.rt, "fake-containerd"}, make(chan *runtimeapi.PodSandboxConfig, 10)}
		client, dir := dialFakeCRI(t, capture)
		h.krt = client
		h.k = h.newKubelet(func(c *Config) {
			c.PodLogsDir, c.RootDir, c.Recorder = filepath.Join(dir, "pods"), t.TempDir(), rec
			mutate(c)
		})
		p := h.create(h.pod("web", pod))
		_, err := h.k.syncPod(h.ctx, p.UID)
		select {
		case cfg := <-capture.configs:
			return cfg.GetDnsConfig(), drain(rec), err
		default:
			return nil, drain(rec), err
		}
	}
	withEvent := func(evs []string, prefix string) bool {
		for _, e := range evs {
			if strings.HasPrefix(e, prefix) {
				return true
			}
		}
		return false
	}

	got, evs, err := run(t, func(c *Config) {
		c.ClusterDNS, c.ClusterDomain, c.ResolverConfig = []string{"10.96.0.10", "not-an-ip"}, "cluster.local", &resolv
	}, func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSClusterFirst })
	want := &runtimeapi.DNSConfig{Servers: []string{"10.96.0.10"}, Searches: []string{"default.svc.cluster.local", "svc.cluster.local", "cluster.local", "corp.example"}, Options: []string{"ndots:5"}}
	if err != nil || got == nil || !reflect.DeepEqual(got.Servers, want.Servers) || !reflect.DeepEqual(got.Searches, want.Searches) || !reflect.DeepEqual(got.Options, want.Options) {
		t.Errorf("ClusterFirst sandbox DNS %+v, want %+v", got, want)
	}
	if withEvent(evs, "Warning MissingClusterDNS") {
		t.Errorf("MissingClusterDNS with cluster DNS: %q", evs)
	}

	got, evs, err = run(t, func(c *Config) { c.ResolverConfig = &resolv }, func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSClusterFirst })
	if err != nil || got == nil || !reflect.DeepEqual(got.Servers, []string{"192.168.1.1"}) || !reflect.DeepEqual(got.Searches, []string{"corp.example"}) || !reflect.DeepEqual(got.Options, []string{"timeout:2"}) {
		t.Errorf("ClusterFirst without cluster DNS: sandbox DNS %+v, want the host file's", got)
	}
	if !withEvent(evs, `Warning MissingClusterDNS pod: "web_default(uid-web)". kubelet does not have ClusterDNS IP configured`) {
		t.Errorf("no MissingClusterDNS on the pod: %q", evs)
	}

	got, evs, err = run(t, func(c *Config) { c.ResolverConfig = ptr.To(filepath.Join(t.TempDir(), "missing")) }, func(p *v1.Pod) { p.Spec.DNSPolicy = v1.DNSDefault })
	if err == nil || got != nil || !withEvent(evs, "Warning FailedCreatePodSandBox Failed to create pod sandbox: open ") {
		t.Errorf("a missing resolver file: sandbox %+v, events %q", got, evs)
	}

	// A simulated node: spec.dnsConfig as it is, no event.
	rec := record.NewFakeRecorder(1000)
	sim := newHarness(t, func(c *Config) { c.Recorder = rec; c.ResolverConfig = ptr.To(filepath.Join(t.TempDir(), "missing")) })
	if p := sim.sync(sim.create(sim.pod("web", nil))); p.Status.Phase != v1.PodRunning {
		t.Fatalf("simulated pod: %+v", p.Status)
	}
	if evs := drain(rec); withEvent(evs, "Warning MissingClusterDNS") || withEvent(evs, "Warning FailedCreatePodSandBox") {
		t.Errorf("simulated node events %q", evs)
	}
}
