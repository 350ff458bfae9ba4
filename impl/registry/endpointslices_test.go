package registry

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

func TestEndpointSlices(t *testing.T) {
	ctx := context.Background()
	r := find(t, discoveryv1.SchemeGroupVersion, "endpointslices")
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "web-abc12", Namespace: "default", Labels: map[string]string{discoveryv1.LabelServiceName: "web"}},
		AddressType: discoveryv1.AddressTypeIPv4,
		Endpoints: []discoveryv1.Endpoint{
			{Addresses: []string{"10.244.0.5"}, NodeName: ptr("node-1"), Hostname: ptr("web-0"),
				DeprecatedTopology: map[string]string{"kubernetes.io/hostname": "node-1"}},
			{Addresses: []string{"10.244.1.7"}},
		},
		Ports: []discoveryv1.EndpointPort{{Port: ptr(int32(8080))}, {Name: ptr("metrics"), Port: ptr(int32(9090)), Protocol: ptr(corev1.ProtocolUDP)}},
	}
	r.Strategy.Default(slice)
	if *slice.Ports[0].Name != "" || *slice.Ports[0].Protocol != corev1.ProtocolTCP || *slice.Ports[1].Protocol != corev1.ProtocolUDP {
		t.Errorf("defaults: %+v", slice.Ports)
	}
	r.Strategy.PrepareForCreate(ctx, slice)
	if slice.Generation != 1 || slice.Endpoints[0].DeprecatedTopology != nil {
		t.Errorf("create: generation %d, deprecatedTopology %v kept", slice.Generation, slice.Endpoints[0].DeprecatedTopology)
	}
	wantErrors(t, r.Strategy.Validate(ctx, slice))
	slice.CreationTimestamp = metav1.NewTime(testNow.Add(-time.Hour))
	assertRow(t, r, slice, "Name,AddressType,Ports,Endpoints,Age", "web-abc12", "IPv4", "8080,9090", "10.244.0.5,10.244.1.7", "60m")

	// Generation moves with endpoints, ports or labels, not annotations.
	upd := slice.DeepCopy()
	upd.Annotations = map[string]string{"a": "b"}
	r.Strategy.PrepareForUpdate(ctx, upd, slice)
	if upd.Generation != 1 {
		t.Errorf("annotation change bumped generation to %d", upd.Generation)
	}
	upd.Labels = map[string]string{"x": "y"}
	r.Strategy.PrepareForUpdate(ctx, upd, slice)
	if upd.Generation != 2 {
		t.Errorf("label change: generation %d, want 2", upd.Generation)
	}
	upd = slice.DeepCopy()
	upd.Endpoints = upd.Endpoints[:1]
	r.Strategy.PrepareForUpdate(ctx, upd, slice)
	if upd.Generation != 2 {
		t.Errorf("endpoint change: generation %d, want 2", upd.Generation)
	}
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, upd, slice))

	// addressType is immutable.
	upd.AddressType = discoveryv1.AddressTypeFQDN
	upd.Endpoints = []discoveryv1.Endpoint{{Addresses: []string{"web.example.com"}}}
	wantErrors(t, r.Strategy.ValidateUpdate(ctx, upd, slice), invalid+" addressType")
}

