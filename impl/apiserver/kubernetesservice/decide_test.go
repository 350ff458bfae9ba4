package kubernetesservice

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAddresses(t *testing.T) {
	for _, tc := range []struct {
		leases []string
		ipv6   bool
		want   []string
	}{
		{nil, false, []string{}},
		// Sorted as strings, as kube-apiserver lists them.
		{[]string{"10.0.0.9", "10.0.0.10", "10.0.0.9", "192.0.2.1"}, false, []string{"10.0.0.10", "10.0.0.9", "192.0.2.1"}},
		// The Service's family only; garbage left out.
		{[]string{"2001:db8::1", "10.0.0.1", "not-an-ip", ""}, false, []string{"10.0.0.1"}},
		{[]string{"2001:db8::1", "10.0.0.1"}, true, []string{"2001:db8::1"}},
		{[]string{"::ffff:10.0.0.1"}, false, []string{"10.0.0.1"}},
	} {
		if got := Addresses(tc.leases, tc.ipv6); fmt.Sprint(got) != fmt.Sprint(tc.want) || len(got) != len(tc.want) {
			t.Errorf("Addresses(%q, ipv6=%v) = %q, want %q", tc.leases, tc.ipv6, got, tc.want)
		}
	}
}

func endpoints(labels map[string]string, port int32, ips ...string) *corev1.Endpoints {
	ep := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: metav1.NamespaceDefault, Labels: labels, ResourceVersion: "7"}}
	if len(ips) > 0 {
		ss := corev1.EndpointSubset{Ports: EndpointPorts(port)}
		for _, ip := range ips {
			ss.Addresses = append(ss.Addresses, corev1.EndpointAddress{IP: ip})
		}
		ep.Subsets = []corev1.EndpointSubset{ss}
	}
	return ep
}

var skipMirror = map[string]string{discoveryv1.LabelSkipMirror: "true"}

func TestEndpoints(t *testing.T) {
	twoSubsets := endpoints(skipMirror, 6443, "10.0.0.1")
	twoSubsets.Subsets = append(twoSubsets.Subsets, corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.2"}}, Ports: EndpointPorts(80)})
	for _, tc := range []struct {
		name       string
		cur        *corev1.Endpoints
		addrs      []string
		resetPorts bool
		want       *corev1.Endpoints // nil: no write
	}{
		{"none yet", nil, []string{"10.0.0.1"}, false, endpoints(skipMirror, 6443, "10.0.0.1")},
		{"unchanged", endpoints(skipMirror, 6443, "10.0.0.1", "10.0.0.2"), []string{"10.0.0.1", "10.0.0.2"}, false, nil},
		{"a server joins", endpoints(skipMirror, 6443, "10.0.0.1"), []string{"10.0.0.1", "10.0.0.2"}, false,
			endpoints(skipMirror, 6443, "10.0.0.1", "10.0.0.2")},
		{"a server's lease expired", endpoints(skipMirror, 6443, "10.0.0.1", "10.0.0.2"), []string{"10.0.0.2"}, false,
			endpoints(skipMirror, 6443, "10.0.0.2")},
		{"the order is the leases'", endpoints(skipMirror, 6443, "10.0.0.2", "10.0.0.1"), []string{"10.0.0.1", "10.0.0.2"}, false,
			endpoints(skipMirror, 6443, "10.0.0.1", "10.0.0.2")},
		{"the last server leaves", endpoints(skipMirror, 6443, "10.0.0.1"), nil, true, endpoints(skipMirror, 6443)},
		{"empty stays empty", endpoints(skipMirror, 6443), nil, true, nil},
		// Labels are exactly skip-mirror, as kube-apiserver's.
		{"skip-mirror label restored", endpoints(map[string]string{"x": "y"}, 6443, "10.0.0.1"), []string{"10.0.0.1"}, false,
			endpoints(skipMirror, 6443, "10.0.0.1")},
		// Another port is kept while renewing (servers that disagree do
		// not rewrite each other), replaced on removal.
		{"other port kept", endpoints(skipMirror, 443, "10.0.0.1"), []string{"10.0.0.1"}, false, nil},
		{"other port reset", endpoints(skipMirror, 443, "10.0.0.1"), []string{"10.0.0.1"}, true, endpoints(skipMirror, 6443, "10.0.0.1")},
		{"missing ports set", endpoints(skipMirror, 0, "10.0.0.1"), []string{"10.0.0.1"}, false, endpoints(skipMirror, 6443, "10.0.0.1")},
		{"several subsets made one", twoSubsets, []string{"10.0.0.1"}, false, endpoints(skipMirror, 6443, "10.0.0.1")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.name == "missing ports set" {
				tc.cur.Subsets[0].Ports = nil
			}
			before := tc.cur.DeepCopy()
			got := Endpoints(tc.cur, tc.addrs, EndpointPorts(6443), tc.resetPorts)
			if !apiequality.Semantic.DeepEqual(tc.cur, before) {
				t.Fatal("Endpoints changed its input")
			}
			if tc.want == nil {
				if got != nil {
					t.Fatalf("wrote %+v, want no write", got)
				}
				return
			}
			if got == nil {
				t.Fatal("no write")
			}
			if tc.cur == nil {
				tc.want.ResourceVersion = ""
			}
			if !apiequality.Semantic.DeepEqual(got, tc.want) {
				t.Fatalf("got  %+v\nwant %+v", got, tc.want)
			}
			// Deciding again on what was written writes nothing.
			if again := Endpoints(got, tc.addrs, EndpointPorts(6443), tc.resetPorts); again != nil {
				t.Fatalf("not a fixed point: %+v", again)
			}
		})
	}
}

