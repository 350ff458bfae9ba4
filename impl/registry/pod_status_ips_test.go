package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// A pod /status write checks status.podIPs and status.hostIPs as upstream
// 1.37's validatePodIPs and validateHostIPs: each new IP as a legacy IP
// field with StrictIPCIDRValidation on (beta since 1.36; a non-canonical
// IPv6 address is accepted with a warning, leading zeros and IPv4-mapped
// IPv6 are not), an IP the stored pod already had may stay, more than one
// IP must be a dual-stack pair (so a repeated IP is refused by that rule),
// and hostIPs[0] must be hostIP. The status strategy warns of non-standard
// IPs as upstream's podStatusStrategy.WarningsOnUpdate.
func TestPodStatusIPsAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	old := defaultedPod(t, newPod("p"))
	old.Spec.NodeName = "node-1"
	old.Status.PodIP, old.Status.PodIPs = "10.0.0.1", []corev1.PodIP{{IP: "10.0.0.1"}}
	old.Status.HostIP, old.Status.HostIPs = "192.168.0.1", []corev1.HostIP{{IP: "192.168.0.1"}}
	type result struct {
		errs     []string // "<type> <field>: <detail>" as field.Error.Error()
		warnings []string
	}
	check := func(t *testing.T, old *corev1.Pod, mutate func(*corev1.PodStatus), want result) {
		t.Helper()
		p := old.DeepCopy()
		mutate(&p.Status)
		ctx, w := request.WithWarnings(context.Background())
		r.Status.PrepareForUpdate(ctx, p, old)
		errs := r.Status.ValidateUpdate(ctx, p, old)
		var got []string
		for _, e := range errs {
			got = append(got, e.Error())
		}
		if strings.Join(got, "\n") != strings.Join(want.errs, "\n") {
			t.Errorf("errors:\n got  %q\n want %q", got, want.errs)
		}
		if strings.Join(w.List(), "\n") != strings.Join(want.warnings, "\n") {
			t.Errorf("warnings:\n got  %q\n want %q", w.List(), want.warnings)
		}
	}
	podIPs := func(ips ...string) func(*corev1.PodStatus) {
		return func(s *corev1.PodStatus) {
			s.PodIP, s.PodIPs = ips[0], nil
			for _, ip := range ips {
				s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip})
			}
		}
	}
	hostIPs := func(hostIP string, ips ...string) func(*corev1.PodStatus) {
		return func(s *corev1.PodStatus) {
			s.HostIP, s.HostIPs = hostIP, nil
			for _, ip := range ips {
				s.HostIPs = append(s.HostIPs, corev1.HostIP{IP: ip})
			}
		}
	}
	const familyMsg = "may specify no more than one IP for each IP family"
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.PodStatus)
		want   result
	}{
		{"dual-stack pod IPs", podIPs("10.0.0.2", "fd00::2"), result{}},
		{"non-canonical IPv6 pod IP is a warning", podIPs("10.0.0.2", "fd00:0:0:0::2"), result{warnings: []string{
			`status.podIPs[1].ip: IPv6 address "fd00:0:0:0::2" should be in RFC 5952 canonical format ("fd00::2")`}}},
		{"pod IP with leading zeros", podIPs("010.0.0.2"), result{errs: []string{
			`status.podIPs[0]: Invalid value: "010.0.0.2": must not have leading 0s`}}},
		{"IPv4-mapped IPv6 pod IP", podIPs("::ffff:10.0.0.2"), result{errs: []string{
			`status.podIPs[0]: Invalid value: "::ffff:10.0.0.2": must not be an IPv4-mapped IPv6 address`}}},
		{"not an IP", podIPs("10.0.0.300"), result{errs: []string{
			`status.podIPs[0]: Invalid value: "10.0.0.300": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`}}},
		{"repeated pod IP", podIPs("10.0.0.2", "10.0.0.2"), result{errs: []string{
			`status.podIPs: Invalid value: [{"ip":"10.0.0.2"},{"ip":"10.0.0.2"}]: ` + familyMsg}}},
		{"two IPv4 pod IPs", podIPs("10.0.0.2", "10.0.0.3"), result{errs: []string{
			`status.podIPs: Invalid value: [{"ip":"10.0.0.2"},{"ip":"10.0.0.3"}]: ` + familyMsg}}},
		{"three pod IPs", podIPs("10.0.0.2", "fd00::2", "10.0.0.3"), result{errs: []string{
			`status.podIPs: Invalid value: [{"ip":"10.0.0.2"},{"ip":"fd00::2"},{"ip":"10.0.0.3"}]: ` + familyMsg}}},
		{"unparsable IP in a pair", podIPs("10.0.0.2", "nope"), result{errs: []string{
			`status.podIPs[1]: Invalid value: "nope": must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)`,
			`status.podIPs: Internal error: failed to check for dual stack with error:invalid IP[1]: nope`,
			`status.podIPs: Invalid value: [{"ip":"10.0.0.2"},{"ip":"nope"}]: ` + familyMsg}}},
		{"dual-stack host IPs", hostIPs("192.168.0.1", "192.168.0.1", "fd00::1"), result{}},
		{"hostIPs[0] is not hostIP", hostIPs("192.168.0.1", "192.168.0.2", "fd00::1"), result{errs: []string{
			"status.hostIPs[0].ip: Invalid value: \"192.168.0.2\": must be equal to `hostIP`"}}},
		{"host IP with leading zeros", hostIPs("192.168.000.1", "192.168.000.1"), result{errs: []string{
			`status.hostIPs[0]: Invalid value: "192.168.000.1": must not have leading 0s`}}},
		{"repeated host IP", hostIPs("192.168.0.1", "192.168.0.1", "192.168.0.1"), result{errs: []string{
			`status.hostIPs: Invalid value: [{"ip":"192.168.0.1"},{"ip":"192.168.0.1"}]: ` + familyMsg}}},
		{"non-canonical IPv6 host IP is a warning", hostIPs("fd00:0::1", "fd00:0::1"), result{warnings: []string{
			`status.hostIPs[0].ip: IPv6 address "fd00:0::1" should be in RFC 5952 canonical format ("fd00::1")`}}},
	} {
		t.Run(tc.name, func(t *testing.T) { check(t, old, tc.mutate, tc.want) })
	}

	// IPs the stored pod already had may stay, wherever they move to,
	// with a warning; a new invalid one beside them may not.
	stored := old.DeepCopy()
	podIPs("010.000.000.001")(&stored.Status)
	hostIPs("::ffff:192.168.0.1", "::ffff:192.168.0.1")(&stored.Status)
	const (
		podIPWarning  = `status.podIPs[0].ip: non-standard IP address "010.000.000.001" is invalid: use "10.0.0.1"`
		hostIPWarning = `status.hostIPs[0].ip: non-standard IP address "::ffff:192.168.0.1" is invalid: use "192.168.0.1"`
	)
	for _, tc := range []struct {
		name   string
		mutate func(*corev1.PodStatus)
		want   result
	}{
		{"unchanged", func(s *corev1.PodStatus) { s.Phase = corev1.PodRunning }, result{warnings: []string{podIPWarning, hostIPWarning}}},
		{"moved beside a new one", podIPs("fd00::2", "010.000.000.001"), result{warnings: []string{
			strings.Replace(podIPWarning, "podIPs[0]", "podIPs[1]", 1), hostIPWarning}}},
		{"beside a new invalid one", podIPs("010.000.000.001", "::ffff:5.6.7.8"), result{errs: []string{
			`status.podIPs[1]: Invalid value: "::ffff:5.6.7.8": must not be an IPv4-mapped IPv6 address`,
			`status.podIPs: Invalid value: [{"ip":"010.000.000.001"},{"ip":"::ffff:5.6.7.8"}]: ` + familyMsg}}},
		{"replaced by another invalid one", podIPs("010.000.000.002"), result{errs: []string{
			`status.podIPs[0]: Invalid value: "010.000.000.002": must not have leading 0s`}}},
	} {
		t.Run("stored invalid IPs: "+tc.name, func(t *testing.T) { check(t, stored, tc.mutate, tc.want) })
	}
}
