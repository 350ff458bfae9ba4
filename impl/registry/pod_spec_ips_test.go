package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// A pod's spec.dnsConfig.nameservers and spec.hostAliases[].ip are legacy
// IP fields checked as upstream 1.37 (KEP-4858, StrictIPCIDRValidation on):
// leading zeros and IPv4-mapped IPv6 are refused, a non-canonical IPv6
// address is accepted with a warning naming its canonical form.
func TestPodSpecIPsAsUpstream(t *testing.T) {
	r := find(t, coreV1, "pods")
	cases := []struct {
		name     string
		mutate   func(*corev1.PodSpec)
		errs     []string
		warnings []string
	}{
		{"canonical nameservers", func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10", "fd00::10"}}
		}, nil, nil},
		{"nameserver with leading zeros", func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"010.0.0.10"}}
		}, []string{`spec.dnsConfig.nameservers[0]: Invalid value: "010.0.0.10": must not have leading 0s`}, nil},
		{"IPv4-mapped IPv6 nameserver", func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"::ffff:10.0.0.10"}}
		}, []string{`spec.dnsConfig.nameservers[0]: Invalid value: "::ffff:10.0.0.10": must not be an IPv4-mapped IPv6 address`}, nil},
		{"non-canonical IPv6 nameserver", func(s *corev1.PodSpec) {
			s.DNSConfig = &corev1.PodDNSConfig{Nameservers: []string{"10.0.0.10", "FD00:0:0:0::10"}}
		}, nil, []string{`spec.dnsConfig.nameservers[1]: IPv6 address "FD00:0:0:0::10" should be in RFC 5952 canonical format ("fd00::10")`}},
		{"host alias with leading zeros", func(s *corev1.PodSpec) {
			s.HostAliases = []corev1.HostAlias{{IP: "10.0.0.1", Hostnames: []string{"a"}}, {IP: "192.168.000.001", Hostnames: []string{"b"}}}
		}, []string{`spec.hostAliases[1].ip: Invalid value: "192.168.000.001": must not have leading 0s`}, nil},
		{"IPv4-mapped IPv6 host alias", func(s *corev1.PodSpec) {
			s.HostAliases = []corev1.HostAlias{{IP: "::ffff:192.168.0.1", Hostnames: []string{"a"}}}
		}, []string{`spec.hostAliases[0].ip: Invalid value: "::ffff:192.168.0.1": must not be an IPv4-mapped IPv6 address`}, nil},
		{"non-canonical IPv6 host alias", func(s *corev1.PodSpec) {
			s.HostAliases = []corev1.HostAlias{{IP: "2001:db8:0:0:0:0:0:1", Hostnames: []string{"a"}}}
		}, nil, []string{`spec.hostAliases[0].ip: IPv6 address "2001:db8:0:0:0:0:0:1" should be in RFC 5952 canonical format ("2001:db8::1")`}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := newPod("p")
			tc.mutate(&p.Spec)
			defaultPod(p)
			ctx, w := request.WithWarnings(context.Background())
			var got []string
			for _, e := range r.Strategy.Validate(ctx, p) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("create errors:\n got  %q\n want %q", got, tc.errs)
			}
			if strings.Join(w.List(), "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("create warnings:\n got  %q\n want %q", w.List(), tc.warnings)
			}
			if len(tc.errs) > 0 {
				return
			}
			// An update (here of a label) gets no warnings: upstream's
			// podStrategy.WarningsOnUpdate returns none (pods are updated
			// often, mostly by controllers).
			upd := p.DeepCopy()
			upd.Labels = map[string]string{"x": "y"}
			ctx, w = request.WithWarnings(context.Background())
			r.Strategy.PrepareForUpdate(ctx, upd, p)
			if errs := r.Strategy.ValidateUpdate(ctx, upd, p); len(errs) > 0 {
				t.Errorf("update errors: %v", errs)
			}
			if len(w.List()) != 0 {
				t.Errorf("update warnings %q, want none", w.List())
			}
		})
	}
}
