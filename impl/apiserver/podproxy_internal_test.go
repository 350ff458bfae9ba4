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

// TestServiceProxyLocation: the candidates are the first address of each
// endpoint not marked unready (no condition counts as ready) in IP
// slices with the port name; pick chooses among them.
func TestServiceProxyLocation(t *testing.T) {
	sls := []discoveryv1.EndpointSlice{
		{AddressType: discoveryv1.AddressTypeIPv4,
			Ports: []discoveryv1.EndpointPort{{Name: ptr.To("web"), Port: ptr.To[int32](80)}, {Port: ptr.To[int32](81)}},
			Endpoints: []discoveryv1.Endpoint{
				{Addresses: []string{"10.0.0.1", "10.0.0.9"}},
				{Addresses: []string{"10.0.0.2"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(false)}},
				{Addresses: []string{"10.0.0.3"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}},
			}},
		{AddressType: discoveryv1.AddressTypeFQDN,
			Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("web"), Port: ptr.To[int32](80)}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"example.com"}}}},
		{AddressType: discoveryv1.AddressTypeIPv6,
			Ports:     []discoveryv1.EndpointPort{{Name: ptr.To("web"), Port: ptr.To[int32](8080)}},
			Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"fd00::1"}}}},
	}
	var seen []string
	for i := range 4 {
		u, err := serviceProxyLocation(sls, "s", "s:web", "", "web", func(n int) int {
			if n != 3 {
				t.Fatalf("%d candidates, want 3", n)
			}
			return i % n
		})
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, u.Host)
	}
	if want := []string{"10.0.0.1:80", "10.0.0.3:80", "[fd00::1]:8080", "10.0.0.1:80"}; !slices.Equal(seen, want) {
		t.Errorf("picked %v, want %v", seen, want)
	}
	u, err := serviceProxyLocation(sls, "s", "https:s", "https", "", func(int) int { return 0 })
	if err != nil || u.String() != "https://10.0.0.1:81" {
		t.Errorf("unnamed port: %v %v", u, err)
	}
	if _, err := serviceProxyLocation(sls, "s", "s:other", "", "other", func(int) int { return 0 }); err == nil ||
		err.Error() != `no endpoints available for service "s:other"` {
		t.Errorf("unknown port name: %v", err)
	}
	if _, err := serviceProxyLocation(nil, "s", "s:web", "", "web", func(int) int { return 0 }); err == nil ||
		err.Error() != `no endpoints available for service "s"` {
		t.Errorf("no slices: %v", err)
	}
}
