package apiserver

import (
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/utils/ptr"
)

// TestPodProxyLocation: the pod's first IP (an IPv6 one bracketed), the
// port given or else the first container port, none at all leaving the
// host bare; an IP that is not global unicast is "address not allowed".
func TestPodProxyLocation(t *testing.T) {
	pod := func(ip string, ports ...int32) *corev1.Pod {
		p := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}, {Name: "b"}}}}
		for _, port := range ports {
			p.Spec.Containers[1].Ports = append(p.Spec.Containers[1].Ports, corev1.ContainerPort{ContainerPort: port})
		}
		if ip != "" {
			p.Status.PodIPs = []corev1.PodIP{{IP: ip}}
		}
		return p
	}
	for _, tc := range []struct {
		pod          *corev1.Pod
		scheme, port string
		want         string
	}{
		{pod("10.1.2.3", 8080, 9090), "", "", "//10.1.2.3:8080"},
		{pod("10.1.2.3", 8080), "https", "443", "https://10.1.2.3:443"},
		{pod("10.1.2.3"), "", "", "//10.1.2.3"},
		{pod("fd00::5"), "", "", "//[fd00::5]"},
		{pod("fd00::5", 80), "", "", "//[fd00::5]:80"},
		{pod("10.1.2.3"), "", "http", "//10.1.2.3:http"},
	} {
		got, err := podProxyLocation(tc.pod, tc.scheme, tc.port)
		if err != nil || got.String() != tc.want {
			t.Errorf("%v %q %q: %v %v, want %s", tc.pod.Status.PodIPs, tc.scheme, tc.port, got, err, tc.want)
		}
	}
	for _, ip := range []string{"", "127.0.0.1", "::1", "169.254.1.1", "0.0.0.0", "224.0.0.1", "not-an-ip"} {
		if _, err := podProxyLocation(pod(ip, 80), "", ""); err == nil || err.Error() != "address not allowed" {
			t.Errorf("IP %q: %v, want address not allowed", ip, err)
		}
	}
}

// scriptedPick returns picks in turn and records the n it is asked for.
type scriptedPick struct {
	picks []int
	asked []int
}

func (p *scriptedPick) pick(n int) int {
	p.asked = append(p.asked, n)
	if len(p.picks) == 0 {
		return 0
	}
	k := p.picks[0]
	p.picks = p.picks[1:]
	return k
}

// TestServiceProxyLocation: as kube-apiserver's service REST since
// kubernetes PR 134860 (the aggregator's EndpointSlice resolver): a slice
// picked at random among those left, then in it, for a port with the
// name (one without a name matches no name, not even the unnamed
// request's ""), the first endpoint not marked unready from a random
// start (no condition counts as ready), its first address, an FQDN
// slice's included; a slice without one gives way to another picked
// among the rest. No slice names the Service in the 503, none found the
// request's id.
func TestServiceProxyLocation(t *testing.T) {
	web := func(port int32) []discoveryv1.EndpointPort {
		return []discoveryv1.EndpointPort{{Name: ptr.To("web"), Port: ptr.To(port)}}
	}
	ready := func(addrs ...string) discoveryv1.Endpoint { return discoveryv1.Endpoint{Addresses: addrs} }
	unready := func(addr string) discoveryv1.Endpoint {
		return discoveryv1.Endpoint{Addresses: []string{addr}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}}
	}
	sls := []discoveryv1.EndpointSlice{
		{AddressType: discoveryv1.AddressTypeIPv4,
			Ports: append(web(80), discoveryv1.EndpointPort{Port: ptr.To[int32](81)}),
			Endpoints: []discoveryv1.Endpoint{ready("10.0.0.1", "10.0.0.9"), unready("10.0.0.2"),
				{Addresses: []string{"10.0.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}}},
		{AddressType: discoveryv1.AddressTypeFQDN, Ports: web(80), Endpoints: []discoveryv1.Endpoint{ready("example.com")}},
		{AddressType: discoveryv1.AddressTypeIPv6, Ports: web(8080), Endpoints: []discoveryv1.Endpoint{ready("fd00::1")}},
	}
	allUnready := []discoveryv1.EndpointSlice{
		{AddressType: discoveryv1.AddressTypeIPv4, Ports: web(80), Endpoints: []discoveryv1.Endpoint{unready("10.0.1.1"), unready("10.0.1.2")}},
		{AddressType: discoveryv1.AddressTypeIPv4, Ports: web(80), Endpoints: []discoveryv1.Endpoint{ready("10.0.1.3")}},
	}
	emptyName := []discoveryv1.EndpointSlice{{AddressType: discoveryv1.AddressTypeIPv4,
		Ports: []discoveryv1.EndpointPort{{Name: ptr.To(""), Port: ptr.To[int32](81)}}, Endpoints: []discoveryv1.Endpoint{ready("10.0.2.1")}}}
	for _, tc := range []struct {
		id, scheme, port string
		slices           []discoveryv1.EndpointSlice
		picks            []int
		want             string // URL, or the 503's message
		asked            []int
	}{
		{"s:web", "", "web", sls, []int{0, 1}, "//10.0.0.3:80", []int{3, 3}},
		{"s:web", "", "web", sls, []int{0, 0}, "//10.0.0.1:80", []int{3, 3}},
		{"s:web", "", "web", sls, []int{1, 0}, "//example.com:80", []int{3, 1}},
		{"https:s:web", "https", "web", sls, []int{2, 0}, "https://[fd00::1]:8080", []int{3, 1}},
		{"s:web", "", "web", allUnready, []int{0, 1, 0, 0}, "//10.0.1.3:80", []int{2, 2, 1, 1}},
		{"https:s", "https", "", sls, nil, `no endpoints available for service "https:s"`, []int{3, 2, 1}},
		{"s", "", "", emptyName, nil, "//10.0.2.1:81", []int{1, 1}},
		{"s:other", "", "other", sls, nil, `no endpoints available for service "s:other"`, []int{3, 2, 1}},
		{"s:web", "", "web", nil, nil, `no endpoints available for service "s"`, nil},
	} {
		p := &scriptedPick{picks: tc.picks}
		u, err := serviceProxyLocation(tc.slices, "s", tc.id, tc.scheme, tc.port, p.pick)
		got := ""
		if err != nil {
			got = err.Error()
		} else {
			got = u.String()
		}
		if got != tc.want || !slices.Equal(p.asked, tc.asked) {
			t.Errorf("%s picking %v: %s (asked %v), want %s (asked %v)", tc.id, tc.picks, got, p.asked, tc.want, tc.asked)
		}
	}
}
