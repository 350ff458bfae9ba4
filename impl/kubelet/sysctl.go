package kubelet

// The kubelet's sysctl admission, as upstream's pkg/kubelet/sysctl
// (safe_sysctls.go, allowlist.go; registered as a pod admit handler by
// NewMainKubelet after the eviction manager's and before the resource
// fit): a pod may set in spec.securityContext.sysctls only the safe
// sysctls its node's kernel namespaces and those the node's
// --allowed-unsafe-sysctls allow, and not a network sysctl beside
// hostNetwork nor an IPC one beside hostIPC. Anything else fails the pod
// at admission, reason SysctlForbidden.

import (
	"fmt"
	"os"
	"regexp"
	"strings"

	v1 "k8s.io/api/core/v1"
	utilsysctl "k8s.io/component-helpers/node/util/sysctl"
)

// ReasonSysctlForbidden is the reason of a pod refused for its sysctls.
const ReasonSysctlForbidden = "SysctlForbidden"

// safeSysctl is a sysctl upstream calls safe (namespaced, and isolated
// from the node and other pods) and the kernel (major.minor) that first
// namespaced it; 0.0 for those namespaced on every kernel the kubelet runs
// on.
type safeSysctl struct {
	name         string
	major, minor int
}

// safeSysctls is upstream 1.37's safe list with its kernel versions
// (pkg/util/kernel's *NamespacedKernelVersion constants; the last two
// added in 1.37).
var safeSysctls = []safeSysctl{
	{name: "kernel.shm_rmid_forced"},
	{name: "net.ipv4.ip_local_port_range"},
	{name: "net.ipv4.tcp_syncookies"},
	{name: "net.ipv4.ping_group_range"},
	{name: "net.ipv4.ip_unprivileged_port_start"},
	{name: "net.ipv4.ip_local_reserved_ports", major: 3, minor: 16},
	{name: "net.ipv4.tcp_keepalive_time", major: 4, minor: 5},
	{name: "net.ipv4.tcp_fin_timeout", major: 4, minor: 6},
	{name: "net.ipv4.tcp_keepalive_intvl", major: 4, minor: 5},
	{name: "net.ipv4.tcp_keepalive_probes", major: 4, minor: 5},
	{name: "net.ipv4.tcp_rmem", major: 4, minor: 15},
	{name: "net.ipv4.tcp_wmem", major: 4, minor: 15},
	{name: "net.ipv4.tcp_slow_start_after_idle", major: 4, minor: 15},
	{name: "net.ipv4.tcp_notsent_lowat", major: 4, minor: 6},
}

// SafeSysctls are the safe sysctls of a node whose kernel release (uname
// -r) is release, as upstream's SafeSysctlAllowlist: those of every
// kernel, and each newer one whose kernel the release is at least
// (dropped lists the others). A release that does not read as a kernel
// version (upstream's GetVersion error) has only those of every kernel.
func SafeSysctls(release string) (safe, dropped []string) {
	for _, s := range safeSysctls {
		if s.major == 0 || kernelAtLeast(release, s.major, s.minor) {
			safe = append(safe, s.name)
		} else {
			dropped = append(dropped, s.name)
		}
	}
	return safe, dropped
}

// procSysKernelOSRelease is where Linux reports the running kernel's
// release, where upstream's kernel.GetVersion reads it.
const procSysKernelOSRelease = "/proc/sys/kernel/osrelease"

