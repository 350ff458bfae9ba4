package registry

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// A service's clusterIPs, externalIPs and loadBalancerSourceRanges (and
// the legacy source-ranges annotation) are legacy IP/CIDR fields checked
// as upstream 1.37's ValidateService with StrictIPCIDRValidation on
// (KEP-4858): leading zeros, IPv4-mapped IPv6 and CIDRs with host bits set
// are refused on create; on update a value the stored service already had
// in the field may stay; non-standard values get upstream's warnings
// (GetWarningsForService), loadBalancerIP included though it is not
// validated.
func TestServiceIPsAsUpstream(t *testing.T) {
	svcs := find(t, corev1.SchemeGroupVersion, "services")
	lb := func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeLoadBalancer }
	cases := []struct {
		name     string
		mutate   func(*corev1.Service)
		errs     []string
		warnings []string
	}{
		{"canonical", func(s *corev1.Service) {
			lb(s)
			s.Spec.ClusterIP, s.Spec.ExternalIPs, s.Spec.LoadBalancerSourceRanges = "10.96.0.10", []string{"192.0.2.1"}, []string{"10.0.0.0/8", " 192.168.0.0/16 "}
		}, nil, nil},
		{"clusterIP with leading zeros", func(s *corev1.Service) { s.Spec.ClusterIP = "10.96.0.010" },
			[]string{`spec.clusterIPs[0]: Invalid value: "10.96.0.010": must not have leading 0s`}, nil},
		{"IPv4-mapped IPv6 clusterIP", func(s *corev1.Service) { s.Spec.ClusterIP = "::ffff:10.96.0.10" },
			[]string{`spec.clusterIPs[0]: Invalid value: "::ffff:10.96.0.10": must not be an IPv4-mapped IPv6 address`}, nil},
		{"non-canonical IPv6 clusterIP", func(s *corev1.Service) { s.Spec.ClusterIP = "fd00:0:0:0::10" },
			nil, []string{`spec.clusterIPs[0]: IPv6 address "fd00:0:0:0::10" should be in RFC 5952 canonical format ("fd00::10")`}},
		{"externalIP with leading zeros", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"192.0.2.1", "192.000.002.002"} },
			[]string{`spec.externalIPs[1]: Invalid value: "192.000.002.002": must not have leading 0s`}, nil},
		{"IPv4-mapped IPv6 externalIP", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"::ffff:192.0.2.1"} },
			[]string{`spec.externalIPs[0]: Invalid value: "::ffff:192.0.2.1": must not be an IPv4-mapped IPv6 address`}, nil},
		{"non-canonical IPv6 externalIP", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"2001:DB8::1"} },
			nil, []string{`spec.externalIPs[0]: IPv6 address "2001:DB8::1" should be in RFC 5952 canonical format ("2001:db8::1")`}},
		{"externalIP in a special range, as an endpoint's", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"239.1.1.1", "224.0.0.5"} },
			[]string{`spec.externalIPs[1]: Invalid value: "224.0.0.5": may not be in the link-local multicast range (224.0.0.0/24, ff02::/10)`}, nil},
		{"loadBalancerIP is not validated, only warned of", func(s *corev1.Service) { lb(s); s.Spec.LoadBalancerIP = "2001:db8:0:0::5" },
			nil, []string{`spec.loadBalancerIP: IPv6 address "2001:db8:0:0::5" should be in RFC 5952 canonical format ("2001:db8::5")`}},
		{"source range with host bits", func(s *corev1.Service) { lb(s); s.Spec.LoadBalancerSourceRanges = []string{"192.168.1.5/24"} },
			[]string{`spec.LoadBalancerSourceRanges[0]: Invalid value: "192.168.1.5/24": must not have bits set beyond the prefix length`}, nil},
		{"source range with leading zeros", func(s *corev1.Service) { lb(s); s.Spec.LoadBalancerSourceRanges = []string{"010.0.0.0/8"} },
			[]string{`spec.LoadBalancerSourceRanges[0]: Invalid value: "010.0.0.0/8": must not have leading 0s in IP or prefix length`}, nil},
		{"non-canonical IPv6 source range", func(s *corev1.Service) { lb(s); s.Spec.LoadBalancerSourceRanges = []string{"2001:db8:0:0::/64"} },
			nil, []string{`spec.loadBalancerSourceRanges[0]: IPv6 CIDR value "2001:db8:0:0::/64" should be in RFC 5952 canonical format ("2001:db8::/64")`}},
		{"source-ranges annotation with host bits", func(s *corev1.Service) {
			lb(s)
			s.Annotations = map[string]string{corev1.AnnotationLoadBalancerSourceRangesKey: "10.0.0.0/8, 192.168.1.5/24"}
		}, []string{`metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Invalid value: "192.168.1.5/24": must not have bits set beyond the prefix length`}, nil},
		{"source-ranges annotation only for LoadBalancers", func(s *corev1.Service) {
			s.Annotations = map[string]string{corev1.AnnotationLoadBalancerSourceRangesKey: "10.0.0.0/8"}
		}, []string{"metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Forbidden: may only be used when `type` is 'LoadBalancer'"}, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			s := validService()
			tc.mutate(s)
			svcs.Strategy.Default(s)
			ctx, w := request.WithWarnings(context.Background())
			svcs.Strategy.PrepareForCreate(ctx, s)
			var got []string
			for _, e := range svcs.Strategy.Validate(ctx, s) {
				got = append(got, e.Error())
			}
			if strings.Join(got, "\n") != strings.Join(tc.errs, "\n") {
				t.Errorf("create errors:\n got  %q\n want %q", got, tc.errs)
			}
			if strings.Join(w.List(), "\n") != strings.Join(tc.warnings, "\n") {
				t.Errorf("create warnings:\n got  %q\n want %q", w.List(), tc.warnings)
			}
		})
	}
}

