package kubelet

import (
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
)

// TestSafeSysctls: the safe list depends on the kernel release as
// upstream's getSafeSysctlAllowlist: the five of every kernel always (and
// alone when the release does not read as a version), each newer one from
// the kernel that namespaced it.
func TestSafeSysctls(t *testing.T) {
	always := []string{"kernel.shm_rmid_forced", "net.ipv4.ip_local_port_range", "net.ipv4.tcp_syncookies", "net.ipv4.ping_group_range", "net.ipv4.ip_unprivileged_port_start"}
	for _, tc := range []struct {
		release string
		more    []string
	}{
		{"", nil},
		{"kubeproof", nil},
		{"3.10.0-1160.el7.x86_64", nil},
		{"3.18.0-957.27.2.el7.x86_64", []string{"net.ipv4.ip_local_reserved_ports"}},
		{"4.5.0", []string{"net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes"}},
		{"4.14.336", []string{"net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes", "net.ipv4.tcp_notsent_lowat"}},
		{"5.15.0-75-generic", []string{"net.ipv4.ip_local_reserved_ports", "net.ipv4.tcp_keepalive_time", "net.ipv4.tcp_fin_timeout", "net.ipv4.tcp_keepalive_intvl", "net.ipv4.tcp_keepalive_probes",
			"net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem", "net.ipv4.tcp_slow_start_after_idle", "net.ipv4.tcp_notsent_lowat"}},
	} {
		safe, dropped := SafeSysctls(tc.release)
		if want := append(slices.Clone(always), tc.more...); !slices.Equal(safe, want) {
			t.Errorf("%q: safe %q, want %q", tc.release, safe, want)
		}
		if len(safe)+len(dropped) != len(safeSysctls) {
			t.Errorf("%q: dropped %q", tc.release, dropped)
		}
	}
}

