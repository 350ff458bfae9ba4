package cri

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/e2e/cri/images"
)

// TestHostNetworkPod: a hostNetwork pod runs in the node's network
// namespace, as upstream's kubelet asks CRI (NamespaceOption network
// NODE, so no CNI call and no pod IP allocated): its status.podIP(s) are
// the node's InternalIP, its process sees the host's network namespace
// and hostname, its /etc/hosts is the node's with the kubelet's
// host-network header and the pod's hostAliases (upstream's
// nodeHostsFileContent), and the server it listens on answers on the
// node's address.
func TestHostNetworkPod(t *testing.T) {
	ns := newNamespace(t)
	port := freeHostPort(t)
	// Earlier tests' pods may still hold IPs; none may be added.
	ipsBefore, err := node.AllocatedIPs()
	if err != nil {
		t.Fatal(err)
	}
	p := podSpec("hostnet", fmt.Sprintf("exec httpd -f -p %d -h /www", port))
	p.Spec.HostNetwork = true
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	p.Spec.Containers[0].Ports = []v1.ContainerPort{{ContainerPort: int32(port)}}
	p.Spec.HostAliases = []v1.HostAlias{{IP: "10.9.8.7", Hostnames: []string{"alias-a.example", "alias-b.example"}}}
	createPod(t, ns, p)
	got := waitPod(t, ns, p.Name, 90*time.Second, "Running", isRunning)

	n, err := env.Client.CoreV1().Nodes().Get(context.Background(), node.Name, getOpts)
	if err != nil {
		t.Fatal(err)
	}
	internal := ""
	for _, a := range n.Status.Addresses {
		if a.Type == v1.NodeInternalIP {
			internal = a.Address
			break
		}
	}
	if internal == "" {
		t.Fatalf("node %s has no InternalIP: %v", n.Name, n.Status.Addresses)
	}
	if got.Status.PodIP != internal || len(got.Status.PodIPs) != 1 || got.Status.PodIPs[0].IP != internal {
		t.Errorf("status.podIP %q, podIPs %v; want the node's InternalIP %s", got.Status.PodIP, got.Status.PodIPs, internal)
	}

	// The sandbox is in the node's network namespace, and no IP was
	// allocated for it.
	sbs := sandboxesOf(t, ns)
	if len(sbs) != 1 {
		t.Fatalf("%d sandboxes for the pod, want 1", len(sbs))
	}
	st, err := node.CRI.PodSandboxStatus(context.Background(), sbs[0].Id)
	if err != nil {
		t.Fatal(err)
	}
	if mode := st.GetLinux().GetNamespaces().GetOptions().GetNetwork(); mode != runtimeapi.NamespaceMode_NODE {
		t.Errorf("sandbox network namespace mode %v, want NODE", mode)
	}
	ipsAfter, err := node.AllocatedIPs()
	if err != nil {
		t.Fatal(err)
	}
	for _, ip := range ipsAfter {
		if !slices.Contains(ipsBefore, ip) {
			t.Errorf("IP %s allocated on the node for a host-network pod", ip)
		}
	}

	// The node's (first node's) network namespace is this test's.
	hostNet, err := os.Readlink("/proc/self/ns/net")
	if err != nil {
		t.Fatal(err)
	}
	if out := strings.TrimSpace(mustKubectl(t, "exec", "-n", ns, p.Name, "--", "readlink", "/proc/self/ns/net")); out != hostNet {
		t.Errorf("the pod's network namespace is %q, the host's %q", out, hostNet)
	}
	hostname, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if out := strings.TrimSpace(mustKubectl(t, "exec", "-n", ns, p.Name, "--", "hostname")); out != hostname {
		t.Errorf("the pod's hostname is %q, the host's %q", out, hostname)
	}
	hosts, err := os.ReadFile("/etc/hosts")
	if err != nil {
		t.Fatal(err)
	}
	want := "# Kubernetes-managed hosts file (host network).\n" + string(hosts) +
		"\n# Entries added by HostAliases.\n10.9.8.7\talias-a.example\talias-b.example\n"
	if out := mustKubectl(t, "exec", "-n", ns, p.Name, "--", "cat", "/etc/hosts"); out != want {
		t.Errorf("the pod's /etc/hosts:\n%s\nwant:\n%s", out, want)
	}

	// The server listens in the node's namespace: it answers on the
	// node's address.
	url := fmt.Sprintf("http://%s/", net.JoinHostPort(internal, fmt.Sprint(port)))
	var body string
	if !waitUntil(20*time.Second, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	}) || body != images.IndexHTML {
		t.Errorf("GET %s: %q, want the pod's index page", url, body)
	}
}

// freeHostPort is a TCP port nothing listens on in the host's network
// namespace just now.
func freeHostPort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// TestManagedEtcHosts: a pod on the pod network gets the kubelet-managed
// /etc/hosts (upstream's managedHostsFileContent), naming its hostname at
// its IP and listing its hostAliases, in place of the runtime's copy of
// the node's.
func TestManagedEtcHosts(t *testing.T) {
	ns := newNamespace(t)
	p := podSpec("hosts", "sleep 3600")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	p.Spec.Hostname = "named"
	p.Spec.HostAliases = []v1.HostAlias{{IP: "10.9.8.7", Hostnames: []string{"db.example"}}}
	createPod(t, ns, p)
	got := waitPod(t, ns, p.Name, 60*time.Second, "Running", isRunning)
	want := "# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\n" +
		"fe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n" +
		got.Status.PodIP + "\tnamed\n\n# Entries added by HostAliases.\n10.9.8.7\tdb.example\n"
	if out := mustKubectl(t, "exec", "-n", ns, p.Name, "--", "cat", "/etc/hosts"); out != want {
		t.Errorf("the pod's /etc/hosts:\n%s\nwant:\n%s", out, want)
	}
	if out := strings.TrimSpace(mustKubectl(t, "exec", "-n", ns, p.Name, "--", "hostname")); out != "named" {
		t.Errorf("the pod's hostname is %q, want its spec.hostname", out)
	}
}
