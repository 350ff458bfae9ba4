package endpointslice

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func service(mods ...func(*corev1.Service)) *corev1.Service {
	s := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "svc-uid", Labels: map[string]string{"app": "web"}},
		Spec: corev1.ServiceSpec{
			Selector:  map[string]string{"app": "web"},
			ClusterIP: "10.96.0.10",
			Ports:     []corev1.ServicePort{{Name: "http", Port: 80, Protocol: corev1.ProtocolTCP, TargetPort: intstr.FromInt32(8080)}},
			// As the API server fills them.
			IPFamilies: []corev1.IPFamily{corev1.IPv4Protocol},
		},
	}
	for _, m := range mods {
		m(s)
	}
	return s
}

func pod(name, ip string, mods ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip,
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	for _, m := range mods {
		m(p)
	}
	return p
}

func notReady(p *corev1.Pod) { p.Status.Conditions[0].Status = corev1.ConditionFalse }

func terminating(p *corev1.Pod) { now := metav1.Now(); p.DeletionTimestamp = &now }

// apply plays a plan on slices as the API server would (names for
// creates, generations), returning the new set.
func apply(t *testing.T, current []*discoveryv1.EndpointSlice, plan Plan) []*discoveryv1.EndpointSlice {
	t.Helper()
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range current {
		byName[s.Name] = s
	}
	for _, s := range plan.Delete {
		delete(byName, s.Name)
	}
	for _, s := range plan.Update {
		if byName[s.Name] == nil {
			t.Fatalf("update of missing slice %s", s.Name)
		}
		byName[s.Name] = s
	}
	for i, s := range plan.Create {
		c := s.DeepCopy()
		c.Name = fmt.Sprintf("%s%d-%d", s.GenerateName, len(byName), i)
		c.UID = types.UID("slice-" + c.Name)
		byName[c.Name] = c
	}
	var out []*discoveryv1.EndpointSlice
	for _, s := range byName {
		out = append(out, s)
	}
	return out
}

// addresses renders every slice's ports and addresses (with ready,
// serving, terminating as r/s/t or -) sorted, one line per slice.
func addresses(ss []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range ss {
		var ports, eps []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s:%d", *p.Name, *p.Port))
		}
		for _, e := range s.Endpoints {
			c := e.Conditions
			flag := func(b *bool, l string) string {
				if *b {
					return l
				}
				return "-"
			}
			eps = append(eps, e.Addresses[0]+"/"+flag(c.Ready, "r")+flag(c.Serving, "s")+flag(c.Terminating, "t"))
		}
		slices.Sort(eps)
		out = append(out, strings.Join(ports, ",")+" "+strings.Join(eps, ","))
	}
	slices.Sort(out)
	return out
}

func TestReconcile(t *testing.T) {
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want []string
	}{
		{"ready pods", service(), []*corev1.Pod{pod("a", "10.1.0.1"), pod("b", "10.1.0.2")},
			[]string{"http:8080 10.1.0.1/rs-,10.1.0.2/rs-"}},
		{"not ready", service(), []*corev1.Pod{pod("a", "10.1.0.1", notReady)}, []string{"http:8080 10.1.0.1/---"}},
		{"terminating pods stay, not ready, serving as their readiness", service(),
			[]*corev1.Pod{pod("a", "10.1.0.1", terminating), pod("b", "10.1.0.2", terminating, notReady)},
			[]string{"http:8080 10.1.0.1/-st,10.1.0.2/--t"}},
		{"publishNotReadyAddresses makes every endpoint ready", service(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true }),
			[]*corev1.Pod{pod("a", "10.1.0.1", notReady), pod("b", "10.1.0.2", terminating)},
			[]string{"http:8080 10.1.0.1/r--,10.1.0.2/rst"}},
		{"terminal, IP-less and unmatched pods are left out", service(), []*corev1.Pod{
			pod("done", "10.1.0.1", func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }),
			pod("pending", ""),
			pod("other", "10.1.0.3", func(p *corev1.Pod) { p.Labels = map[string]string{"app": "db"} }),
		}, []string{" "}},
		{"named ports per pod: pods differing in it get separate slices", service(func(s *corev1.Service) {
			s.Spec.Ports[0].TargetPort = intstr.FromString("web")
		}), []*corev1.Pod{
			pod("a", "10.1.0.1", withPort("web", 8080)), pod("b", "10.1.0.2", withPort("web", 9090)), pod("c", "10.1.0.3"),
		}, []string{" 10.1.0.3/rs-", "http:8080 10.1.0.1/rs-", "http:9090 10.1.0.2/rs-"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			plan := Reconcile(Input{Service: tc.svc, Pods: tc.pods})
			got := addresses(apply(t, nil, plan))
			if !slices.Equal(got, tc.want) {
				t.Fatalf("slices\n got  %q\n want %q", got, tc.want)
			}
			for _, s := range plan.Create {
				ref := s.OwnerReferences[0]
				if s.GenerateName != "web-" || s.AddressType != discoveryv1.AddressTypeIPv4 || s.Labels[discoveryv1.LabelServiceName] != "web" ||
					s.Labels[discoveryv1.LabelManagedBy] != ControllerName || s.Labels["app"] != "web" ||
					ref.UID != "svc-uid" || ref.Kind != "Service" || !*ref.Controller || !*ref.BlockOwnerDeletion {
					t.Errorf("slice meta %+v", s.ObjectMeta)
				}
			}
		})
	}
}