func TestEndpointSliceValidation(t *testing.T) {
	ctx := context.Background()
	r := find(t, discoveryv1.SchemeGroupVersion, "endpointslices")
	valid := func() *discoveryv1.EndpointSlice {
		s := &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "s", Namespace: "default"},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1"}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr("http"), Port: ptr(int32(80))}},
		}
		r.Strategy.Default(s)
		return s
	}
	many := func(n int, f func(i int) string) []string {
		out := make([]string, n)
		for i := range out {
			out[i] = f(i)
		}
		return out
	}
	for _, tc := range []struct {
		name string
		mod  func(*discoveryv1.EndpointSlice)
		want []string
	}{
		{"valid", func(*discoveryv1.EndpointSlice) {}, nil},
		{"no address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = "" }, []string{required + " addressType"}},
		{"unknown address type", func(s *discoveryv1.EndpointSlice) { s.AddressType = "IP" }, []string{notSupported + " addressType"}},
		{"no endpoints is valid", func(s *discoveryv1.EndpointSlice) { s.Endpoints = nil }, nil},
		{"no ports is valid", func(s *discoveryv1.EndpointSlice) { s.Ports = nil }, nil},
		{"too many endpoints", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints = make([]discoveryv1.Endpoint, 1001)
		}, []string{tooMany + " endpoints"}},
		{"no addresses", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = nil }, []string{required + " endpoints[0].addresses"}},
		{"101 addresses", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Addresses = many(101, func(i int) string { return fmt.Sprintf("10.0.%d.%d", i/250, i%250+1) })
		}, []string{tooMany + " endpoints[0].addresses"}},
		{"not an IP", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"ten"} }, []string{invalid + " endpoints[0].addresses[0]"}},
		{"IPv6 in an IPv4 slice", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"fd00::1"} }, []string{invalid + " endpoints[0].addresses[0]"}},
		{"IPv6 slice", func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeIPv6
			s.Endpoints[0].Addresses = []string{"fd00::1"}
		}, nil},
		{"leading zeros", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"010.0.0.1"} }, []string{invalid + " endpoints[0].addresses[0]"}},
		{"loopback", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"127.0.0.1"} }, []string{invalid + " endpoints[0].addresses[0]"}},
		{"link-local", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Addresses = []string{"169.254.1.1"} }, []string{invalid + " endpoints[0].addresses[0]"}},
		{"FQDN", func(s *discoveryv1.EndpointSlice) {
			s.AddressType = discoveryv1.AddressTypeFQDN
			s.Endpoints[0].Addresses = []string{"db.example.com", "Not_A_Name"}
		}, []string{invalid + " endpoints[0].addresses[1]"}},
		{"hostname", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].Hostname = ptr("Web.0") }, []string{invalid + " endpoints[0].hostname"}},
		{"nodeName", func(s *discoveryv1.EndpointSlice) { s.Endpoints[0].NodeName = ptr("node_1") }, []string{invalid + " endpoints[0].nodeName"}},
		{"zone hints", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: "a"}, {Name: "a"}, {Name: "b c"}}}
		}, []string{duplicate + " endpoints[0].hints.forZones[1].name", invalid + " endpoints[0].hints.forZones[2].name"}},
		{"nine zone hints", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Hints = &discoveryv1.EndpointHints{}
			for i := range 9 {
				s.Endpoints[0].Hints.ForZones = append(s.Endpoints[0].Hints.ForZones, discoveryv1.ForZone{Name: fmt.Sprint("z", i)})
			}
		}, []string{tooMany + " endpoints[0].hints.forZones"}},
		{"node hints", func(s *discoveryv1.EndpointSlice) {
			s.Endpoints[0].Hints = &discoveryv1.EndpointHints{ForNodes: []discoveryv1.ForNode{{Name: "n1"}, {Name: "n1"}, {Name: "N_2"}}}
		}, []string{duplicate + " endpoints[0].hints.forNodes[1].name", invalid + " endpoints[0].hints.forNodes[2].name"}},
		{"port name", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Name = ptr("HTTP") }, []string{invalid + " ports[0].name"}},
		{"duplicate port names", func(s *discoveryv1.EndpointSlice) {
			s.Ports = append(s.Ports, discoveryv1.EndpointPort{Name: ptr("http"), Port: ptr(int32(81)), Protocol: ptr(corev1.ProtocolTCP)})
		}, []string{duplicate + " ports[1].name"}},
		{"two unnamed ports", func(s *discoveryv1.EndpointSlice) {
			s.Ports = []discoveryv1.EndpointPort{{Name: ptr(""), Protocol: ptr(corev1.ProtocolTCP)}, {Name: ptr(""), Protocol: ptr(corev1.ProtocolUDP)}}
		}, []string{duplicate + " ports[1].name"}},
		{"protocol", func(s *discoveryv1.EndpointSlice) { s.Ports[0].Protocol = ptr(corev1.Protocol("ICMP")) }, []string{notSupported + " ports[0].protocol"}},
		{"appProtocol", func(s *discoveryv1.EndpointSlice) { s.Ports[0].AppProtocol = ptr("not a name") }, []string{invalid + " ports[0].appProtocol"}},
		{"kubernetes.io/h2c appProtocol", func(s *discoveryv1.EndpointSlice) { s.Ports[0].AppProtocol = ptr("kubernetes.io/h2c") }, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := valid()
			tc.mod(s)
			wantErrors(t, r.Strategy.Validate(ctx, s), tc.want...)
		})
	}
}

