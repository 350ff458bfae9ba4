package registry

import (
	"context"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func validService() *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: metav1.NewTime(testNow.Add(-90e9))},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80}},
		},
	}
}

func TestServiceDefaults(t *testing.T) {
	svcs := find(t, corev1.SchemeGroupVersion, "services")
	s := validService()
	svcs.Strategy.Default(s)
	p := s.Spec.Ports[0]
	if s.Spec.Type != corev1.ServiceTypeClusterIP || s.Spec.SessionAffinity != corev1.ServiceAffinityNone ||
		p.Protocol != corev1.ProtocolTCP || p.TargetPort != intstr.FromInt32(80) ||
		*s.Spec.InternalTrafficPolicy != corev1.ServiceInternalTrafficPolicyCluster ||
		s.Spec.IPFamilyPolicy != nil || len(s.Spec.IPFamilies) != 0 ||
		s.Spec.ExternalTrafficPolicy != "" || s.Spec.AllocateLoadBalancerNodePorts != nil {
		t.Fatalf("defaults: %+v", s.Spec)
	}

	lb := validService()
	lb.Spec.Type = corev1.ServiceTypeLoadBalancer
	lb.Spec.SessionAffinity = corev1.ServiceAffinityClientIP
	svcs.Strategy.Default(lb)
	if lb.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster || !*lb.Spec.AllocateLoadBalancerNodePorts ||
		*lb.Spec.SessionAffinityConfig.ClientIP.TimeoutSeconds != 10800 {
		t.Fatalf("LoadBalancer defaults: %+v", lb.Spec)
	}

	headless := validService()
	headless.Spec.Selector = nil
	headless.Spec.ClusterIPs = []string{"None"}
	svcs.Strategy.Default(headless)
	if headless.Spec.ClusterIP != "None" {
		t.Fatalf("clusterIP from clusterIPs: %+v", headless.Spec)
	}
	old := validService()
	old.Spec.ClusterIP = "10.96.0.10"
	svcs.Strategy.PrepareForCreate(context.Background(), old)
	if !slices.Equal(old.Spec.ClusterIPs, []string{"10.96.0.10"}) {
		t.Fatalf("an old client's clusterIP did not fill clusterIPs: %v", old.Spec.ClusterIPs)
	}

	ext := &corev1.Service{Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
	svcs.Strategy.Default(ext)
	if ext.Spec.IPFamilyPolicy != nil || ext.Spec.IPFamilies != nil || ext.Spec.InternalTrafficPolicy != nil {
		t.Fatalf("ExternalName got IP fields: %+v", ext.Spec)
	}
}

func TestServiceValidation(t *testing.T) {
	ctx := context.Background()
	svcs := find(t, corev1.SchemeGroupVersion, "services")
	check := func(name string, mutate func(*corev1.Service), want ...string) {
		t.Helper()
		s := validService()
		mutate(s)
		svcs.Strategy.Default(s)
		svcs.Strategy.PrepareForCreate(ctx, s)
		t.Run(name, func(t *testing.T) { wantErrors(t, svcs.Strategy.Validate(ctx, s), want...) })
	}
	check("valid", func(*corev1.Service) {})
	check("name is a DNS-1035 label", func(s *corev1.Service) { s.Name = "1web" }, invalid+" metadata.name")
	check("ports required", func(s *corev1.Service) { s.Spec.Ports = nil }, required+" spec.ports")
	check("headless needs no ports", func(s *corev1.Service) { s.Spec.Ports, s.Spec.ClusterIP = nil, "None" })
	check("port range", func(s *corev1.Service) { s.Spec.Ports[0].Port = 70000 }, invalid+" spec.ports[0].port", invalid+" spec.ports[0].targetPort")
	check("protocol", func(s *corev1.Service) { s.Spec.Ports[0].Protocol = "HTTP" }, notSupported+" spec.ports[0].protocol")
	check("target port name", func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("Not_A_Name") },
		invalid+" spec.ports[0].targetPort")
	check("names required with several ports, unique, ports unique", func(s *corev1.Service) {
		s.Spec.Ports = []corev1.ServicePort{{Name: "a", Port: 80}, {Port: 81}, {Name: "a", Port: 80}}
	}, required+" spec.ports[1].name", duplicate+" spec.ports[2].name", duplicate+" spec.ports[2]")
	check("nodePort on ClusterIP", func(s *corev1.Service) { s.Spec.Ports[0].NodePort = 30001 }, forbidden+" spec.ports[0].nodePort")
	check("type", func(s *corev1.Service) { s.Spec.Type = "Ingress" }, notSupported+" spec.type")
	check("clusterIP syntax", func(s *corev1.Service) { s.Spec.ClusterIP = "10.0.0.300" }, invalid+" spec.clusterIPs[0]")
	check("clusterIPs must match", func(s *corev1.Service) {
		s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.11"}
	}, invalid+" spec.clusterIPs")
	check("dual-stack fields", func(s *corev1.Service) {
		s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10"}
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
		s.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicyRequireDualStack)
	})
	check("families known, once each", func(s *corev1.Service) {
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv4Protocol, "IPv5"}
	}, duplicate+" spec.ipFamilies[1]", notSupported+" spec.ipFamilies[2]")
	check("policy", func(s *corev1.Service) { s.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicy("Both")) }, notSupported+" spec.ipFamilyPolicy")
	check("one address per family", func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"10.96.0.10", "10.96.0.11"} }, invalid+" spec.clusterIPs")
	check("at most two addresses", func(s *corev1.Service) {
		s.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10", "fd00::11"}
	}, invalid+" spec.clusterIPs")
	check("address of its family", func(s *corev1.Service) {
		s.Spec.ClusterIPs = []string{"fd00::10"}
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	}, invalid+" spec.clusterIPs[0]")
	check("None first and only", func(s *corev1.Service) { s.Spec.ClusterIPs = []string{"None", "10.96.0.10"} }, invalid+" spec.clusterIPs")
	check("headless NodePort", func(s *corev1.Service) {
		s.Spec.Type, s.Spec.ClusterIP = corev1.ServiceTypeNodePort, "None"
	}, invalid+" spec.clusterIPs[0]")
	check("ExternalName", func(s *corev1.Service) {
		s.Spec.Type, s.Spec.ExternalName, s.Spec.ClusterIP = corev1.ServiceTypeExternalName, "Bad_Name", "10.96.0.5"
	}, forbidden+" spec.clusterIP", invalid+" spec.externalName", forbidden+" spec.clusterIPs")
	check("externalTrafficPolicy only for external services", func(s *corev1.Service) {
		s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	}, invalid+" spec.externalTrafficPolicy")
	check("session affinity", func(s *corev1.Service) { s.Spec.SessionAffinity = "Sticky" }, notSupported+" spec.sessionAffinity")
	check("traffic distribution", func(s *corev1.Service) { s.Spec.TrafficDistribution = ptr("PreferFar") }, notSupported+" spec.trafficDistribution")
	check("PreferSameNode", func(s *corev1.Service) {
		s.Spec.TrafficDistribution = ptr(corev1.ServiceTrafficDistributionPreferSameNode)
	})
	check("selector labels", func(s *corev1.Service) { s.Spec.Selector = map[string]string{"a b": "c"} }, invalid+" spec.selector")
	check("external IPs", func(s *corev1.Service) { s.Spec.ExternalIPs = []string{"127.0.0.1", "x"} },
		invalid+" spec.externalIPs[0]", invalid+" spec.externalIPs[1]")
	// kube-apiserver's IP parser takes no zone (netip's does).
	check("zoned addresses", func(s *corev1.Service) {
		s.Spec.ClusterIPs = []string{"fd00::10%eth0"}
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
		s.Spec.ExternalIPs = []string{"fd00::1%eth0"}
	}, invalid+" spec.clusterIPs[0]", invalid+" spec.externalIPs[0]")
	check("source ranges only for LoadBalancers, as CIDRs", func(s *corev1.Service) { s.Spec.LoadBalancerSourceRanges = []string{"10.0.0.0/8", "x"} },
		forbidden+" spec.LoadBalancerSourceRanges", invalid+" spec.LoadBalancerSourceRanges[1]")
	check("healthCheckNodePort only for Local LoadBalancers", func(s *corev1.Service) { s.Spec.HealthCheckNodePort = 30000 },
		invalid+" spec.healthCheckNodePort")
}