// On update a legacy IP or CIDR the stored service already had may stay,
// even moved to another index (upstream's validOldIPs/validOldCIDRs), an
// unchanged source-ranges annotation is not checked again, and a new bad
// value is refused.
func TestServiceIPsUpdateKeepsOldValues(t *testing.T) {
	svcs := find(t, corev1.SchemeGroupVersion, "services")
	old := validService()
	old.Spec.Type = corev1.ServiceTypeLoadBalancer
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.96.0.010", []string{"10.96.0.010"}
	old.Spec.ExternalIPs = []string{"192.000.002.001"}
	old.Spec.LoadBalancerSourceRanges = []string{" 192.168.1.5/24"}
	old.Annotations = map[string]string{corev1.AnnotationLoadBalancerSourceRangesKey: "10.0.0.5/8"}
	svcs.Strategy.Default(old)
	old.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	old.ResourceVersion = "1"
	update := func(mutate func(*corev1.Service)) []string {
		s := old.DeepCopy()
		s.Labels = map[string]string{"x": "y"}
		mutate(s)
		ctx := context.Background()
		svcs.Strategy.PrepareForUpdate(ctx, s, old)
		var got []string
		for _, e := range svcs.Strategy.ValidateUpdate(ctx, s, old) {
			got = append(got, e.Error())
		}
		return got
	}
	if got := update(func(*corev1.Service) {}); len(got) > 0 {
		t.Errorf("unchanged bad values: %q, want none", got)
	}
	if got := update(func(s *corev1.Service) {
		s.Spec.ExternalIPs = []string{"192.0.2.9", "192.000.002.001"}
		s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "192.168.1.5/24 "}
	}); len(got) > 0 {
		t.Errorf("moved bad values: %q, want none", got)
	}
	want := []string{
		`spec.externalIPs[1]: Invalid value: "192.000.002.002": must not have leading 0s`,
		`spec.LoadBalancerSourceRanges[1]: Invalid value: "192.168.2.5/24": must not have bits set beyond the prefix length`,
	}
	if got := update(func(s *corev1.Service) {
		s.Spec.ExternalIPs = append(s.Spec.ExternalIPs, "192.000.002.002")
		s.Spec.LoadBalancerSourceRanges = append(s.Spec.LoadBalancerSourceRanges, "192.168.2.5/24")
	}); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("new bad values:\n got  %q\n want %q", got, want)
	}
	s := old.DeepCopy()
	s.Spec.LoadBalancerSourceRanges = nil
	o := s.DeepCopy()
	s.Annotations = map[string]string{corev1.AnnotationLoadBalancerSourceRangesKey: "10.0.0.6/8"}
	var got []string
	for _, e := range svcs.Strategy.ValidateUpdate(context.Background(), s, o) {
		got = append(got, e.Error())
	}
	if want := []string{`metadata.annotations[service.beta.kubernetes.io/load-balancer-source-ranges]: Invalid value: "10.0.0.6/8": must not have bits set beyond the prefix length`}; strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("changed annotation:\n got  %q\n want %q", got, want)
	}
}

// A services/status write checks status.loadBalancer.ingress[].ip as a
// legacy IP field (an ip the stored status had may stay) and warns of a
// non-canonical one at upstream's path (the ingress entry, not .ip).
func TestServiceStatusIngressIPsAsUpstream(t *testing.T) {
	svcs := find(t, corev1.SchemeGroupVersion, "services")
	old := validService()
	old.Spec.Type = corev1.ServiceTypeLoadBalancer
	svcs.Strategy.Default(old)
	old.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "192.000.002.001"}}
	write := func(ips ...string) ([]string, []string) {
		s := old.DeepCopy()
		s.Status.LoadBalancer.Ingress = nil
		for _, ip := range ips {
			s.Status.LoadBalancer.Ingress = append(s.Status.LoadBalancer.Ingress, corev1.LoadBalancerIngress{IP: ip})
		}
		ctx, w := request.WithWarnings(context.Background())
		svcs.Status.PrepareForUpdate(ctx, s, old)
		var got []string
		for _, e := range svcs.Status.ValidateUpdate(ctx, s, old) {
			got = append(got, e.Error())
		}
		return got, w.List()
	}
	if errs, _ := write("192.0.2.7", "192.000.002.001"); len(errs) > 0 {
		t.Errorf("kept bad ip: %q, want none", errs)
	}
	errs, _ := write("::ffff:192.0.2.7")
	if want := `status.loadBalancer.ingress[0].ip: Invalid value: "::ffff:192.0.2.7": must not be an IPv4-mapped IPv6 address`; strings.Join(errs, "\n") != want {
		t.Errorf("new IPv4-mapped ip: %q, want %q", errs, want)
	}
	errs, warnings := write("2001:db8:0:0::7")
	if want := `status.loadBalancer.ingress[0]: IPv6 address "2001:db8:0:0::7" should be in RFC 5952 canonical format ("2001:db8::7")`; len(errs) > 0 || strings.Join(warnings, "\n") != want {
		t.Errorf("non-canonical ip: errors %q, warnings %q, want warning %q", errs, warnings, want)
	}
}