func TestEndpointSliceCells(t *testing.T) {
	for _, tc := range []struct {
		ports []discoveryv1.EndpointPort
		want  string
	}{
		{nil, "<unset>"},
		{[]discoveryv1.EndpointPort{{Name: ptr("http")}}, "http"},
		{[]discoveryv1.EndpointPort{{}}, "*"},
		{[]discoveryv1.EndpointPort{{Port: ptr(int32(80))}, {Port: ptr(int32(443))}}, "80,443"},
		{[]discoveryv1.EndpointPort{{Port: ptr(int32(1))}, {Port: ptr(int32(2))}, {Port: ptr(int32(3))}, {Port: ptr(int32(4))}, {Port: ptr(int32(5))}}, "1,2,3 + 2 more..."},
	} {
		if got := slicePortsCell(tc.ports); got != tc.want {
			t.Errorf("ports %v: %q, want %q", tc.ports, got, tc.want)
		}
	}
	eps := []discoveryv1.Endpoint{{Addresses: []string{"10.0.0.1", "10.0.0.2"}}, {Addresses: []string{"10.0.0.3"}}, {Addresses: []string{"10.0.0.4"}}}
	for n, want := range map[int]string{0: "<unset>", 1: "10.0.0.1,10.0.0.2", 2: "10.0.0.1,10.0.0.2,10.0.0.3", 3: "10.0.0.1,10.0.0.2,10.0.0.3 + 1 more..."} {
		if got := sliceEndpointsCell(eps[:n]); got != want {
			t.Errorf("%d endpoints: %q, want %q", n, got, want)
		}
	}
}

func TestEndpointSliceWarnings(t *testing.T) {
	r := find(t, discoveryv1.SchemeGroupVersion, "endpointslices")
	warnings := func(s, old *discoveryv1.EndpointSlice) []string {
		ctx, w := request.WithWarnings(context.Background())
		r.Strategy.Default(s)
		if old == nil {
			wantErrors(t, r.Strategy.Validate(ctx, s))
		} else {
			wantErrors(t, r.Strategy.ValidateUpdate(ctx, s, old))
		}
		return w.List()
	}
	slice := func(typ discoveryv1.AddressType, managedBy string, addrs ...string) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{
			ObjectMeta:  metav1.ObjectMeta{Name: "s", Namespace: "default", Labels: map[string]string{discoveryv1.LabelManagedBy: managedBy}},
			AddressType: typ, Endpoints: []discoveryv1.Endpoint{{Addresses: addrs}},
		}
	}
	if got := warnings(slice(discoveryv1.AddressTypeIPv6, "me", "fd00:0::1"), nil); len(got) != 1 || !strings.Contains(got[0], "endpoints[0].addresses[0]") || !strings.Contains(got[0], `"fd00::1"`) {
		t.Errorf("non-canonical IPv6: %q", got)
	}
	if got := warnings(slice(discoveryv1.AddressTypeIPv6, "endpointslice-controller.k8s.io", "fd00:0::1"), nil); len(got) != 0 {
		t.Errorf("the EndpointSlice controller's slice: %q", got)
	}
	if got := warnings(slice(discoveryv1.AddressTypeFQDN, "me", "db.example.com"), nil); len(got) != 1 || got[0] != "spec.addressType: FQDN endpoints are deprecated" {
		t.Errorf("FQDN create: %q", got)
	}
	fqdn := slice(discoveryv1.AddressTypeFQDN, "me", "db.example.com")
	if got := warnings(fqdn.DeepCopy(), fqdn); len(got) != 0 {
		t.Errorf("FQDN update: %q", got)
	}
	if got := warnings(slice(discoveryv1.AddressTypeIPv4, "me", "10.0.0.1"), nil); len(got) != 0 {
		t.Errorf("canonical IPv4: %q", got)
	}
}