func TestServiceUpdate(t *testing.T) {
	ctx := context.Background()
	svcs := find(t, corev1.SchemeGroupVersion, "services")
	old := validService()
	old.Spec.Type = corev1.ServiceTypeNodePort
	svcs.Strategy.Default(old)
	old.Spec.ClusterIP, old.Spec.ClusterIPs = "10.96.0.10", []string{"10.96.0.10"}
	old.Spec.Ports[0].NodePort = 30080

	// Leaving the allocated values out keeps them.
	s := old.DeepCopy()
	s.Spec.ClusterIP, s.Spec.ClusterIPs, s.Spec.Ports[0].NodePort = "", nil, 0
	svcs.Strategy.PrepareForUpdate(ctx, s, old)
	svcs.Strategy.Default(s)
	if s.Spec.ClusterIP != "10.96.0.10" || s.Spec.Ports[0].NodePort != 30080 {
		t.Fatalf("allocated values not kept: %+v", s.Spec)
	}
	wantErrors(t, svcs.Strategy.ValidateUpdate(ctx, s, old))

	// The address is checked once the families are initialized, by the
	// allocating storage.
	s.Spec.ClusterIP, s.Spec.ClusterIPs = "10.96.0.11", []string{"10.96.0.11"}
	wantErrors(t, ValidateServiceIPFamiliesUpdate(s, old), invalid+" spec.clusterIPs[0]")

	// An old client sending clusterIP alone keeps both stored addresses.
	dual := old.DeepCopy()
	dual.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10"}
	oldClient := dual.DeepCopy()
	oldClient.Spec.ClusterIPs = nil
	svcs.Strategy.Default(oldClient)
	svcs.Strategy.PrepareForUpdate(ctx, oldClient, dual)
	if !slices.Equal(oldClient.Spec.ClusterIPs, dual.Spec.ClusterIPs) {
		t.Fatalf("an old client's update dropped the secondary address: %v", oldClient.Spec.ClusterIPs)
	}

	// Moving to ExternalName drops the address.
	ext := old.DeepCopy()
	ext.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}
	svcs.Strategy.PrepareForUpdate(ctx, ext, old)
	svcs.Strategy.Default(ext)
	wantErrors(t, svcs.Strategy.ValidateUpdate(ctx, ext, old))
	// ... also when the client only changes the type: the server-filled
	// addresses, families and policy go (kubectl patch --type merge).
	withIPs := old.DeepCopy()
	withIPs.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	withIPs.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicySingleStack)
	patched := withIPs.DeepCopy()
	patched.Spec.Type, patched.Spec.ExternalName, patched.Spec.ExternalTrafficPolicy = corev1.ServiceTypeExternalName, "example.com", ""
	patched.Spec.Ports[0].NodePort = 0
	svcs.Strategy.PrepareForUpdate(ctx, patched, withIPs)
	if patched.Spec.ClusterIP != "" || patched.Spec.ClusterIPs != nil || patched.Spec.IPFamilies != nil || patched.Spec.IPFamilyPolicy != nil {
		t.Fatalf("type change to ExternalName kept IP fields: %+v", patched.Spec)
	}
	wantErrors(t, svcs.Strategy.ValidateUpdate(ctx, patched, withIPs))

	// Status writes keep the spec.
	st := old.DeepCopy()
	st.Spec.Ports[0].Port = 81
	st.Status.LoadBalancer.Ingress = []corev1.LoadBalancerIngress{{IP: "203.0.113.7"}}
	svcs.Status.PrepareForUpdate(ctx, st, old)
	if st.Spec.Ports[0].Port != 80 {
		t.Fatal("status write changed the spec")
	}
	wantErrors(t, svcs.Status.ValidateUpdate(ctx, st, old))
	st.Status.LoadBalancer.Ingress[0].IP = "nope"
	wantErrors(t, svcs.Status.ValidateUpdate(ctx, st, old), invalid+" status.loadBalancer.ingress[0].ip")
}

