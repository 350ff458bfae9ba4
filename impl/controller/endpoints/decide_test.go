package endpoints

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func service(mod ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", Labels: map[string]string{"team": "a"}},
		Spec: corev1.ServiceSpec{
			ClusterIP: "10.0.0.10",
			Selector:  map[string]string{"app": "web"},
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	for _, m := range mod {
		m(s)
	}
	return s
}

func pod(name, ip string, mod ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "c",
			Ports: []corev1.ContainerPort{{Name: "web", ContainerPort: 9090, Protocol: corev1.ProtocolTCP}}}}},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mod {
		m(p)
	}
	return p
}

// dualStack gives the pod a second IP (status.podIPs: podIP, then ip).
func dualStack(ip string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.PodIPs = []corev1.PodIP{{IP: p.Status.PodIP}, {IP: ip}}
	}
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

func addr(name, ip string) corev1.EndpointAddress {
	node := "node-1"
	return corev1.EndpointAddress{IP: ip, NodeName: &node,
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: "ns", Name: name, UID: types.UID("uid-" + name)}}
}

var http8080 = []corev1.EndpointPort{{Name: "http", Port: 8080, Protocol: corev1.ProtocolTCP}}

func TestSubsets(t *testing.T) {
	now := metav1.Now()
	tests := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want []corev1.EndpointSubset
	}{
		{"a dual-stack pod is listed by its address of the service's primary family",
			service(func(s *corev1.Service) {
				s.Spec.ClusterIP = "fd00::10"
				s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}
			}),
			[]*corev1.Pod{pod("a", "10.1.0.1", dualStack("fd01::1")), pod("v4only", "10.1.0.2")},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "fd01::1")}, Ports: http8080}}},
		{"an IPv4 service takes a dual-stack pod's IPv4 address, even when IPv6 is its primary",
			service(func(s *corev1.Service) { s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol} }),
			[]*corev1.Pod{pod("a", "fd01::1", dualStack("10.1.0.1"))},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.1.0.1")}, Ports: http8080}}},
		{"a headless service without families goes by the pod's primary IP",
			service(func(s *corev1.Service) { s.Spec.ClusterIP = "None" }),
			[]*corev1.Pod{pod("a", "fd01::1", dualStack("10.1.0.1"))},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "fd01::1")}, Ports: http8080}}},
		{"ready pods sorted by IP, whatever the pod order",
			service(), []*corev1.Pod{pod("b", "10.1.0.2"), pod("a", "10.1.0.1")},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.1.0.1"), addr("b", "10.1.0.2")}, Ports: http8080}}},
		{"pods the selector does not match, or of another namespace, are left out",
			service(), []*corev1.Pod{pod("a", "10.1.0.1"), pod("other", "10.1.0.9", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }),
				pod("elsewhere", "10.1.0.8", func(p *corev1.Pod) { p.Namespace = "other" })},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.1.0.1")}, Ports: http8080}}},
		{"not-ready pods are notReadyAddresses",
			service(), []*corev1.Pod{pod("a", "10.1.0.1"), pod("b", "10.1.0.2", notReady)},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.1.0.1")},
				NotReadyAddresses: []corev1.EndpointAddress{addr("b", "10.1.0.2")}, Ports: http8080}}},
		{"publishNotReadyAddresses makes not-ready and terminating pods addresses",
			service(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			[]*corev1.Pod{pod("a", "10.1.0.1", notReady), pod("b", "10.1.0.2", func(p *corev1.Pod) { p.DeletionTimestamp = &now })},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.1.0.1"), addr("b", "10.1.0.2")}, Ports: http8080}}},
		{"pods without an IP, terminal or terminating are left out",
			service(), []*corev1.Pod{pod("noip", ""),
				pod("done", "10.1.0.3", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
				pod("failed", "10.1.0.4", func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }),
				pod("going", "10.1.0.5", func(p *corev1.Pod) { p.DeletionTimestamp = &now })},
			nil},
		{"the IP may come from podIPs only",
			service(), []*corev1.Pod{pod("a", "", func(p *corev1.Pod) { p.Status.PodIPs = []corev1.PodIP{{IP: "10.1.0.1"}} })},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.1.0.1")}, Ports: http8080}}},
		{"a named target port resolves per pod; a pod without it is left out of that port",
			service(func(s *corev1.Service) {
				s.Spec.Ports = []corev1.ServicePort{{Name: "web", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web")}}
			}),
			[]*corev1.Pod{pod("a", "10.1.0.1"),
				pod("b", "10.1.0.2", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].ContainerPort = 9191 }),
				pod("udp", "10.1.0.3", func(p *corev1.Pod) { p.Spec.Containers[0].Ports[0].Protocol = corev1.ProtocolUDP }),
				pod("none", "10.1.0.4", func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil })},
			[]corev1.EndpointSubset{
				{Addresses: []corev1.EndpointAddress{addr("a", "10.1.0.1")}, Ports: []corev1.EndpointPort{{Name: "web", Port: 9090, Protocol: corev1.ProtocolTCP}}},
				{Addresses: []corev1.EndpointAddress{addr("b", "10.1.0.2")}, Ports: []corev1.EndpointPort{{Name: "web", Port: 9191, Protocol: corev1.ProtocolTCP}}},
			}},
		{"addresses with the same port set share a subset; ports are sorted; appProtocol kept",
			service(func(s *corev1.Service) {
				h2 := "kubernetes.io/h2c"
				s.Spec.Ports = []corev1.ServicePort{
					{Name: "web", Port: 81, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromString("web"), AppProtocol: &h2},
					{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}}
			}),
			[]*corev1.Pod{pod("a", "10.1.0.1"), pod("b", "10.1.0.2", func(p *corev1.Pod) { p.Spec.Containers[0].Ports = nil }), pod("c", "10.1.0.3")},
			func() []corev1.EndpointSubset {
				h2 := "kubernetes.io/h2c"
				return []corev1.EndpointSubset{
					{Addresses: []corev1.EndpointAddress{addr("b", "10.1.0.2")}, Ports: http8080},
					{Addresses: []corev1.EndpointAddress{addr("a", "10.1.0.1"), addr("c", "10.1.0.3")},
						Ports: []corev1.EndpointPort{http8080[0], {Name: "web", Port: 9090, Protocol: corev1.ProtocolTCP, AppProtocol: &h2}}},
				}
			}()},
		{"an unset target port is the service port",
			service(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.IntOrString{} }),
			[]*corev1.Pod{pod("a", "10.1.0.1")},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.1.0.1")},
				Ports: []corev1.EndpointPort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP}}}}},
		{"a headless service without ports gets addresses without ports",
			service(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone; s.Spec.Ports = nil }),
			[]*corev1.Pod{pod("a", "10.1.0.1")},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{addr("a", "10.1.0.1")}}}},
		{"a service with a cluster IP and no ports gets no addresses",
			service(func(s *corev1.Service) { s.Spec.Ports = nil }),
			[]*corev1.Pod{pod("a", "10.1.0.1")}, nil},
		{"the hostname is the pod's when its subdomain names the service",
			service(), []*corev1.Pod{
				pod("a", "10.1.0.1", func(p *corev1.Pod) { p.Spec.Hostname = "a-host"; p.Spec.Subdomain = "web" }),
				pod("b", "10.1.0.2", func(p *corev1.Pod) { p.Spec.Hostname = "b-host"; p.Spec.Subdomain = "other" })},
			[]corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{
				func() corev1.EndpointAddress { a := addr("a", "10.1.0.1"); a.Hostname = "a-host"; return a }(),
				addr("b", "10.1.0.2")}, Ports: http8080}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, truncated := Subsets(tt.svc, tt.pods)
			if truncated {
				t.Error("truncated")
			}
			if !equality.Semantic.DeepEqual(got, tt.want) {
				t.Errorf("subsets\n got %+v\nwant %+v", got, tt.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	pods := []*corev1.Pod{pod("a", "10.1.0.1"), pod("b", "10.1.0.2", notReady)}
	created := Decide(service(), pods, nil)
	if created.Action != Create {
		t.Fatalf("no Endpoints yet: %v, want create", created.Action)
	}
	ep := created.Endpoints
	if ep.Namespace != "ns" || ep.Name != "web" || ep.Labels["team"] != "a" || len(ep.Subsets) != 1 {
		t.Fatalf("created %+v", ep)
	}
	if _, ok := ep.Labels[HeadlessLabel]; ok {
		t.Fatal("the headless label on a service with a cluster IP")
	}

	stored := ep.DeepCopy()
	stored.ResourceVersion = "7"
	if p := Decide(service(), []*corev1.Pod{pods[1], pods[0]}, stored); p.Action != None {
		t.Fatalf("unchanged state (pods in another order): %v, want none", p.Action)
	}

	if p := Decide(service(), pods[:1], stored); p.Action != Update || len(p.Endpoints.Subsets[0].NotReadyAddresses) != 0 ||
		p.Endpoints.ResourceVersion != "7" {
		t.Fatalf("a pod gone: %v %+v, want an update from the stored object", p.Action, p.Endpoints)
	}

	relabelled := service(func(s *corev1.Service) { s.Labels = map[string]string{"team": "b"} })
	if p := Decide(relabelled, pods, stored); p.Action != Update || p.Endpoints.Labels["team"] != "b" {
		t.Fatalf("service labels changed: %v, want an update with them", p.Action)
	}

	headless := service(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })
	if p := Decide(headless, pods, stored); p.Action != Update || p.Endpoints.Labels[HeadlessLabel] != "" || len(p.Endpoints.Labels) != 2 {
		t.Fatalf("headless: %v %v, want the headless label added", p.Action, p.Endpoints.Labels)
	}

	external := service(func(s *corev1.Service) {
		s.Spec.Type, s.Spec.ExternalName, s.Spec.ClusterIP = corev1.ServiceTypeExternalName, "example.com", ""
	})
	if p := Decide(external, pods, nil); p.Action != None {
		t.Fatalf("ExternalName service with a selector: %v, want no Endpoints", p.Action)
	}
	if p := Decide(external, pods, stored); p.Action != None {
		t.Fatalf("ExternalName service with a selector and Endpoints: %v, want them left alone", p.Action)
	}

	noSelector := service(func(s *corev1.Service) { s.Spec.Selector = nil })
	if p := Decide(noSelector, pods, stored); p.Action != None {
		t.Fatalf("service without a selector: %v, want its Endpoints left alone", p.Action)
	}
	if p := Decide(noSelector, pods, nil); p.Action != None {
		t.Fatalf("service without a selector and no Endpoints: %v, want none created", p.Action)
	}

	if p := Decide(nil, nil, stored); p.Action != Delete || p.Endpoints != stored {
		t.Fatalf("service gone: %v, want its Endpoints deleted", p.Action)
	}
	if p := Decide(nil, nil, nil); p.Action != None {
		t.Fatalf("service and Endpoints gone: %v", p.Action)
	}

	if p := Decide(service(), nil, nil); p.Action != Create || len(p.Endpoints.Subsets) != 0 {
		t.Fatalf("no pods: %v, want empty Endpoints created", p.Action)
	}

	stale := stored.DeepCopy()
	stale.Annotations = map[string]string{OverCapacityAnnotation: "truncated", "keep": "me"}
	if p := Decide(service(), pods, stale); p.Action != Update || p.Endpoints.Annotations[OverCapacityAnnotation] != "" ||
		p.Endpoints.Annotations["keep"] != "me" {
		t.Fatalf("a stale over-capacity annotation: %v %v, want it removed and others kept", p.Action, p.Endpoints.Annotations)
	}
}