// TestNewSysctlAllowlist: --allowed-unsafe-sysctls takes sysctl names and
// prefixes ending in '*' ('/' for '.' too) of a namespace the kernel keeps
// per pod; anything else is refused with upstream's messages.
func TestNewSysctlAllowlist(t *testing.T) {
	const invalid = "must have at most 253 characters and match regex ([a-z0-9]([-_a-z0-9]*[a-z0-9])?[\\./])*([a-z0-9][-_a-z0-9]*)?[a-z0-9*]"
	for _, tc := range []struct {
		pattern, err string
	}{
		{"net.core.somaxconn", ""},
		{"net.*", ""},
		{"net/ipv4/conf/*", ""},
		{"kernel.msg*", ""},
		{"kernel.sem", ""},
		{"fs.mqueue.*", ""},
		{"kernel.domainname", ""},
		{"user.max_user_namespaces", ""},
		{"Net.core.somaxconn", `sysctl "Net.core.somaxconn" ` + invalid},
		{"net.*.foo", `sysctl "net.*.foo" ` + invalid},
		{"net..x", `sysctl "net..x" ` + invalid},
		{"net." + strings.Repeat("a", 250), `sysctl "net.` + strings.Repeat("a", 250) + `" ` + invalid},
		{"vm.swappiness", `the sysctls "vm.swappiness" are not known to be namespaced`},
		{"kernel.*", `the sysctls "kernel." are not known to be namespaced`},
		{"*", `the sysctls "" are not known to be namespaced`},
		{"net", `the sysctls "net" are not known to be namespaced`},
	} {
		_, err := newSysctlAllowlist([]string{tc.pattern})
		if got := errString(err); got != tc.err {
			t.Errorf("%q: %q, want %q", tc.pattern, got, tc.err)
		}
	}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

// TestAdmitSysctls: a pod is admitted with safe sysctls and those the
// node allows, by name or prefix, '/' or '.' separated; refused
// SysctlForbidden with upstream's message for the first other one, and
// for a network sysctl beside hostNetwork or an IPC one beside hostIPC
// (not a UTS one beside hostNetwork: upstream checks only those two).
func TestAdmitSysctls(t *testing.T) {
	safe, _ := SafeSysctls("6.8.0-31-generic")
	a, err := newSysctlAllowlist(append(safe, "net.core.*", "kernel.msgmax", "kernel.domainname"))
	if err != nil {
		t.Fatal(err)
	}
	old, _ := SafeSysctls("4.4.0")
	aOld, err := newSysctlAllowlist(old)
	if err != nil {
		t.Fatal(err)
	}
	pod := func(hostNet, hostIPC bool, names ...string) *v1.Pod {
		p := &v1.Pod{Spec: v1.PodSpec{HostNetwork: hostNet, HostIPC: hostIPC, SecurityContext: &v1.PodSecurityContext{}}}
		for _, n := range names {
			p.Spec.SecurityContext.Sysctls = append(p.Spec.SecurityContext.Sysctls, v1.Sysctl{Name: n, Value: "1"})
		}
		return p
	}
	const forbidden = "forbidden sysctl: "
	for _, tc := range []struct {
		name    string
		a       *sysctlAllowlist
		pod     *v1.Pod
		message string
	}{
		{"no security context", a, &v1.Pod{}, ""},
		{"no sysctls", a, pod(false, false), ""},
		{"safe", a, pod(false, false, "kernel.shm_rmid_forced", "net.ipv4.tcp_rmem"), ""},
		{"slash separated", a, pod(false, false, "net/ipv4/ip_local_port_range"), ""},
		{"unsafe", a, pod(false, false, "vm.swappiness"), forbidden + `"vm.swappiness" not allowlisted`},
		{"first offender", a, pod(false, false, "kernel.shm_rmid_forced", "net.ipv6.conf.all.forwarding", "vm.swappiness"), forbidden + `"net.ipv6.conf.all.forwarding" not allowlisted`},
		{"unsafe normalized in the message", a, pod(false, false, "net/ipv4/conf/eth0.100/rp_filter"), forbidden + `"net.ipv4.conf.eth0/100.rp_filter" not allowlisted`},
		{"allowed by prefix", a, pod(false, false, "net.core.somaxconn"), ""},
		{"allowed by name", a, pod(false, false, "kernel.msgmax"), ""},
		{"name is not a prefix", a, pod(false, false, "kernel.msgmaxx"), forbidden + `"kernel.msgmaxx" not allowlisted`},
		{"net beside hostNetwork", a, pod(true, false, "net.ipv4.ip_local_port_range"), forbidden + `"net.ipv4.ip_local_port_range" not allowed with host Net enabled`},
		{"net prefix beside hostNetwork", a, pod(true, false, "net.core.somaxconn"), forbidden + `"net.core.somaxconn" not allowed with host Net enabled`},
		{"ipc beside hostIPC", a, pod(false, true, "kernel.shm_rmid_forced"), forbidden + `"kernel.shm_rmid_forced" not allowed with host IPC enabled`},
		{"ipc beside hostNetwork", a, pod(true, false, "kernel.msgmax"), ""},
		{"net beside hostIPC", a, pod(false, true, "net.core.somaxconn"), ""},
		{"uts beside hostNetwork", a, pod(true, false, "kernel.domainname"), ""},
		{"too new for the kernel", aOld, pod(false, false, "net.ipv4.tcp_keepalive_time"), forbidden + `"net.ipv4.tcp_keepalive_time" not allowlisted`},
	} {
		ok, reason, message := tc.a.admit(tc.pod)
		if ok != (tc.message == "") || message != tc.message || (!ok && reason != ReasonSysctlForbidden) {
			t.Errorf("%s: %v %q %q", tc.name, ok, reason, message)
		}
	}
}

// TestSysctlAdmissionOnNode: a simulated node refuses a pod with an unsafe
// sysctl at admission (Failed, SysctlForbidden, upstream's message; no
// sandbox), runs one with a safe sysctl, and with --allowed-unsafe-sysctls
// allowing it runs the first; a pattern that is no sysctl is refused at
// start with upstream's message.
func TestSysctlAdmissionOnNode(t *testing.T) {
	withSysctl := func(name string) func(*v1.Pod) {
		return func(p *v1.Pod) {
			p.Spec.SecurityContext = &v1.PodSecurityContext{Sysctls: []v1.Sysctl{{Name: name, Value: "1024"}}}
		}
	}
	h := newHarness(t, func(c *Config) { c.KernelRelease = "6.8.0" })
	got := h.sync(h.create(h.pod("unsafe", withSysctl("net.core.somaxconn"))))
	if got.Status.Phase != v1.PodFailed || got.Status.Reason != "SysctlForbidden" ||
		got.Status.Message != `Pod was rejected: forbidden sysctl: "net.core.somaxconn" not allowlisted` {
		t.Fatalf("unsafe: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}
	if sb, _ := h.rt.Counts(); sb != 0 {
		t.Fatalf("sandboxes = %d, want none for a rejected pod", sb)
	}
	if got := h.sync(h.create(h.pod("safe", withSysctl("net.ipv4.tcp_keepalive_time")))); got.Status.Phase != v1.PodRunning {
		t.Fatalf("safe: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}

	h = newHarness(t, func(c *Config) { c.AllowedUnsafeSysctls = []string{"net.core.*"} })
	if got := h.sync(h.create(h.pod("unsafe", withSysctl("net.core.somaxconn")))); got.Status.Phase != v1.PodRunning {
		t.Fatalf("allowed unsafe: %s %q %q", got.Status.Phase, got.Status.Reason, got.Status.Message)
	}

	cfg := Config{NodeName: "n", AllowedUnsafeSysctls: []string{"net.core.somaxconn", "kernel.*"}}
	if err := cfg.setDefaults(); errString(err) != `failed to create kubelet: the sysctls "kernel." are not known to be namespaced` {
		t.Fatalf("setDefaults: %v", err)
	}
}