func TestServiceTable(t *testing.T) {
	svcs := find(t, corev1.SchemeGroupVersion, "services")
	s := validService()
	s.Spec.Type = corev1.ServiceTypeNodePort
	s.Spec.ClusterIP = "10.96.0.10"
	s.Spec.Ports = []corev1.ServicePort{{Port: 80, NodePort: 30080, Protocol: "TCP"}, {Port: 53, Protocol: "UDP"}}
	assertRow(t, svcs, s, "Name,Type,Cluster-IP,External-IP,Port(s),Age,Selector*",
		"web", "NodePort", "10.96.0.10", "<none>", "80:30080/TCP,53/UDP", "90s", "app=web")
	lb := validService()
	lb.Spec.Type, lb.Spec.ClusterIP, lb.Spec.Selector = corev1.ServiceTypeLoadBalancer, "10.96.0.11", nil
	lb.Spec.Ports[0].Protocol = "TCP"
	assertRow(t, svcs, lb, "Name,Type,Cluster-IP,External-IP,Port(s),Age,Selector*",
		"web", "LoadBalancer", "10.96.0.11", "<pending>", "80/TCP", "90s", "<none>")
	dual := validService()
	dual.Spec.Type, dual.Spec.ClusterIP, dual.Spec.ClusterIPs = corev1.ServiceTypeClusterIP, "10.96.0.12", []string{"10.96.0.12", "fd00::12"}
	dual.Spec.Ports[0].Protocol = "TCP"
	assertRow(t, svcs, dual, "Name,Type,Cluster-IP,External-IP,Port(s),Age,Selector*",
		"web", "ClusterIP", "10.96.0.12,fd00::12", "<none>", "80/TCP", "90s", "app=web")
	ext := validService()
	ext.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}
	assertRow(t, svcs, ext, "Name,Type,Cluster-IP,External-IP,Port(s),Age,Selector*",
		"web", "ExternalName", "<none>", "example.com", "<none>", "90s", "<none>")
}

