package kubelet

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// TestHostsFileContent: the managed hosts file as upstream's
// managedHostsFileContent and nodeHostsFileContent write it.
func TestHostsFileContent(t *testing.T) {
	const local = "127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n"
	aliases := []v1.HostAlias{{IP: "10.0.0.9", Hostnames: []string{"a.example", "b.example"}}, {IP: "fd00::9", Hostnames: []string{"c.example"}}}
	const aliasLines = "\n# Entries added by HostAliases.\n10.0.0.9\ta.example\tb.example\nfd00::9\tc.example\n"
	long := strings.Repeat("a", 62) + "-b"
	for _, tc := range []struct {
		name      string
		spec      v1.PodSpec
		podName   string
		ips       []string
		nodeHosts string
		domain    string // --cluster-domain
		want      string
	}{{
		name: "pod network: localhost, then the pod's IP naming its name",
		ips:  []string{"10.244.0.5"},
		want: "# Kubernetes-managed hosts file.\n" + local + "10.244.0.5\tweb\n",
	}, {
		name: "spec.hostname and a subdomain, dual-stack: one line per IP, the FQDN first; then the aliases",
		spec: v1.PodSpec{Hostname: "h", Subdomain: "s", HostAliases: aliases},
		ips:  []string{"10.244.0.5", "fd00::5"},
		want: "# Kubernetes-managed hosts file.\n" + local + "10.244.0.5\th.s.ns.svc.\th\nfd00::5\th.s.ns.svc.\th\n" + aliasLines,
	}, {
		name:   "a subdomain on a node with --cluster-domain: <subdomain>.<ns>.svc.<cluster domain>",
		spec:   v1.PodSpec{Hostname: "h", Subdomain: "s"},
		ips:    []string{"10.244.0.5"},
		domain: "cluster.local",
		want:   "# Kubernetes-managed hosts file.\n" + local + "10.244.0.5\th.s.ns.svc.cluster.local\th\n",
	}, {
		name: "hostnameOverride: the name whole, no domain",
		spec: v1.PodSpec{Hostname: "h", Subdomain: "s", HostnameOverride: ptr.To("web-1.example.com")},
		ips:  []string{"10.244.0.5"},
		want: "# Kubernetes-managed hosts file.\n" + local + "10.244.0.5\tweb-1.example.com\n",
	}, {
		name:    "a name longer than 63 characters is cut there, without a trailing '-'",
		podName: long,
		ips:     []string{"10.244.0.5"},
		want:    "# Kubernetes-managed hosts file.\n" + local + "10.244.0.5\t" + strings.Repeat("a", 62) + "\n",
	}, {
		name:      "host network: the node's file under its header, then the aliases; no pod lines",
		spec:      v1.PodSpec{HostNetwork: true, HostAliases: aliases},
		ips:       []string{"192.168.0.7"},
		nodeHosts: "127.0.0.1 localhost\n192.168.0.7 node-7\n",
		want:      "# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n192.168.0.7 node-7\n" + aliasLines,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			name := tc.podName
			if name == "" {
				name = "web"
			}
			p := &v1.Pod{Spec: tc.spec}
			p.Name, p.Namespace = name, "ns"
			if got := string(hostsFileContent(p, tc.ips, []byte(tc.nodeHosts), tc.domain)); got != tc.want {
				t.Errorf("got\n%q\nwant\n%q", got, tc.want)
			}
		})
	}
}

// TestSandboxHostname: a pod's sandbox is named by spec.hostname, else the
// pod's name (cut to 63 characters); a host-network pod's gets none, as
// upstream's generatePodSandboxConfig (the runtime would refuse one:
// runc cannot set a hostname in the node's UTS namespace).
func TestSandboxHostname(t *testing.T) {
	for _, tc := range []struct {
		spec v1.PodSpec
		name string
		want string
	}{
		{name: "web", want: "web"},
		{name: "web", spec: v1.PodSpec{Hostname: "h"}, want: "h"},
		{name: "web", spec: v1.PodSpec{Hostname: "h", HostnameOverride: ptr.To("web.example.com")}, want: "web.example.com"},
		{name: strings.Repeat("x", 70), want: strings.Repeat("x", 63)},
		{name: "web", spec: v1.PodSpec{HostNetwork: true, Hostname: "h"}, want: ""},
	} {
		p := &v1.Pod{Spec: tc.spec}
		p.Name = tc.name
		if got, err := sandboxHostname(p, ""); err != nil || got != tc.want {
			t.Errorf("pod %q %+v: sandbox hostname %q, want %q", tc.name, tc.spec, got, tc.want)
		}
	}
}

