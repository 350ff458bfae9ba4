package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestPodSpecChecksAsUpstream: the pod spec fields upstream's ValidatePodSpec
// checks through validatePodDNSConfig, ValidateHostAliases,
// validateSchedulingGates and validateImagePullSecrets, with its messages
// and paths.
func TestPodSpecChecksAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	const dc = "spec.dnsConfig"
	cases := []struct {
		name    string
		mutate  func(s *corev1.PodSpec)
		want    []string
		details []string
	}{
		{"dnsPolicy None without dnsConfig", func(s *corev1.PodSpec) { s.DNSPolicy = corev1.DNSNone },
			[]string{required + " " + dc}, []string{dc + ": Required value: must provide `dnsConfig` when `dnsPolicy` is None"}},
		{"dnsPolicy None without nameservers stops there", func(s *corev1.PodSpec) {
			s.DNSPolicy = corev1.DNSNone
			s.DNSConfig = &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{}}}
		}, []string{required + " " + dc + ".nameservers"}, []string{dc + ".nameservers: Required value: must provide at least one DNS nameserver when `dnsPolicy` is None"}},
		{"option without name", func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Options: []corev1.PodDNSConfigOption{{Value: ptr("2")}}}
		}, []string{required + " " + dc + ".options[0]"}, []string{dc + ".options[0]: Required value: must not be empty"}},
		{"legacy nameserver and host alias forms (StrictIPCIDRValidation on since 1.36)", func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"010.000.000.001", "FE80:0:0:0:0:0:0:0ABC", "::ffff:1.2.3.4"}}
			s.HostAliases = []corev1.HostAlias{{IP: "192.168.001.010", Hostnames: []string{"db"}}}
		}, []string{invalid + " " + dc + ".nameservers[0]", invalid + " " + dc + ".nameservers[2]", invalid + " spec.hostAliases[0].ip"},
			[]string{dc + `.nameservers[0]: Invalid value: "010.000.000.001": must not have leading 0s`,
				dc + `.nameservers[2]: Invalid value: "::ffff:1.2.3.4": must not be an IPv4-mapped IPv6 address`,
				`spec.hostAliases[0].ip: Invalid value: "192.168.001.010": must not have leading 0s`}},
		{"searches relaxed", func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Searches: []string{".", "_srv.example.com.", "svc.cluster.local"}}
		}, nil, nil},
		{"search not a subdomain", func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Searches: []string{"ok.example", "Bad.Example."}}
		}, []string{invalid + " " + dc + ".searches[1]"}, []string{dc + `.searches[1]: Invalid value: "Bad.Example": a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '_', '-' or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex used for validation is '_?[a-z0-9]([-_a-z0-9]*[a-z0-9])?(\._?[a-z0-9]([-_a-z0-9]*[a-z0-9])?)*')`}},
		{"search list too long", func(s *corev1.PodSpec) {
			long := strings.Repeat("a", 63) + "." + strings.Repeat("b", 63) + "." + strings.Repeat("c", 63) // 191 characters
			s.DNSConfig = &corev1.PodDNSConfig{Searches: []string{long, long, long, long, long, long, long, long, long, long, long}}
		}, []string{invalid + " " + dc + ".searches"}, nil},
		{"scheduling gates", func(s *corev1.PodSpec) {
			s.SchedulingGates = []corev1.PodSchedulingGate{{Name: "example.com/wait"}, {Name: "bad gate"}, {Name: "example.com/wait"}}
		}, []string{invalid + " spec.schedulingGates[1]", duplicate + " spec.schedulingGates[2]"}, nil},
		{"image pull secret without name", func(s *corev1.PodSpec) {
			s.ImagePullSecrets = []corev1.LocalObjectReference{{Name: "regcred"}, {}}
		}, nil, nil},
		{"negative grace period of a pod", func(s *corev1.PodSpec) { s.TerminationGracePeriodSeconds = ptr(int64(-5)) }, nil, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			tc.mutate(&p.Spec)
			defaultPod(p)
			errs := r.Strategy.Validate(context.Background(), p)
			wantErrors(t, errs, tc.want...)
			for _, d := range tc.details {
				wantError(t, errs, d)
			}
			if tc.name == "search list too long" && (len(errs) != 1 || errs[0].Detail != "must not have more than 2048 characters (including spaces) in the search list") {
				t.Errorf("search list error %v, want upstream's 2048 characters message", errs.ToAggregate())
			}
		})
	}
}

// TestNegativeGracePeriodAsUpstream: a pod's negative
// terminationGracePeriodSeconds becomes 1 on the way in (upstream's Pod
// conversion since 1.27), on create and on update; a workload template's is
// kept and accepted (upstream only warns).
func TestNegativeGracePeriodAsUpstream(t *testing.T) {
	p := newPod("p")
	p.Spec.TerminationGracePeriodSeconds = ptr(int64(-5))
	r := find(t, coreV1, "pods")
	r.Strategy.Default(p)
	if got := p.Spec.TerminationGracePeriodSeconds; got == nil || *got != 1 {
		t.Fatalf("pod terminationGracePeriodSeconds = %v, want 1", got)
	}
	zero := newPod("p")
	zero.Spec.TerminationGracePeriodSeconds = ptr(int64(0))
	r.Strategy.Default(zero)
	if got := zero.Spec.TerminationGracePeriodSeconds; *got != 0 {
		t.Fatalf("pod terminationGracePeriodSeconds 0 became %d", *got)
	}

	d := newDeployment()
	d.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr(int64(-5))
	dr := find(t, appsV1, "deployments")
	dr.Strategy.Default(d)
	if got := d.Spec.Template.Spec.TerminationGracePeriodSeconds; *got != -5 {
		t.Fatalf("template terminationGracePeriodSeconds = %d, want -5 kept", *got)
	}
	if errs := dr.Strategy.Validate(context.Background(), d); len(errs) != 0 {
		t.Fatalf("deployment with a negative template grace period refused: %v", errs)
	}
}
