package kubelet

import (
	"bytes"
	"errors"
	"fmt"
	"net"
	"os"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	utilio "k8s.io/utils/io"
)

// The DNS resolver configuration of a pod's sandbox (CRI
// PodSandboxConfig.DnsConfig, which the runtime writes to the pod's
// /etc/resolv.conf), as upstream's kubelet DNS configurer (GetPodDNS in
// pkg/kubelet/network/dns): from the pod's dnsPolicy, the node's cluster
// DNS servers (--cluster-dns), cluster domain (--cluster-domain) and
// resolver file (--resolv-conf), then the pod's spec.dnsConfig appended,
// cut to the resolver's limits. podDNSConfig decides (pure);
// Kubelet.setPodDNS reads the node's file and records the events. Simulated
// nodes skip it (their sandboxes have no resolv.conf): their sandboxes
// carry spec.dnsConfig as it is.

// DefaultResolverConfig is --resolv-conf's default, upstream's.
const DefaultResolverConfig = "/etc/resolv.conf"

// Limits of a pod's resolver configuration, upstream's (the API
// server's validation constants, DNS1123SubdomainMaxLength for one path).
const (
	maxDNSNameservers     = 3
	maxDNSSearchPaths     = 32
	maxDNSSearchListChars = 2048
	maxDNSSearchPathLen   = 253
	// maxResolvConfLength is the most of the node's file read: 10 MiB.
	maxResolvConfLength = 10 << 20
)

// Event reasons of the DNS configuration, upstream's.
const (
	EventMissingClusterDNS = "MissingClusterDNS"
	EventDNSConfigForming  = "DNSConfigForming"
)

// dnsSettings are the node's DNS settings.
type dnsSettings struct {
	// clusterDNS are the cluster DNS servers (--cluster-dns), valid IPs.
	clusterDNS []string
	// clusterDomain is --cluster-domain ("" none).
	clusterDomain string
	// noResolvConf: --resolv-conf is "" (no host file).
	noResolvConf bool
	// nodeIPs are the node's IPs (their families pick the loopback
	// nameservers of noResolvConf).
	nodeIPs []string
}

// hostDNS is the node's resolver file, parsed (parseResolvConf).
type hostDNS struct {
	servers, searches, options []string
}

// dnsEvent is an event podDNSConfig asks for: on the Node when node, on
// the pod otherwise; always a Warning.
type dnsEvent struct {
	node            bool
	reason, message string
}

// podDNSConfig is the sandbox DNS config of pod on a node of settings s
// whose resolver file is host (ignored when s.noResolvConf), and the
// events to record, as upstream's GetPodDNS:
//
//   - dnsPolicy None: nothing but spec.dnsConfig;
//   - ClusterFirst (not in the host network), ClusterFirstWithHostNet, or
//     an unknown policy: the cluster DNS servers alone, the search path
//     <ns>.svc.<domain>, svc.<domain>, <domain> then the host's (without
//     repeats; the host's alone without a cluster domain), options
//     ndots:5. Without cluster DNS servers it falls back to Default with
//     the MissingClusterDNS warning on the Node and on the pod;
//   - Default, or ClusterFirst in the host network: the host file's
//     servers, searches and options; without a file (--resolv-conf ""),
//     a loopback nameserver per node IP family and the search path ".".
//
// spec.dnsConfig's nameservers and searches are then appended (without
// repeats) and its options merged by name, the pod's winning. At most 3
// nameservers are kept, and at most 32 search paths, none longer than
// 253 characters, the line at most 2048: each cut is a DNSConfigForming
// warning on the pod naming what was kept.
func podDNSConfig(pod *v1.Pod, s dnsSettings, host hostDNS) (*runtimeapi.DNSConfig, []dnsEvent) {
	var evs []dnsEvent
	cfg := &runtimeapi.DNSConfig{}
	if !s.noResolvConf {
		cfg.Servers = slices.Clone(host.servers)
		cfg.Searches = slices.Clone(host.searches)
		cfg.Options = slices.Clone(host.options)
	}
	cluster := true
	switch pod.Spec.DNSPolicy {
	case v1.DNSNone:
		cfg = &runtimeapi.DNSConfig{}
		cluster = false
	case v1.DNSDefault:
		cluster = false
	case v1.DNSClusterFirst:
		cluster = !pod.Spec.HostNetwork
	}
	// (An unknown policy, which the API server refuses, is ClusterFirst's,
	// as upstream's.)
	host1 := pod.Spec.DNSPolicy != v1.DNSNone && !cluster
	if cluster {
		if len(s.clusterDNS) > 0 {
			cfg.Servers = slices.Clone(s.clusterDNS)
			if s.clusterDomain != "" {
				d := s.clusterDomain
				cfg.Searches = uniqueStrings(append([]string{pod.Namespace + ".svc." + d, "svc." + d, d}, cfg.Searches...))
			}
			cfg.Options = []string{"ndots:5"}
		} else {
			msg := fmt.Sprintf("kubelet does not have ClusterDNS IP configured and cannot create Pod using %q policy. Falling back to %q policy.", v1.DNSClusterFirst, v1.DNSDefault)
			evs = append(evs,
				dnsEvent{node: true, reason: EventMissingClusterDNS, message: msg},
				dnsEvent{reason: EventMissingClusterDNS, message: fmt.Sprintf("pod: %q. %s", fmt.Sprintf("%s_%s(%s)", pod.Name, pod.Namespace, pod.UID), msg)})
			host1 = true
		}
	}
	if host1 && s.noResolvConf {
		cfg.Servers = nil
		for _, ip := range s.nodeIPs {
			if p := net.ParseIP(ip); p != nil && p.To4() == nil {
				cfg.Servers = append(cfg.Servers, "::1")
			} else {
				cfg.Servers = append(cfg.Servers, "127.0.0.1")
			}
		}
		if len(cfg.Servers) == 0 {
			cfg.Servers = []string{"127.0.0.1"}
		}
		cfg.Searches = []string{"."}
	}
	if dc := pod.Spec.DNSConfig; dc != nil {
		cfg.Servers = uniqueStrings(append(cfg.Servers, dc.Nameservers...))
		cfg.Searches = uniqueStrings(append(cfg.Searches, dc.Searches...))
		cfg.Options = mergeDNSOptions(cfg.Options, dc.Options)
	}
	if len(cfg.Servers) > maxDNSNameservers {
		cfg.Servers = cfg.Servers[:maxDNSNameservers]
		evs = append(evs, dnsEvent{reason: EventDNSConfigForming, message: "Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: " + strings.Join(cfg.Servers, " ")})
	}
	var cut bool
	cfg.Searches, cut = fitSearches(cfg.Searches)
	if cut {
		evs = append(evs, dnsEvent{reason: EventDNSConfigForming, message: "Search Line limits were exceeded, some search paths have been omitted, the applied search line is: " + strings.Join(cfg.Searches, " ")})
	}
	return cfg, evs
}