// TestEtcHostsMountedOverCRI: on a CRI node each container gets the pod's
// managed hosts file (<pod dir>/etc-hosts) on /etc/hosts, with the pod's
// IP, or the node's hosts file for a host-network pod; a container that
// mounts a volume on /etc/hosts keeps its own. A simulated node writes
// none.
func TestEtcHostsMountedOverCRI(t *testing.T) {
	node := filepath.Join(t.TempDir(), "hosts")
	if err := os.WriteFile(node, []byte("10.1.2.3 the-node\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := nodeHostsFile
	nodeHostsFile = node
	t.Cleanup(func() { nodeHostsFile = old })

	h := newHarness(t, nil)
	// The simulation behind CRI, named as a runtime with real containers
	// (a runtime named "sim" is a simulated node's).
	client, dir := dialFakeCRI(t, namedRuntime{h.rt, "fake-containerd"})
	h.krt = client
	root := t.TempDir()
	h.k = h.newKubelet(func(c *Config) { c.PodLogsDir, c.RootDir = filepath.Join(dir, "pods"), root })
	catHosts := func(p *v1.Pod, container string) string {
		t.Helper()
		cs := cstatus(p, container)
		if cs.ContainerID == "" {
			t.Fatalf("container %s not started: %+v", container, p.Status)
		}
		out, _, code, err := client.ExecSync(h.ctx, strings.TrimPrefix(cs.ContainerID, "fake-containerd://"), []string{"cat", "/etc/hosts"}, 0)
		if err != nil || code != 0 {
			t.Fatalf("cat /etc/hosts in %s: exit %d, %v", container, code, err)
		}
		return string(out)
	}

	p := h.create(h.pod("web", func(p *v1.Pod) {
		p.Spec.HostAliases = []v1.HostAlias{{IP: "10.0.0.9", Hostnames: []string{"db"}}}
		p.Spec.Containers = append(p.Spec.Containers, v1.Container{Name: "own", Image: "nginx:1.27",
			VolumeMounts: []v1.VolumeMount{{Name: "hosts", MountPath: "/etc/hosts"}}})
		p.Spec.Volumes = []v1.Volume{{Name: "hosts", VolumeSource: v1.VolumeSource{HostPath: &v1.HostPathVolumeSource{Path: node}}}}
	}))
	got := h.sync(p)
	if got.Status.PodIP == "" {
		t.Fatalf("no pod IP: %+v", got.Status)
	}
	file, err := os.ReadFile(filepath.Join(root, "pods", string(p.UID), "etc-hosts"))
	if err != nil {
		t.Fatalf("the pod's etc-hosts: %v", err)
	}
	if want := string(hostsFileContent(got, []string{got.Status.PodIP}, nil, "")); string(file) != want || !strings.Contains(want, got.Status.PodIP+"\tweb\n") || !strings.HasSuffix(want, "10.0.0.9\tdb\n") {
		t.Errorf("etc-hosts\n%s\nwant\n%s", file, want)
	}
	if out := catHosts(got, "app"); out != string(file) {
		t.Errorf("/etc/hosts in the container:\n%s\nwant the pod's etc-hosts:\n%s", out, file)
	}
	if out := catHosts(got, "own"); out != "10.1.2.3 the-node\n" {
		t.Errorf("/etc/hosts in the container mounting its own: %q", out)
	}

	hn := h.create(h.pod("hostnet", func(p *v1.Pod) { p.Spec.HostNetwork = true }))
	got = h.sync(hn)
	if want := "# Kubernetes-managed hosts file (host network).\n10.1.2.3 the-node\n"; catHosts(got, "app") != want {
		t.Errorf("/etc/hosts of a host-network pod: %q, want %q", catHosts(got, "app"), want)
	}

	// A simulated node: no file, no mount.
	sim := newHarness(t, func(c *Config) { c.RootDir = t.TempDir() })
	sp := sim.create(sim.pod("web", nil))
	if got := sim.sync(sp); got.Status.Phase != v1.PodRunning {
		t.Fatalf("simulated pod: %+v", got.Status)
	}
	if _, err := os.Stat(sim.k.etcHostsPath(sp.UID)); !os.IsNotExist(err) {
		t.Errorf("a simulated node wrote %s: %v", sim.k.etcHostsPath(sp.UID), err)
	}
}

// namedRuntime is a simulated runtime reporting another name.
type namedRuntime struct {
	*sim.Runtime
	name string
}

func (r namedRuntime) Type() string { return r.name }