func TestEndpoints(t *testing.T) {
	ctx := context.Background()
	eps := find(t, corev1.SchemeGroupVersion, "endpoints")
	e := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default", CreationTimestamp: metav1.NewTime(testNow.Add(-90e9))},
		Subsets: []corev1.EndpointSubset{{
			Addresses: []corev1.EndpointAddress{{IP: "10.1.0.1"}, {IP: "10.1.0.2"}, {IP: "10.1.0.3"}},
			Ports:     []corev1.EndpointPort{{Name: "http", Port: 8080}, {Name: "metrics", Port: 9090}},
		}},
	}
	eps.Strategy.Default(e)
	if e.Subsets[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatal("protocol not defaulted")
	}
	wantErrors(t, eps.Strategy.Validate(ctx, e))
	assertRow(t, eps, e, "Name,Endpoints,Age", "web", "10.1.0.1:8080,10.1.0.2:8080,10.1.0.3:8080 + 3 more...", "90s")

	bad := e.DeepCopy()
	bad.Subsets[0].Addresses = append(bad.Subsets[0].Addresses, corev1.EndpointAddress{IP: "127.0.0.1"}, corev1.EndpointAddress{IP: "x"},
		corev1.EndpointAddress{IP: "fd00::1%eth0"})
	bad.Subsets[0].Ports = append(bad.Subsets[0].Ports, corev1.EndpointPort{Port: 0, Protocol: "TCP"})
	bad.Subsets = append(bad.Subsets, corev1.EndpointSubset{})
	wantErrors(t, eps.Strategy.Validate(ctx, bad), invalid+" subsets[0].addresses[3].ip", invalid+" subsets[0].addresses[4].ip", invalid+" subsets[0].addresses[5].ip",
		required+" subsets[0].ports[2].name", invalid+" subsets[0].ports[2].port", required+" subsets[1]")
	empty := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "none", Namespace: "default", CreationTimestamp: metav1.NewTime(testNow.Add(-90e9))}}
	assertRow(t, eps, empty, "Name,Endpoints,Age", "none", "<none>", "90s")
}