func withPort(name string, port int32) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Containers = []corev1.Container{{Name: "c", Ports: []corev1.ContainerPort{{Name: name, ContainerPort: port, Protocol: corev1.ProtocolTCP}}}}
	}
}

// TestReconcileConverges walks one service through changes: each step's
// plan applied to the last state gives the wanted slices, and deciding
// again over the result writes nothing.
func TestReconcileConverges(t *testing.T) {
	svc := service()
	var state []*discoveryv1.EndpointSlice
	step := func(name string, svc *corev1.Service, pods []*corev1.Pod, maxPer int, want []string, wantWrites string) {
		t.Helper()
		plan := Reconcile(Input{Service: svc, Pods: pods, Slices: state, MaxEndpointsPerSlice: maxPer})
		if got := fmt.Sprintf("create %d update %d delete %d", len(plan.Create), len(plan.Update), len(plan.Delete)); got != wantWrites {
			t.Errorf("%s: %s, want %s", name, got, wantWrites)
		}
		state = apply(t, state, plan)
		if got := addresses(state); !slices.Equal(got, want) {
			t.Fatalf("%s: slices\n got  %q\n want %q", name, got, want)
		}
		if again := Reconcile(Input{Service: svc, Pods: pods, Slices: state, MaxEndpointsPerSlice: maxPer}); !again.Empty() {
			t.Fatalf("%s: an unchanged state writes %+v", name, again)
		}
	}
	step("no pods: a placeholder", svc, nil, 0, []string{" "}, "create 1 update 0 delete 0")
	a, b := pod("a", "10.1.0.1"), pod("b", "10.1.0.2")
	step("pods: the placeholder is reused", svc, []*corev1.Pod{a, b}, 0, []string{"http:8080 10.1.0.1/rs-,10.1.0.2/rs-"}, "create 0 update 1 delete 0")
	step("a pod not ready", svc, []*corev1.Pod{a, pod("b", "10.1.0.2", notReady)}, 0, []string{"http:8080 10.1.0.1/rs-,10.1.0.2/---"}, "create 0 update 1 delete 0")
	step("a pod gone", svc, []*corev1.Pod{a}, 0, []string{"http:8080 10.1.0.1/rs-"}, "create 0 update 1 delete 0")
	var five []*corev1.Pod
	for i := range 5 {
		five = append(five, pod(fmt.Sprint("p", i), fmt.Sprintf("10.1.0.%d", i+1)))
	}
	step("over the maximum: two slices", svc, five, 3, []string{"http:8080 10.1.0.1/rs-,10.1.0.2/rs-,10.1.0.3/rs-", "http:8080 10.1.0.4/rs-,10.1.0.5/rs-"},
		"create 1 update 1 delete 0")
	step("one more fills the slice with room", svc, append(slices.Clone(five), pod("p5", "10.1.0.6")), 3,
		[]string{"http:8080 10.1.0.1/rs-,10.1.0.2/rs-,10.1.0.3/rs-", "http:8080 10.1.0.4/rs-,10.1.0.5/rs-,10.1.0.6/rs-"}, "create 0 update 1 delete 0")
	step("labels follow the service", service(func(s *corev1.Service) { s.Labels["tier"] = "front" }), append(slices.Clone(five), pod("p5", "10.1.0.6")), 3,
		[]string{"http:8080 10.1.0.1/rs-,10.1.0.2/rs-,10.1.0.3/rs-", "http:8080 10.1.0.4/rs-,10.1.0.5/rs-,10.1.0.6/rs-"}, "create 0 update 2 delete 0")
	step("a port change replaces the slices in place", service(func(s *corev1.Service) {
		s.Labels["tier"] = "front"
		s.Spec.Ports[0].TargetPort = intstr.FromInt32(9000)
	}), []*corev1.Pod{a}, 3, []string{"http:9000 10.1.0.1/rs-"}, "create 0 update 1 delete 1")
	step("every pod gone: back to a placeholder", service(func(s *corev1.Service) {
		s.Labels["tier"] = "front"
	}), nil, 3, []string{" "}, "create 0 update 1 delete 0")
}

func TestReconcileLeavesAlone(t *testing.T) {
	for name, svc := range map[string]*corev1.Service{
		"no selector":  service(func(s *corev1.Service) { s.Spec.Selector = nil }),
		"ExternalName": service(func(s *corev1.Service) { s.Spec.Type = corev1.ServiceTypeExternalName }),
	} {
		if plan := Reconcile(Input{Service: svc, Pods: []*corev1.Pod{pod("a", "10.1.0.1")}}); !plan.Empty() {
			t.Errorf("%s: %+v", name, plan)
		}
	}
}

