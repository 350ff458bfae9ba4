package cri

import (
	"slices"
	"strconv"
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
// file) with upstream's MissingClusterDNS warning on the pod. A pod with
// setHostnameAsFQDN and a subdomain is named by its FQDN (this kubelet
// has no --cluster-domain: <hostname>.<subdomain>.<ns>.svc.), its
// /etc/hosts unchanged; one whose FQDN is over 64 characters gets no
// sandbox, with upstream's FailedCreatePodSandBox warning.
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
	fqdn := podSpec("dns-fqdn", "hostname; cat /etc/hosts; sleep 3600")
	fqdn.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	fqdn.Spec.Hostname, fqdn.Spec.Subdomain, fqdn.Spec.SetHostnameAsFQDN = "h", "s", ptr(true)
	createPod(t, ns, fqdn)
	long := podSpec("dns-fqdn-long", "sleep 3600")
	long.Spec.TerminationGracePeriodSeconds = ptr(int64(1))
	long.Spec.Hostname, long.Spec.Subdomain, long.Spec.SetHostnameAsFQDN = strings.Repeat("h", 40), "s", ptr(true)
	createPod(t, ns, long)
	waitPod(t, ns, none.Name, 90*time.Second, "Running", isRunning)
	waitPod(t, ns, cf.Name, 90*time.Second, "Running", isRunning)
	got := waitPod(t, ns, fqdn.Name, 90*time.Second, "Running", isRunning)

	name := "h.s." + ns + ".svc."
	var fqdnLogs string
	waitUntil(30*time.Second, func() bool {
		fqdnLogs, _ = kubectl(t, "logs", "-n", ns, fqdn.Name)
		return strings.Contains(fqdnLogs, "localhost")
	})
	if !strings.HasPrefix(fqdnLogs, name+"\n") || !strings.Contains(fqdnLogs, got.Status.PodIP+"\t"+name+"\th\n") {
		t.Errorf("hostname and /etc/hosts of the setHostnameAsFQDN pod:\n%s\nwant the hostname %q and the line %q", fqdnLogs, name, got.Status.PodIP+"\t"+name+"\th")
	}
	longFQDN := strings.Repeat("h", 40) + ".s." + ns + ".svc."
	wantFailure := "Failed to create pod sandbox: failed to construct FQDN from pod hostname and cluster domain, FQDN " + longFQDN +
		" is too long (64 characters is the max, " + strconv.Itoa(len(longFQDN)) + " characters requested)"
	if !waitUntil(30*time.Second, func() bool { return slices.Contains(podEvents(t, ns, "FailedCreatePodSandBox"), wantFailure) }) {
		t.Errorf("FailedCreatePodSandBox events %q, want %q", podEvents(t, ns, "FailedCreatePodSandBox"), wantFailure)
	}

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
