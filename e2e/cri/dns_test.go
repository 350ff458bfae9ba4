package cri

import (
	"strings"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
)

// TestPodResolvConf: the kubelet's DNS configuration reaches the pod's
// /etc/resolv.conf on containerd (CRI PodSandboxConfig.DnsConfig, which
// containerd writes): a dnsPolicy None pod's is its spec.dnsConfig
// (nameservers, searches and options), and a ClusterFirst pod on this
// kubelet, which has no --cluster-dns, falls back to Default (the node's
// file) with upstream's MissingClusterDNS warning on the pod.
func TestPodResolvConf(t *testing.T) {
	ns := newNamespace(t)
	none := podSpec("dns-none", "cat /etc/resolv.conf; sleep 3600")
	none.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	none.Spec.DNSPolicy = v1.DNSNone
	none.Spec.DNSConfig = &v1.PodDNSConfig{Nameservers: []string{"10.0.0.53"}, Searches: []string{"a.example", "b.example"},
		Options: []v1.PodDNSConfigOption{{Name: "ndots", Value: ptr("2")}, {Name: "edns0"}}}
	createPod(t, ns, none)
	cf := podSpec("dns-clusterfirst", "sleep 3600")
	cf.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	cf.Spec.DNSPolicy = v1.DNSClusterFirst
	createPod(t, ns, cf)
	waitPod(t, ns, none.Name, 90*time.Second, "Running", isRunning)
	waitPod(t, ns, cf.Name, 90*time.Second, "Running", isRunning)

	var logs string
	waitUntil(30*time.Second, func() bool {
		logs, _ = kubectl(t, "logs", "-n", ns, none.Name)
		return strings.Contains(logs, "nameserver")
	})
	for _, want := range []string{"nameserver 10.0.0.53\n", "search a.example b.example\n", "options ndots:2 edns0\n"} {
		if !strings.Contains(logs, want) {
			t.Errorf("/etc/resolv.conf of the None pod:\n%s\nwant the line %q", logs, want)
		}
	}
	if !waitUntil(30*time.Second, func() bool {
		for _, m := range podEvents(t, ns, "MissingClusterDNS") {
			if strings.HasPrefix(m, `pod: "dns-clusterfirst_`+ns+`(`) && strings.Contains(m, `kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.`) {
				return true
			}
		}
		return false
	}) {
		t.Errorf("MissingClusterDNS events %q", podEvents(t, ns, "MissingClusterDNS"))
	}
}
