package kubelet

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// TestServingTemplateAllowDNSOnlyNodeCSR: with the AllowDNSOnlyNodeCSR
// gate, as upstream's kubelet, a node with DNS names (its host name, its
// InternalDNS/ExternalDNS addresses) but no IP address asks for them
// alone; a node with neither still asks for nothing, and the gate
// changes nothing for one with an IP. Off (its default), no IP is no
// request.
func TestServingTemplateAllowDNSOnlyNodeCSR(t *testing.T) {
	a := func(typ corev1.NodeAddressType, addr string) corev1.NodeAddress {
		return corev1.NodeAddress{Type: typ, Address: addr}
	}
	for _, tc := range []struct {
		name      string
		addresses []corev1.NodeAddress
		dns       []string // nil: no request
		ips       []string
	}{
		{"none", nil, nil, nil},
		{"empty addresses", []corev1.NodeAddress{a(corev1.NodeInternalIP, ""), a(corev1.NodeHostName, "")}, nil, nil},
		{"host name only", []corev1.NodeAddress{a(corev1.NodeHostName, "n1")}, []string{"n1"}, nil},
		{"DNS names only", []corev1.NodeAddress{a(corev1.NodeExternalDNS, "n1.example.com"), a(corev1.NodeInternalDNS, "n1.internal")},
			[]string{"n1.example.com", "n1.internal"}, nil},
		{"InternalIP not an IP", []corev1.NodeAddress{a(corev1.NodeInternalIP, "n1"), a(corev1.NodeHostName, "n1")}, []string{"n1"}, nil},
		{"with an IP", []corev1.NodeAddress{a(corev1.NodeInternalIP, "192.168.0.7"), a(corev1.NodeHostName, "node-7")},
			[]string{"node-7"}, []string{"192.168.0.7"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := servingTemplate("n1", tc.addresses, true)
			if tc.dns == nil {
				if got != nil {
					t.Fatalf("template %v %v, want none", got.DNSNames, got.IPAddresses)
				}
				return
			}
			if got == nil {
				t.Fatal("no template")
			}
			if got.Subject.CommonName != "system:node:n1" || !slices.Equal(got.Subject.Organization, []string{"system:nodes"}) {
				t.Errorf("subject %v", got.Subject)
			}
			if !slices.Equal(got.DNSNames, tc.dns) {
				t.Errorf("DNS names %q, want %q", got.DNSNames, tc.dns)
			}
			if ips := ipStrings(got.IPAddresses); len(ips) != len(tc.ips) || (len(ips) > 0 && !slices.Equal(ips, tc.ips)) {
				t.Errorf("IP addresses %q, want %q", ips, tc.ips)
			}
			if off := servingTemplate("n1", tc.addresses, false); (off != nil) != (len(tc.ips) > 0) {
				t.Errorf("gate off: template %v, want one only with an IP", off)
			}
		})
	}

	// The manager's template follows its config's gate.
	dnsOnly := func() []corev1.NodeAddress { return []corev1.NodeAddress{a(corev1.NodeHostName, "n1")} }
	for _, gate := range []bool{false, true} {
		m, err := NewServingCertificateManager(ServingCertificateManagerConfig{CertDir: t.TempDir(), NodeName: "n1", Addresses: dnsOnly, AllowDNSOnlyNodeCSR: gate})
		if err != nil {
			t.Fatal(err)
		}
		if got := m.template(); (got != nil) != gate {
			t.Errorf("AllowDNSOnlyNodeCSR %v: manager's template %v", gate, got)
		}
	}
}