func TestOverCapacity(t *testing.T) {
	var pods []*corev1.Pod
	for i := range 1200 {
		mod := []func(*corev1.Pod){}
		if i%4 == 0 {
			mod = append(mod, notReady) // 300 not ready, 900 ready
		}
		pods = append(pods, pod(fmt.Sprintf("p%04d", i), fmt.Sprintf("10.%d.%d.%d", i/65536, i/256%256, i%256), mod...))
	}
	p := Decide(service(), pods, nil)
	ep := p.Endpoints
	if ep.Annotations[OverCapacityAnnotation] != "truncated" {
		t.Fatalf("annotations %v, want over-capacity truncated", ep.Annotations)
	}
	ready, notReadyN := 0, 0
	for _, s := range ep.Subsets {
		ready += len(s.Addresses)
		notReadyN += len(s.NotReadyAddresses)
	}
	if ready != 900 || notReadyN != 100 {
		t.Fatalf("kept %d ready, %d not ready; want all 900 ready and 100 not ready", ready, notReadyN)
	}
	stored := ep.DeepCopy()
	if p := Decide(service(), pods, stored); p.Action != None {
		t.Fatalf("truncated and unchanged: %v, want none", p.Action)
	}

	for i := range pods {
		pods[i].Status.Conditions[0].Status = corev1.ConditionTrue
	}
	p = Decide(service(), pods, stored)
	ready, notReadyN = 0, 0
	for _, s := range p.Endpoints.Subsets {
		ready += len(s.Addresses)
		notReadyN += len(s.NotReadyAddresses)
	}
	if p.Action != Update || ready != 1000 || notReadyN != 0 {
		t.Fatalf("1200 ready: %v, kept %d ready, %d not ready; want 1000 ready", p.Action, ready, notReadyN)
	}
}
