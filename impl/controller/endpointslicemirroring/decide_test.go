package endpointslicemirroring

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/controller/endpointslice"
)

func endpointsObject(mods ...func(*corev1.Endpoints)) *corev1.Endpoints {
	e := &corev1.Endpoints{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", UID: "ep-uid", Labels: map[string]string{"app": "db"},
			Annotations: map[string]string{"note": "x", corev1.LastAppliedConfigAnnotation: "{}"}},
		Subsets: []corev1.EndpointSubset{{
			Addresses:         []corev1.EndpointAddress{{IP: "192.168.0.1", Hostname: "db-0"}, {IP: "192.168.0.2"}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "192.168.0.3"}},
			Ports:             []corev1.EndpointPort{{Name: "sql", Port: 5432, Protocol: corev1.ProtocolTCP}},
		}},
	}
	for _, m := range mods {
		m(e)
	}
	return e
}

// apply plays a plan as the API server would.
func apply(t *testing.T, current []*discoveryv1.EndpointSlice, plan endpointslice.Plan) []*discoveryv1.EndpointSlice {
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

// render shows each slice as "type ports: ip/ready ...", sorted.
func render(ss []*discoveryv1.EndpointSlice) []string {
	var out []string
	for _, s := range ss {
		var ports, eps []string
		for _, p := range s.Ports {
			ports = append(ports, fmt.Sprintf("%s:%d", *p.Name, *p.Port))
		}
		for _, e := range s.Endpoints {
			eps = append(eps, fmt.Sprintf("%s/%t", e.Addresses[0], *e.Conditions.Ready))
		}
		out = append(out, fmt.Sprintf("%s %s: %s", s.AddressType, strings.Join(ports, ","), strings.Join(eps, " ")))
	}
	slices.Sort(out)
	return out
}

func TestReconcileMirrors(t *testing.T) {
	var state []*discoveryv1.EndpointSlice
	step := func(name string, in Input, want []string, writes string) {
		t.Helper()
		in.Slices = state
		res := Reconcile(in)
		if got := fmt.Sprintf("create %d update %d delete %d", len(res.Plan.Create), len(res.Plan.Update), len(res.Plan.Delete)); got != writes {
			t.Errorf("%s: %s, want %s", name, got, writes)
		}
		state = apply(t, state, res.Plan)
		if got := render(state); !slices.Equal(got, want) {
			t.Fatalf("%s: slices\n got  %q\n want %q", name, got, want)
		}
		in.Slices = state
		if again := Reconcile(in); !again.Plan.Empty() {
			t.Fatalf("%s: an unchanged state writes %+v", name, again.Plan)
		}
	}
	ep := endpointsObject()
	step("mirrored", Input{Endpoints: ep, ServiceWithoutSelector: true},
		[]string{"IPv4 sql:5432: 192.168.0.1/true 192.168.0.2/true 192.168.0.3/false"}, "create 1 update 0 delete 0")
	s := state[0]
	ref := metav1.GetControllerOf(s)
	if ref == nil || ref.Kind != "Endpoints" || ref.UID != "ep-uid" || s.GenerateName != "db-" ||
		s.Labels["app"] != "db" || s.Labels[discoveryv1.LabelServiceName] != "db" || s.Labels[discoveryv1.LabelManagedBy] != ControllerName ||
		s.Annotations["note"] != "x" || s.Annotations[corev1.LastAppliedConfigAnnotation] != "" || *s.Endpoints[0].Hostname != "db-0" {
		t.Fatalf("slice meta %+v, endpoint %+v", s.ObjectMeta, s.Endpoints[0])
	}
	step("an address leaves and an IPv6 one comes: a second slice", Input{Endpoints: endpointsObject(func(e *corev1.Endpoints) {
		e.Subsets[0].Addresses = []corev1.EndpointAddress{{IP: "192.168.0.1", Hostname: "db-0"}, {IP: "fd00::1"}}
	}), ServiceWithoutSelector: true},
		[]string{"IPv4 sql:5432: 192.168.0.1/true 192.168.0.3/false", "IPv6 sql:5432: fd00::1/true"}, "create 1 update 1 delete 0")
	step("labels follow the Endpoints", Input{Endpoints: endpointsObject(func(e *corev1.Endpoints) {
		e.Labels["tier"] = "data"
		e.Subsets[0].Addresses = []corev1.EndpointAddress{{IP: "192.168.0.1", Hostname: "db-0"}, {IP: "fd00::1"}}
	}), ServiceWithoutSelector: true},
		[]string{"IPv4 sql:5432: 192.168.0.1/true 192.168.0.3/false", "IPv6 sql:5432: fd00::1/true"}, "create 0 update 2 delete 0")
	step("a port change rewrites the slice in place", Input{Endpoints: endpointsObject(func(e *corev1.Endpoints) {
		e.Labels["tier"] = "data"
		e.Subsets[0].Ports[0].Port = 5433
		e.Subsets[0].Addresses = []corev1.EndpointAddress{{IP: "192.168.0.1", Hostname: "db-0"}}
	}), ServiceWithoutSelector: true},
		[]string{"IPv4 sql:5433: 192.168.0.1/true 192.168.0.3/false"}, "create 0 update 1 delete 1")
	step("skip-mirror deletes the slices", Input{Endpoints: endpointsObject(func(e *corev1.Endpoints) {
		e.Labels[discoveryv1.LabelSkipMirror] = "true"
	}), ServiceWithoutSelector: true}, nil, "create 0 update 0 delete 1")
}

func TestReconcileDoesNotMirror(t *testing.T) {
	slice := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "db-x"}}
	for name, in := range map[string]Input{
		"Endpoints gone":                         {Endpoints: nil, ServiceWithoutSelector: true},
		"service with a selector":                {Endpoints: endpointsObject(), ServiceWithoutSelector: false},
		"leader-election lock":                   {Endpoints: endpointsObject(func(e *corev1.Endpoints) { e.Annotations[leaderAnnotation] = "{}" }), ServiceWithoutSelector: true},
		"skip-mirror (the kubernetes Endpoints)": {Endpoints: endpointsObject(func(e *corev1.Endpoints) { e.Labels[discoveryv1.LabelSkipMirror] = "true" }), ServiceWithoutSelector: true},
	} {
		if res := Reconcile(in); !res.Plan.Empty() {
			t.Errorf("%s without slices: %+v", name, res.Plan)
		}
		in.Slices = []*discoveryv1.EndpointSlice{slice}
		if res := Reconcile(in); len(res.Plan.Delete) != 1 || len(res.Plan.Create)+len(res.Plan.Update) != 0 {
			t.Errorf("%s: the mirrored slice is not deleted: %+v", name, res.Plan)
		}
	}
}