func TestReconcileDetails(t *testing.T) {
	// Zone, node, hostname, target reference; headless label.
	svc := service(func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone })
	p := pod("a", "10.1.0.1", func(p *corev1.Pod) { p.Spec.Hostname, p.Spec.Subdomain = "a", "web" })
	nodes := func(name string) (string, bool) { return map[string]string{"node-1": "zone-a"}[name], name == "node-1" }
	plan := Reconcile(Input{Service: svc, Pods: []*corev1.Pod{p, pod("lost", "10.1.0.2", func(p *corev1.Pod) { p.Spec.NodeName = "gone" })}, Nodes: nodes})
	if len(plan.Create) != 1 || len(plan.Create[0].Endpoints) != 1 {
		t.Fatalf("plan %+v", plan)
	}
	ep := plan.Create[0].Endpoints[0]
	if *ep.Zone != "zone-a" || *ep.NodeName != "node-1" || *ep.Hostname != "a" || ep.TargetRef.Name != "a" || ep.TargetRef.UID != "uid-a" {
		t.Errorf("endpoint %+v", ep)
	}
	if _, ok := plan.Create[0].Labels[corev1.IsHeadlessService]; !ok {
		t.Errorf("labels %v lack the headless label", plan.Create[0].Labels)
	}
	if !slices.Equal(plan.SkippedPods, []string{"lost"}) {
		t.Errorf("skipped %v, want the pod on the unknown node", plan.SkippedPods)
	}

	// Slices of another service of the same name (an older one) are
	// deleted; the delete is paired with the create.
	old := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-old", UID: "old",
		OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(&corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", UID: "older"}},
			corev1.SchemeGroupVersion.WithKind("Service"))}}, AddressType: discoveryv1.AddressTypeIPv4}
	plan = Reconcile(Input{Service: service(), Pods: []*corev1.Pod{pod("a", "10.1.0.1")}, Slices: []*discoveryv1.EndpointSlice{old}})
	if len(plan.Delete) != 1 || plan.Delete[0].Name != "web-old" || len(plan.Create) != 1 || len(plan.Update) != 0 {
		t.Errorf("another service's slice: %+v", plan)
	}
}

func TestWithTriggerTime(t *testing.T) {
	at := time.Date(2026, 11, 24, 7, 0, 0, 5, time.FixedZone("x", 3600))
	plan := Reconcile(Input{Service: service(), Pods: []*corev1.Pod{pod("a", "10.1.0.1")}}).WithTriggerTime(at)
	if got := plan.Create[0].Annotations[corev1.EndpointsLastChangeTriggerTime]; got != "2026-11-24T06:00:00.000000005Z" {
		t.Errorf("annotation %q", got)
	}
	state := apply(t, nil, plan)
	// Another write without a newer change drops the annotation; a sync
	// with nothing to write keeps the slice as it is.
	plan = Reconcile(Input{Service: service(), Pods: []*corev1.Pod{pod("a", "10.1.0.1"), pod("b", "10.1.0.2")}, Slices: state}).WithTriggerTime(time.Time{})
	if _, ok := plan.Update[0].Annotations[corev1.EndpointsLastChangeTriggerTime]; ok || state[0].Annotations[corev1.EndpointsLastChangeTriggerTime] == "" {
		t.Errorf("update annotations %v; the stored slice's must stay untouched", plan.Update[0].Annotations)
	}
	if again := Reconcile(Input{Service: service(), Pods: []*corev1.Pod{pod("a", "10.1.0.1")}, Slices: state}).WithTriggerTime(at); !again.Empty() {
		t.Errorf("the annotation alone made a write: %+v", again)
	}
}

func TestTrafficDistributionHints(t *testing.T) {
	nodes := func(name string) (string, bool) { return "zone-" + name, true }
	hints := func(dist string) []string {
		svc := service()
		if dist != "" {
			svc.Spec.TrafficDistribution = &dist
		}
		plan := Reconcile(Input{Service: svc, Pods: []*corev1.Pod{pod("a", "10.1.0.1"), pod("b", "10.1.0.2", notReady)}, Nodes: nodes})
		var out []string
		for _, e := range plan.Create[0].Endpoints {
			s := e.Addresses[0] + ":"
			if e.Hints != nil {
				for _, z := range e.Hints.ForZones {
					s += " zone " + z.Name
				}
				for _, n := range e.Hints.ForNodes {
					s += " node " + n.Name
				}
			}
			out = append(out, s)
		}
		return out
	}
	for dist, want := range map[string][]string{
		"":               {"10.1.0.1:", "10.1.0.2:"},
		"PreferClose":    {"10.1.0.1: zone zone-node-1", "10.1.0.2:"},
		"PreferSameZone": {"10.1.0.1: zone zone-node-1", "10.1.0.2:"},
		"PreferSameNode": {"10.1.0.1: zone zone-node-1 node node-1", "10.1.0.2:"},
	} {
		if got := hints(dist); !slices.Equal(got, want) {
			t.Errorf("trafficDistribution %q: %q, want %q (hints on ready endpoints only)", dist, got, want)
		}
	}
}