// hostKernelRelease is the host's kernel release, "" if it cannot be read.
func hostKernelRelease() string {
	b, err := os.ReadFile(procSysKernelOSRelease)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

// sysctlPatternFmt is what a sysctl pattern of --allowed-unsafe-sysctls
// must match (upstream's policy validation SysctlContainSlashPatternFmt):
// dot- or slash-separated segments of lower-case letters, digits, '-' and
// '_', the last possibly ending in '*'; at most sysctlMaxLength characters.
const (
	sysctlSegmentFmt        = "[a-z0-9]([-_a-z0-9]*[a-z0-9])?"
	sysctlPatternSegmentFmt = "([a-z0-9][-_a-z0-9]*)?[a-z0-9*]"
	sysctlPatternFmt        = "(" + sysctlSegmentFmt + "[\\./])*" + sysctlPatternSegmentFmt
	sysctlMaxLength         = 253
)

var sysctlPatternRegexp = regexp.MustCompile("^" + sysctlPatternFmt + "$")

// sysctlAllowlist is the sysctls a node admits, by name and by prefix (a
// pattern ending in '*'), each with the kernel namespace it is in.
type sysctlAllowlist struct {
	names    map[string]utilsysctl.Namespace
	prefixes map[string]utilsysctl.Namespace
}

// newSysctlAllowlist reads the node's allowed sysctls and sysctl patterns
// (ending in '*'): the safe ones and --allowed-unsafe-sysctls', as
// upstream's NewAllowlist. Names may be written with '/' for '.'. A
// pattern that is no sysctl name, or one of no namespace the kernel is
// known to keep per pod (net.*, the IPC kernel.shm*, kernel.msg*,
// kernel.sem and fs.mqueue.*, kernel.domainname, user.*), is an error,
// with upstream's messages.
func newSysctlAllowlist(patterns []string) (*sysctlAllowlist, error) {
	a := &sysctlAllowlist{names: map[string]utilsysctl.Namespace{}, prefixes: map[string]utilsysctl.Namespace{}}
	for _, p := range patterns {
		if len(p) > sysctlMaxLength || !sysctlPatternRegexp.MatchString(p) {
			return nil, fmt.Errorf("sysctl %q must have at most %d characters and match regex %s", p, sysctlMaxLength, sysctlPatternFmt)
		}
		ns, nameOrPrefix, prefixed := utilsysctl.GetNamespace(p)
		if ns == utilsysctl.UnknownNamespace {
			return nil, fmt.Errorf("the sysctls %q are not known to be namespaced", nameOrPrefix)
		}
		if prefixed {
			a.prefixes[nameOrPrefix] = ns
		} else {
			a.names[nameOrPrefix] = ns
		}
	}
	return a, nil
}

// check is nil if the pod may set the sysctl name: allowed by name or by
// a prefix, and not in the network namespace beside hostNetwork nor the
// IPC one beside hostIPC (the pod shares the host's then), as upstream's
// validateSysctl.
func (a *sysctlAllowlist) check(name string, hostNet, hostIPC bool) error {
	name = utilsysctl.NormalizeName(name)
	ns, found := a.names[name]
	if !found {
		for p, pns := range a.prefixes {
			// Every prefix a name has is of the same namespace (the
			// namespace a prefix is known by is its own prefix's).
			if strings.HasPrefix(name, p) {
				ns, found = pns, true
				break
			}
		}
	}
	switch {
	case !found:
		return fmt.Errorf("%q not allowlisted", name)
	case ns == utilsysctl.IPCNamespace && hostIPC, ns == utilsysctl.NetNamespace && hostNet:
		return fmt.Errorf("%q not allowed with host %s enabled", name, ns)
	}
	return nil
}

// admit decides whether the node of allowlist a admits the pod for
// its sysctls (spec.securityContext.sysctls), in order, as upstream's
// sysctl admit handler: refused, reason SysctlForbidden, message "Pod was
// rejected: forbidden sysctl: "<name>" not allowlisted" or "... not
// allowed with host Net enabled" (IPC for hostIPC).
func (a *sysctlAllowlist) admit(pod *v1.Pod) (ok bool, reason, message string) {
	sc := pod.Spec.SecurityContext
	if sc == nil {
		return true, "", ""
	}
	for _, s := range sc.Sysctls {
		if err := a.check(s.Name, pod.Spec.HostNetwork, pod.Spec.HostIPC); err != nil {
			return false, ReasonSysctlForbidden, "forbidden sysctl: " + err.Error()
		}
	}
	return true, "", ""
}