func slice(addressType discoveryv1.AddressType, labels map[string]string, port int32, ips ...string) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: metav1.NamespaceDefault, Labels: labels},
		AddressType: addressType, Endpoints: []discoveryv1.Endpoint{}}
	ready := true
	for _, ip := range ips {
		s.Endpoints = append(s.Endpoints, discoveryv1.Endpoint{Addresses: []string{ip}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}})
	}
	name, proto := PortName, corev1.ProtocolTCP
	s.Ports = []discoveryv1.EndpointPort{{Name: &name, Port: &port, Protocol: &proto}}
	return s
}

func TestEndpointSlice(t *testing.T) {
	svc := map[string]string{discoveryv1.LabelServiceName: Name}
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	for _, tc := range []struct {
		name       string
		cur        *discoveryv1.EndpointSlice
		addrs      []string
		resetPorts bool
		want       SliceChange
	}{
		{"none yet", nil, []string{"10.0.0.1"}, false, SliceChange{Write: slice(v4, svc, 6443, "10.0.0.1")}},
		{"unchanged", slice(v4, svc, 6443, "10.0.0.1", "10.0.0.2"), []string{"10.0.0.1", "10.0.0.2"}, false, SliceChange{}},
		{"a server leaves", slice(v4, svc, 6443, "10.0.0.1", "10.0.0.2"), []string{"10.0.0.2"}, false,
			SliceChange{Write: slice(v4, svc, 6443, "10.0.0.2")}},
		{"the last server leaves", slice(v4, svc, 6443, "10.0.0.1"), nil, true, SliceChange{Write: slice(v4, svc, 6443)}},
		// Only the service-name label: no managed-by label, as upstream.
		{"labels restored", slice(v4, map[string]string{"endpointslice.kubernetes.io/managed-by": "x"}, 6443, "10.0.0.1"), []string{"10.0.0.1"}, false,
			SliceChange{Write: slice(v4, svc, 6443, "10.0.0.1")}},
		{"other port kept", slice(v4, svc, 443, "10.0.0.1"), []string{"10.0.0.1"}, false, SliceChange{}},
		{"other port reset", slice(v4, svc, 443, "10.0.0.1"), []string{"10.0.0.1"}, true, SliceChange{Write: slice(v4, svc, 6443, "10.0.0.1")}},
		// The address type cannot change: delete and create.
		{"wrong address type", slice(v6, svc, 6443, "2001:db8::1"), []string{"10.0.0.1"}, false,
			SliceChange{Write: slice(v4, svc, 6443, "10.0.0.1"), Recreate: true}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			before := tc.cur.DeepCopy()
			got := EndpointSlice(tc.cur, tc.addrs, EndpointPorts(6443), v4, tc.resetPorts)
			if !apiequality.Semantic.DeepEqual(tc.cur, before) {
				t.Fatal("EndpointSlice changed its input")
			}
			if got.Recreate != tc.want.Recreate || (got.Write == nil) != (tc.want.Write == nil) ||
				(got.Write != nil && !apiequality.Semantic.DeepEqual(got.Write, tc.want.Write)) {
				t.Fatalf("got  %+v %+v\nwant %+v %+v", got.Recreate, got.Write, tc.want.Recreate, tc.want.Write)
			}
			if got.Write != nil {
				if again := EndpointSlice(got.Write, tc.addrs, EndpointPorts(6443), v4, tc.resetPorts); again.Write != nil {
					t.Fatalf("not a fixed point: %+v", again.Write)
				}
			}
		})
	}
}

func TestStraySlices(t *testing.T) {
	svc := map[string]string{discoveryv1.LabelServiceName: Name}
	named := func(name string, labels map[string]string) discoveryv1.EndpointSlice {
		return discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: metav1.NamespaceDefault, Labels: labels}}
	}
	got := StraySlices([]discoveryv1.EndpointSlice{
		named(Name, svc), named("kubernetes-v6", svc), named("by-hand", svc),
		named("other-service", map[string]string{discoveryv1.LabelServiceName: "web"}), named("unlabelled", nil),
	})
	if fmt.Sprint(got) != "[by-hand kubernetes-v6]" {
		t.Fatalf("StraySlices = %v, want [by-hand kubernetes-v6]", got)
	}
	if got := StraySlices([]discoveryv1.EndpointSlice{named(Name, svc)}); len(got) != 0 {
		t.Fatalf("StraySlices of the kubernetes slice alone = %v, want none", got)
	}
}
