package registry

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestInitServiceIPFamilies is the table of what kube-apiserver fills in
// or refuses for a service's IP families, by cluster: single-stack IPv4 or
// IPv6, dual-stack with either family primary.
func TestInitServiceIPFamilies(t *testing.T) {
	v4, v6 := corev1.IPv4Protocol, corev1.IPv6Protocol
	single, prefer, require := corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack
	type spec struct {
		typ       corev1.ServiceType
		selector  bool
		ips       []string
		fams      []corev1.IPFamily
		policy    corev1.IPFamilyPolicy
		noCluster bool // an ExternalName service
	}
	build := func(s spec) *corev1.Service {
		svc := &corev1.Service{Spec: corev1.ServiceSpec{Type: s.typ, ClusterIPs: s.ips, IPFamilies: s.fams}}
		if svc.Spec.Type == "" {
			svc.Spec.Type = corev1.ServiceTypeClusterIP
		}
		if len(s.ips) > 0 {
			svc.Spec.ClusterIP = s.ips[0]
		}
		if s.selector {
			svc.Spec.Selector = map[string]string{"app": "web"}
		}
		if s.policy != "" {
			svc.Spec.IPFamilyPolicy = ptr(s.policy)
		}
		return svc
	}
	for _, tc := range []struct {
		name      string
		cluster   []corev1.IPFamily
		old       *spec
		in        spec
		policy    corev1.IPFamilyPolicy
		fams      []corev1.IPFamily
		ips       []string
		wantError string // "path: message" part of the 422
	}{
		{name: "nothing asked: single-stack primary", cluster: []corev1.IPFamily{v4, v6}, in: spec{selector: true}, policy: single, fams: []corev1.IPFamily{v4}},
		{name: "nothing asked, IPv6 primary", cluster: []corev1.IPFamily{v6, v4}, in: spec{selector: true}, policy: single, fams: []corev1.IPFamily{v6}},
		{name: "PreferDualStack on dual-stack", cluster: []corev1.IPFamily{v6, v4}, in: spec{selector: true, policy: prefer}, policy: prefer, fams: []corev1.IPFamily{v6, v4}},
		{name: "PreferDualStack on single-stack", cluster: []corev1.IPFamily{v4}, in: spec{selector: true, policy: prefer}, policy: prefer, fams: []corev1.IPFamily{v4}},
		{name: "RequireDualStack on dual-stack", cluster: []corev1.IPFamily{v4, v6}, in: spec{typ: corev1.ServiceTypeLoadBalancer, selector: true, policy: require}, policy: require, fams: []corev1.IPFamily{v4, v6}},
		{name: "RequireDualStack on single-stack", cluster: []corev1.IPFamily{v4}, in: spec{selector: true, policy: require},
			wantError: `spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services`},
		{name: "secondary family first", cluster: []corev1.IPFamily{v4, v6}, in: spec{typ: corev1.ServiceTypeNodePort, selector: true, policy: require, fams: []corev1.IPFamily{v6}}, policy: require, fams: []corev1.IPFamily{v6, v4}},
		{name: "family not served", cluster: []corev1.IPFamily{v4}, in: spec{selector: true, fams: []corev1.IPFamily{v6}},
			wantError: `spec.ipFamilies[0]: Invalid value: "IPv6": not configured on this cluster`},
		{name: "families follow the addresses", cluster: []corev1.IPFamily{v4, v6}, in: spec{selector: true, ips: []string{"fd00::1"}}, policy: single, fams: []corev1.IPFamily{v6}, ips: []string{"fd00::1"}},
		{name: "address of a family not served", cluster: []corev1.IPFamily{v4}, in: spec{selector: true, ips: []string{"fd00::1"}},
			wantError: `spec.clusterIPs[0]: Invalid value: ["fd00::1"]: IPv6 is not configured on this cluster`},
		{name: "two addresses need a dual-stack policy", cluster: []corev1.IPFamily{v4, v6}, in: spec{selector: true, ips: []string{"10.0.0.1", "fd00::1"}},
			wantError: `spec.ipFamilyPolicy: Invalid value: "SingleStack": must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs are specified`},
		{name: "two families need a dual-stack policy", cluster: []corev1.IPFamily{v4, v6}, in: spec{selector: true, policy: single, fams: []corev1.IPFamily{v4, v6}},
			wantError: `must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families are specified`},
		{name: "bad input first", cluster: []corev1.IPFamily{v4, v6}, in: spec{selector: true, policy: prefer, ips: []string{"10.0.0.1", "10.0.0.2"}},
			wantError: `may specify no more than one IP for each IP family`},
		{name: "selectorless headless: every family, even single-stack", cluster: []corev1.IPFamily{v4}, in: spec{ips: []string{"None"}}, policy: require, fams: []corev1.IPFamily{v4, v6}, ips: []string{"None"}},
		{name: "selectorless headless, IPv6 asked", cluster: []corev1.IPFamily{v4}, in: spec{ips: []string{"None"}, fams: []corev1.IPFamily{v6}}, policy: require, fams: []corev1.IPFamily{v6, v4}, ips: []string{"None"}},
		{name: "selectorless headless SingleStack", cluster: []corev1.IPFamily{v6, v4}, in: spec{ips: []string{"None"}, policy: single}, policy: single, fams: []corev1.IPFamily{v6}, ips: []string{"None"}},
		{name: "headless with selector is as any service", cluster: []corev1.IPFamily{v4}, in: spec{selector: true, ips: []string{"None"}, policy: require},
			wantError: "this cluster is not configured for dual-stack services"},
		{name: "ExternalName untouched", cluster: []corev1.IPFamily{v4, v6}, in: spec{typ: corev1.ServiceTypeExternalName}},

		{name: "upgrade", cluster: []corev1.IPFamily{v4, v6},
			old: &spec{selector: true, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{"10.0.0.1"}},
			in:  spec{selector: true, policy: require, fams: []corev1.IPFamily{v4}, ips: []string{"10.0.0.1"}}, policy: require, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.1"}},
		{name: "downgrade keeps the first address and family", cluster: []corev1.IPFamily{v4, v6},
			old: &spec{selector: true, policy: require, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.1", "fd00::1"}},
			in:  spec{selector: true, policy: single, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.1", "fd00::1"}}, policy: single, fams: []corev1.IPFamily{v4}, ips: []string{"10.0.0.1"}},
		{name: "dropping the second address needs SingleStack", cluster: []corev1.IPFamily{v4, v6},
			old:       &spec{selector: true, policy: require, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.1", "fd00::1"}},
			in:        spec{selector: true, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.1"}},
			wantError: `spec.ipFamilyPolicy: Invalid value: "RequireDualStack": must be 'SingleStack' to release the secondary cluster IP`},
		{name: "update without policy keeps the stored one", cluster: []corev1.IPFamily{v4, v6},
			old: &spec{selector: true, policy: prefer, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.1", "fd00::1"}},
			in:  spec{selector: true, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.1", "fd00::1"}}, policy: prefer, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.1", "fd00::1"}},
		{name: "unchanged PreferDualStack on a cluster that lost a family", cluster: []corev1.IPFamily{v4},
			old: &spec{selector: true, policy: prefer, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.1", "fd00::1"}},
			in:  spec{selector: true, policy: prefer, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.1", "fd00::1"}}, policy: prefer, fams: []corev1.IPFamily{v4, v6}, ips: []string{"10.0.0.1", "fd00::1"}},
		{name: "unchanged PreferDualStack on a cluster that gained a family", cluster: []corev1.IPFamily{v4, v6},
			old: &spec{selector: true, policy: prefer, fams: []corev1.IPFamily{v4}, ips: []string{"10.0.0.1"}},
			in:  spec{selector: true, policy: prefer, fams: []corev1.IPFamily{v4}, ips: []string{"10.0.0.1"}}, policy: prefer, fams: []corev1.IPFamily{v4}, ips: []string{"10.0.0.1"}},
		{name: "from ExternalName", cluster: []corev1.IPFamily{v4, v6},
			old: &spec{typ: corev1.ServiceTypeExternalName},
			in:  spec{selector: true, policy: prefer}, policy: prefer, fams: []corev1.IPFamily{v4, v6}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			svc := build(tc.in)
			var old *corev1.Service
			if tc.old != nil {
				old = build(*tc.old)
			}
			errs := InitServiceIPFamilies(svc, old, tc.cluster)
			if tc.wantError != "" {
				if !strings.Contains(errs.ToAggregate().Error(), tc.wantError) {
					t.Fatalf("errors %v, want %q", errs, tc.wantError)
				}
				return
			}
			if len(errs) > 0 {
				t.Fatal(errs)
			}
			if got := ipFamilyPolicy(svc); got != tc.policy {
				t.Errorf("policy %q, want %q", got, tc.policy)
			}
			if !slices.Equal(svc.Spec.IPFamilies, tc.fams) {
				t.Errorf("families %v, want %v", svc.Spec.IPFamilies, tc.fams)
			}
			if !slices.Equal(svc.Spec.ClusterIPs, tc.ips) {
				t.Errorf("clusterIPs %v, want %v", svc.Spec.ClusterIPs, tc.ips)
			}
		})
	}
}

func TestValidateServiceIPFamiliesUpdate(t *testing.T) {
	v4, v6 := corev1.IPv4Protocol, corev1.IPv6Protocol
	mk := func(policy corev1.IPFamilyPolicy, fams []corev1.IPFamily, ips ...string) *corev1.Service {
		s := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP, ClusterIPs: ips, IPFamilies: fams, IPFamilyPolicy: ptr(policy)}}
		if len(ips) > 0 {
			s.Spec.ClusterIP = ips[0]
		}
		return s
	}
	dual := mk(corev1.IPFamilyPolicyRequireDualStack, []corev1.IPFamily{v4, v6}, "10.0.0.1", "fd00::1")
	one := mk(corev1.IPFamilyPolicySingleStack, []corev1.IPFamily{v4}, "10.0.0.1")
	for _, tc := range []struct {
		name     string
		old, new *corev1.Service
		want     []string
	}{
		{"upgrade", one, dual, nil},
		{"downgrade with SingleStack", dual, one, nil},
		{"downgrade without SingleStack", dual, mk(corev1.IPFamilyPolicyPreferDualStack, []corev1.IPFamily{v4}, "10.0.0.1"),
			[]string{invalid + " spec.ipFamilyPolicy", invalid + " spec.ipFamilyPolicy"}},
		{"secondary address changed", dual, mk(corev1.IPFamilyPolicyRequireDualStack, []corev1.IPFamily{v4, v6}, "10.0.0.1", "fd00::2"), []string{invalid + " spec.clusterIPs[1]"}},
		{"primary family changed", one, mk(corev1.IPFamilyPolicySingleStack, []corev1.IPFamily{v6}, "fd00::1"), []string{invalid + " spec.clusterIPs[0]", invalid + " spec.ipFamilies[0]"}},
		{"headless may change families", mk(corev1.IPFamilyPolicyRequireDualStack, []corev1.IPFamily{v4, v6}, "None"),
			mk(corev1.IPFamilyPolicySingleStack, []corev1.IPFamily{v6}, "None"), nil},
	} {
		t.Run(tc.name, func(t *testing.T) { wantErrors(t, ValidateServiceIPFamiliesUpdate(tc.new, tc.old), tc.want...) })
	}
}