func TestReconcileLimitsAndRepacks(t *testing.T) {
	ep := endpointsObject(func(e *corev1.Endpoints) {
		e.Subsets = []corev1.EndpointSubset{
			{Addresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.2"}, {IP: "bad"}}, Ports: []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
			// Same ports: merged; an address ready in the other subset is ready.
			{NotReadyAddresses: []corev1.EndpointAddress{{IP: "10.0.0.1"}, {IP: "10.0.0.3"}, {IP: "10.0.0.4"}}, Ports: []corev1.EndpointPort{{Port: 80, Protocol: corev1.ProtocolTCP}}},
		}
	})
	res := Reconcile(Input{Endpoints: ep, ServiceWithoutSelector: true, MaxEndpointsPerSubset: 3})
	got := render(apply(t, nil, res.Plan))
	if want := []string{"IPv4 :80: 10.0.0.1/true 10.0.0.2/true 10.0.0.3/false"}; !slices.Equal(got, want) {
		t.Errorf("slices %q, want %q", got, want)
	}
	if res.InvalidAddresses != 1 || res.OverMax != 1 {
		t.Errorf("invalid %d, over the maximum %d; want 1 and 1", res.InvalidAddresses, res.OverMax)
	}
	// Endpoints being deleted get no new slices.
	ep.DeletionTimestamp = &metav1.Time{}
	if res := Reconcile(Input{Endpoints: ep, ServiceWithoutSelector: true}); len(res.Plan.Create) != 0 {
		t.Errorf("created slices for Endpoints being deleted: %+v", res.Plan)
	}
}

// TestReconcileAddressForms: an address is mirrored into the slice of its
// family in its canonical form, as kube-controller-manager parses and
// re-prints it: an IPv4-mapped IPv6 address is IPv4 (an IPv6 slice would
// refuse it); an address with a zone is no IP to it.
func TestReconcileAddressForms(t *testing.T) {
	for _, tc := range []struct {
		ip      string
		want    []string
		invalid int
	}{
		{"192.168.0.9", []string{"IPv4 sql:5432: 192.168.0.9/true"}, 0},
		{"::ffff:192.168.0.9", []string{"IPv4 sql:5432: 192.168.0.9/true"}, 0},
		{"fd00::1", []string{"IPv6 sql:5432: fd00::1/true"}, 0},
		{"FD00:0:0::0001", []string{"IPv6 sql:5432: fd00::1/true"}, 0},
		{"fd00::1%eth0", nil, 1},
		{"bad", nil, 1},
	} {
		ep := endpointsObject(func(e *corev1.Endpoints) {
			e.Subsets[0].Addresses = []corev1.EndpointAddress{{IP: tc.ip}}
			e.Subsets[0].NotReadyAddresses = nil
		})
		res := Reconcile(Input{Endpoints: ep, ServiceWithoutSelector: true})
		if got := render(apply(t, nil, res.Plan)); !slices.Equal(got, tc.want) || res.InvalidAddresses != tc.invalid {
			t.Errorf("%s: slices %q, %d invalid; want %q, %d", tc.ip, got, res.InvalidAddresses, tc.want, tc.invalid)
		}
	}
}
