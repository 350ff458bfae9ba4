package kubelet

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
)

// The kubelet-managed /etc/hosts, as upstream's kubelet (makeMounts,
// makeHostsMount, ensureHostsFile in pkg/kubelet/kubelet_pods.go): on a
// CRI node, every container of a pod gets the pod's <pod dir>/etc-hosts
// bind-mounted on /etc/hosts (read-write), unless it mounts a volume
// there itself or the pod is on the pod network and has no IP yet. The
// file is written afresh before each container is created:
//
//   - a host-network pod's is the node's own /etc/hosts under a header
//     saying so;
//   - any other pod's has localhost's entries and one line per pod IP
//     naming the pod's hostname (hostname.subdomain-domain first when the
//     pod has a subdomain).
//
// Either ends with the pod's hostAliases, one line per entry. Its size
// counts towards the pod's local ephemeral storage (the eviction
// manager's HostProvider measures it, as upstream's stats add the etc-hosts
// file to the pod's ephemeral storage). Simulated nodes write none: their
// containers have no filesystem to mount it in.

// The headers of the managed hosts file, as upstream's.
const (
	managedHostsHeader                = "# Kubernetes-managed hosts file.\n"
	managedHostsHeaderWithHostNetwork = "# Kubernetes-managed hosts file (host network).\n"
)

// etcHostsContainerPath is where the file is mounted.
const etcHostsContainerPath = "/etc/hosts"

// nodeHostsFile is the node's hosts file a host-network pod's copies (a
// variable for tests).
var nodeHostsFile = "/etc/hosts"

// etcHostsPath is the pod's managed hosts file.
func (k *Kubelet) etcHostsPath(uid types.UID) string {
	return filepath.Join(k.podDir(uid), eviction.EtcHostsFile)
}

// maxHostnameLen is the longest hostname the kernel takes (64 bytes with
// the terminating NUL).
const maxHostnameLen = 63

// podHostnameAndDomain are the pod's hostname and domain, as upstream's
// GeneratePodHostNameAndDomain (HostnameOverride GA): spec.hostnameOverride
// with no domain; else spec.hostname, else the pod's name, with the
// domain <subdomain>.<namespace>.svc.<clusterDomain> for a pod with a
// subdomain (--cluster-domain; with none, as upstream's, the domain ends
// in "svc."). The hostname is cut to 63 characters with no trailing '-'
// or '.'. The API server validated them.
func podHostnameAndDomain(pod *v1.Pod, clusterDomain string) (hostname, domain string) {
	hostname = podUncutHostname(pod)
	if len(hostname) > maxHostnameLen {
		hostname = strings.TrimRight(hostname[:maxHostnameLen], "-.")
	}
	if pod.Spec.Subdomain != "" && pod.Spec.HostnameOverride == nil {
		domain = fmt.Sprintf("%s.%s.svc.%s", pod.Spec.Subdomain, pod.Namespace, clusterDomain)
	}
	return hostname, domain
}

// podUncutHostname is pod's hostname before podHostnameAndDomain cuts it
// to maxHostnameLen: spec.hostnameOverride, else spec.hostname, else the
// pod's name. Pure.
func podUncutHostname(pod *v1.Pod) string {
	switch {
	case pod.Spec.HostnameOverride != nil:
		return *pod.Spec.HostnameOverride
	case pod.Spec.Hostname != "":
		return pod.Spec.Hostname
	default:
		return pod.Name
	}
}

// hostsFileContent is the managed hosts file of pod whose IPs are ips (a
// host-network pod's: nodeHosts, the node's hosts file, instead), on a
// node of cluster domain clusterDomain. Pure.
func hostsFileContent(pod *v1.Pod, ips []string, nodeHosts []byte, clusterDomain string) []byte {
	var b bytes.Buffer
	if pod.Spec.HostNetwork {
		b.WriteString(managedHostsHeaderWithHostNetwork)
		b.Write(nodeHosts)
	} else {
		b.WriteString(managedHostsHeader)
		b.WriteString("127.0.0.1\tlocalhost\n")
		b.WriteString("::1\tlocalhost ip6-localhost ip6-loopback\n")
		b.WriteString("fe00::0\tip6-localnet\n")
		b.WriteString("fe00::0\tip6-mcastprefix\n")
		b.WriteString("fe00::1\tip6-allnodes\n")
		b.WriteString("fe00::2\tip6-allrouters\n")
		hostname, domain := podHostnameAndDomain(pod, clusterDomain)
		for _, ip := range ips {
			if domain != "" {
				fmt.Fprintf(&b, "%s\t%s.%s\t%s\n", ip, hostname, domain, hostname)
			} else {
				fmt.Fprintf(&b, "%s\t%s\n", ip, hostname)
			}
		}
	}
	if len(pod.Spec.HostAliases) > 0 {
		b.WriteString("\n# Entries added by HostAliases.\n")
		for _, a := range pod.Spec.HostAliases {
			fmt.Fprintf(&b, "%s\t%s\n", a.IP, strings.Join(a.Hostnames, "\t"))
		}
	}
	return b.Bytes()
}

// mountsEtcHosts reports whether container c gets the managed hosts
// file, as upstream's shouldMountHostsFile and makeMounts: the pod is in
// the node's network or has an IP, and c mounts nothing on /etc/hosts.
func mountsEtcHosts(pod *v1.Pod, c *v1.Container, ips []string) bool {
	if !pod.Spec.HostNetwork && len(ips) == 0 {
		return false
	}
	for _, vm := range c.VolumeMounts {
		if vm.MountPath == etcHostsContainerPath {
			return false
		}
	}
	return true
}

// etcHostsMount writes pod's managed hosts file for container c, the
// pod's IPs ip (primary, "" for none) and moreIPs, and is its mount; nil
// where c gets none (a simulated node's containers never do).
func (k *Kubelet) etcHostsMount(pod *v1.Pod, c *v1.Container, ip string, moreIPs []string) (*runtimeapi.Mount, error) {
	if k.rt.Type() == "sim" {
		return nil, nil
	}
	var ips []string
	if ip != "" {
		ips = append([]string{ip}, moreIPs...)
	}
	if !mountsEtcHosts(pod, c, ips) {
		return nil, nil
	}
	var nodeHosts []byte
	if pod.Spec.HostNetwork {
		var err error
		if nodeHosts, err = os.ReadFile(nodeHostsFile); err != nil {
			return nil, fmt.Errorf("reading the node's hosts file for pod %s/%s: %w", pod.Namespace, pod.Name, err)
		}
	}
	path := k.etcHostsPath(pod.UID)
	if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
		return nil, fmt.Errorf("writing the hosts file of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	if err := os.WriteFile(path, hostsFileContent(pod, ips, nodeHosts, k.cfg.ClusterDomain), 0o644); err != nil {
		return nil, fmt.Errorf("writing the hosts file of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	// WriteFile's mode is the umask's to cut; the file is 0644 whatever it is.
	if err := os.Chmod(path, 0o644); err != nil {
		return nil, fmt.Errorf("writing the hosts file of pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	return &runtimeapi.Mount{ContainerPath: etcHostsContainerPath, HostPath: path, SelinuxRelabel: true}, nil
}