// fitSearches cuts a search path to the limits, as upstream's
// formDNSSearchFitsLimits: the first 32 paths, less those longer than 253
// characters, less the last ones while the space-joined line is longer
// than 2048; cut reports whether anything went.
func fitSearches(searches []string) (kept []string, cut bool) {
	if len(searches) > maxDNSSearchPaths {
		searches, cut = searches[:maxDNSSearchPaths], true
	}
	for _, s := range searches {
		if len(s) > maxDNSSearchPathLen {
			cut = true
			continue
		}
		kept = append(kept, s)
	}
	n := len(strings.Join(kept, " "))
	for n > maxDNSSearchListChars && len(kept) > 0 {
		n -= len(kept[len(kept)-1]) + 1
		kept, cut = kept[:len(kept)-1], true
	}
	if kept == nil && searches != nil {
		kept = []string{}
	}
	return kept, cut
}

// uniqueStrings is ss without repeats, first occurrences kept in order.
func uniqueStrings(ss []string) []string {
	var out []string
	for _, s := range ss {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// mergeDNSOptions merges the pod's options into existing ones ("name" or
// "name:value"), by name, the pod's winning, as upstream's
// mergeDNSOptions. Upstream's order is a map's (unspecified); here an
// option stays where its name first came.
func mergeDNSOptions(existing []string, pod []v1.PodDNSConfigOption) []string {
	out := []string{}
	set := func(name, opt string) {
		for i, o := range out {
			if n, _, _ := strings.Cut(o, ":"); n == name {
				out[i] = opt
				return
			}
		}
		out = append(out, opt)
	}
	for _, o := range existing {
		n, _, _ := strings.Cut(o, ":")
		set(n, o)
	}
	for _, o := range pod {
		opt := o.Name
		if o.Value != nil && *o.Value != "" {
			opt += ":" + *o.Value
		}
		set(o.Name, opt)
	}
	return out
}

// parseResolvConf parses a resolver file as upstream's parseResolvConf:
// "nameserver" lines accumulate (their first address each; one without is
// an error), the last "search" line wins (its paths without a trailing
// dot, "." dropped), "options" lines merge by name, later winning; "#"
// lines are comments.
func parseResolvConf(data []byte) (hostDNS, error) {
	h := hostDNS{servers: []string{}, searches: []string{}, options: []string{}}
	var errs []error
	for line := range bytes.Lines(data) {
		trimmed := strings.TrimSpace(string(line))
		if strings.HasPrefix(trimmed, "#") {
			continue
		}
		f := strings.Fields(trimmed)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "nameserver":
			if len(f) < 2 {
				errs = append(errs, errors.New("nameserver list is empty "))
				continue
			}
			h.servers = append(h.servers, f[1])
		case "search":
			h.searches = []string{}
			for _, s := range f[1:] {
				if s != "." {
					h.searches = append(h.searches, strings.TrimSuffix(s, "."))
				}
			}
		case "options":
			for _, o := range f[1:] {
				n, _, _ := strings.Cut(o, ":")
				if i := slices.IndexFunc(h.options, func(e string) bool { m, _, _ := strings.Cut(e, ":"); return m == n }); i >= 0 {
					h.options[i] = o
				} else {
					h.options = append(h.options, o)
				}
			}
		}
	}
	// One message for repeated ones, as upstream's aggregate of them says.
	return h, utilerrors.NewAggregate(errs)
}

// dnsSettings are the node's DNS settings of the kubelet's config.
func (c *Config) dnsSettings() dnsSettings {
	return dnsSettings{clusterDNS: c.clusterDNS, clusterDomain: c.ClusterDomain, noResolvConf: c.resolverConfig() == "", nodeIPs: []string{c.NodeIP}}
}

// resolverConfig is the node's resolver file (ResolverConfig; "" none).
func (c *Config) resolverConfig() string {
	if c.ResolverConfig == nil {
		return DefaultResolverConfig
	}
	return *c.ResolverConfig
}

// setPodDNS sets cfg's DnsConfig, pod's sandbox config's, to
// podDNSConfig's, reading the node's resolver file afresh as upstream
// does for each sandbox, and records its events. An unreadable or bad
// file fails the sandbox, as upstream's: the error is the file's own
// (os.Open's, naming the path, or the parse's), which the
// FailedCreatePodSandBox event quotes as upstream's does. A simulated
// node's sandbox keeps sandboxConfig's, spec.dnsConfig as it is: nothing
// is read, decided or recorded for it.
func (k *Kubelet) setPodDNS(pod *v1.Pod, cfg *runtimeapi.PodSandboxConfig) error {
	if k.rt.Type() == "sim" {
		return nil
	}
	s := k.cfg.dnsSettings()
	var host hostDNS
	if !s.noResolvConf {
		var err error
		if host, err = readResolvConf(k.cfg.resolverConfig()); err != nil {
			return err
		}
	}
	dns, evs := podDNSConfig(pod, s, host)
	for _, e := range evs {
		if e.node {
			k.nodeEvent(v1.EventTypeWarning, e.reason, e.message)
		} else {
			k.podEvent(pod, v1.EventTypeWarning, e.reason, "%s", e.message)
		}
	}
	cfg.DnsConfig = dns
	return nil
}

// readResolvConf reads and parses the resolver file at path (at most
// maxResolvConfLength of it); the error is the file's own (os.Open's,
// naming the path, or the parse's), as upstream's, whose events quote it.
func readResolvConf(path string) (hostDNS, error) {
	f, err := os.Open(path)
	if err != nil {
		return hostDNS{}, err
	}
	defer f.Close()
	data, err := utilio.ReadAtMost(f, maxResolvConfLength)
	if err != nil {
		return hostDNS{}, err
	}
	return parseResolvConf(data)
}

// EventCheckLimitsForResolvConf is the reason of the Node warning about
// the node's resolver file, upstream's.
const EventCheckLimitsForResolvConf = "CheckLimitsForResolvConf"

// resolvConfLimitsWarning is what upstream's CheckLimitsForResolvConf
// warns of the search paths searches of the node's resolver file path,
// on a node of cluster domain clusterDomain ("" when within the limits):
// more than 32 paths (29 with a cluster domain, whose own 3 come first in
// a ClusterFirst pod's), then a path longer than 253 characters, then a
// line longer than 2048; the first exceeded only. Pure.
func resolvConfLimitsWarning(path string, searches []string, clusterDomain string) string {
	limit := maxDNSSearchPaths
	if clusterDomain != "" {
		limit -= 3
	}
	if len(searches) > limit {
		return fmt.Sprintf("Resolv.conf file '%s' contains search line consisting of more than %d domains!", path, limit)
	}
	for _, s := range searches {
		if len(s) > maxDNSSearchPathLen {
			return fmt.Sprintf("Resolv.conf file %q contains a search path which length is more than allowed %d chars!", path, maxDNSSearchPathLen)
		}
	}
	if len(strings.Join(searches, " ")) > maxDNSSearchListChars {
		return fmt.Sprintf("Resolv.conf file '%s' contains search line which length is more than allowed %d chars!", path, maxDNSSearchListChars)
	}
	return ""
}

// checkLimitsForResolvConf checks the node's resolver file against the
// pod resolver's limits, as upstream's kubelet does once when its sync
// loop starts (Run), and records the CheckLimitsForResolvConf warning on
// the Node: resolvConfLimitsWarning's, or the file's open or parse error.
// Nothing without a file (--resolv-conf ""). A simulated node checks it
// too, as upstream checks whatever the runtime, though its pods' DNS
// configuration reads no file (setPodDNS).
func (k *Kubelet) checkLimitsForResolvConf() {
	path := k.cfg.resolverConfig()
	if path == "" {
		return
	}
	var msg string
	if host, err := readResolvConf(path); err != nil {
		msg = err.Error()
	} else {
		msg = resolvConfLimitsWarning(path, host.searches, k.cfg.ClusterDomain)
	}
	if msg != "" {
		k.log.Debug("Check limits for resolv.conf failed", "eventlog", msg)
		k.nodeEvent(v1.EventTypeWarning, EventCheckLimitsForResolvConf, msg)
	}
}
