package endpointslice

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

func dualStackPod(name string, ips ...string) *corev1.Pod {
	return pod(name, ips[0], func(p *corev1.Pod) {
		for _, ip := range ips {
			p.Status.PodIPs = append(p.Status.PodIPs, corev1.PodIP{IP: ip})
		}
	})
}

// byAddressType is each address type's endpoints' addresses of slices.
func byAddressType(ss []*discoveryv1.EndpointSlice) map[discoveryv1.AddressType][]string {
	out := map[discoveryv1.AddressType][]string{}
	for _, s := range ss {
		if _, ok := out[s.AddressType]; !ok {
			out[s.AddressType] = []string{}
		}
		for _, e := range s.Endpoints {
			out[s.AddressType] = append(out[s.AddressType], e.Addresses...)
		}
	}
	for _, v := range out {
		slices.Sort(v)
	}
	return out
}

// A dual-stack service gets one set of slices per family, each endpoint
// with the pod's address of that family; a pod with one family only is
// in that family's slices. Downgrading the service deletes the other
// family's slices; a family without endpoints keeps a placeholder.
func TestReconcileDualStack(t *testing.T) {
	dual := service(func(s *corev1.Service) {
		s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10"}
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	})
	pods := []*corev1.Pod{dualStackPod("a", "10.1.0.1", "fd01::1"), dualStackPod("b", "fd01::2", "10.1.0.2"), pod("v4only", "10.1.0.3")}
	state := apply(t, nil, Reconcile(Input{Service: dual, Pods: pods}))
	got := byAddressType(state)
	if want := []string{"10.1.0.1", "10.1.0.2", "10.1.0.3"}; !slices.Equal(got[discoveryv1.AddressTypeIPv4], want) {
		t.Errorf("IPv4 slices %v, want %v", got[discoveryv1.AddressTypeIPv4], want)
	}
	if want := []string{"fd01::1", "fd01::2"}; !slices.Equal(got[discoveryv1.AddressTypeIPv6], want) {
		t.Errorf("IPv6 slices %v, want %v", got[discoveryv1.AddressTypeIPv6], want)
	}
	if again := Reconcile(Input{Service: dual, Pods: pods, Slices: state}); !again.Empty() {
		t.Fatalf("a converged dual-stack service writes again: %+v", again)
	}

	// Only IPv4 pods: the IPv6 set is a placeholder.
	v4 := []*corev1.Pod{pod("v4only", "10.1.0.3")}
	state = apply(t, state, Reconcile(Input{Service: dual, Pods: v4, Slices: state}))
	got = byAddressType(state)
	if len(state) != 2 || len(got[discoveryv1.AddressTypeIPv6]) != 0 || !slices.Equal(got[discoveryv1.AddressTypeIPv4], []string{"10.1.0.3"}) {
		t.Fatalf("IPv4 pods only: %d slices %v", len(state), got)
	}

	// Downgraded to IPv4: the IPv6 slices go, none is turned into IPv4.
	single := dual.DeepCopy()
	single.Spec.ClusterIPs, single.Spec.IPFamilies = single.Spec.ClusterIPs[:1], single.Spec.IPFamilies[:1]
	plan := Reconcile(Input{Service: single, Pods: pods, Slices: state})
	for _, u := range plan.Update {
		if u.AddressType != discoveryv1.AddressTypeIPv4 {
			t.Fatalf("updated a %s slice of an IPv4 service", u.AddressType)
		}
	}
	state = apply(t, state, plan)
	if got := byAddressType(state); len(got) != 1 || len(got[discoveryv1.AddressTypeIPv4]) != 3 {
		t.Fatalf("after the downgrade: %v", got)
	}
}

// AddressTypes follows ipFamilies; without them, the ClusterIP's family,
// or both for a headless service (as upstream, for services written
// before families existed).
func TestAddressTypes(t *testing.T) {
	v4, v6 := discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6
	for _, tc := range []struct {
		name string
		mod  func(*corev1.Service)
		want []discoveryv1.AddressType
	}{
		{"IPv6 primary", func(s *corev1.Service) {
			s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
		}, []discoveryv1.AddressType{v6, v4}},
		{"no families, IPv6 ClusterIP", func(s *corev1.Service) { s.Spec.IPFamilies, s.Spec.ClusterIP = nil, "fd00::10" }, []discoveryv1.AddressType{v6}},
		{"no families, headless", func(s *corev1.Service) { s.Spec.IPFamilies, s.Spec.ClusterIP = nil, corev1.ClusterIPNone }, []discoveryv1.AddressType{v4, v6}},
	} {
		if got := AddressTypes(service(tc.mod)); !slices.Equal(got, tc.want) {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
