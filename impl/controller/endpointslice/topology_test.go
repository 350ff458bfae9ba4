package endpointslice

import (
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func node(name, zone, cpu string, mods ...func(*corev1.Node)) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}},
		Status: corev1.NodeStatus{
			Allocatable: corev1.ResourceList{},
			Conditions:  []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}},
		},
	}
	if zone != "" {
		n.Labels[corev1.LabelTopologyZone] = zone
	}
	if cpu != "" {
		n.Status.Allocatable[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	for _, m := range mods {
		m(n)
	}
	return n
}

func ratios(t Topology) string {
	if t.CPURatios == nil {
		return "none: " + t.Insufficient
	}
	var out []string
	for _, z := range slices.Sorted(maps.Keys(t.CPURatios)) {
		out = append(out, fmt.Sprintf("%s=%.3f", z, t.CPURatios[z]))
	}
	return strings.Join(out, " ")
}

func TestNodeTopology(t *testing.T) {
	notReadyNode := func(n *corev1.Node) { n.Status.Conditions[0].Status = corev1.ConditionFalse }
	controlPlaneNode := func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/control-plane"] = "" }
	for _, tc := range []struct {
		name  string
		nodes []*corev1.Node
		want  string
	}{
		{"zones by allocatable CPU", []*corev1.Node{node("1", "a", "2"), node("2", "a", "2"), node("3", "b", "4"), node("4", "c", "8")},
			"a=0.250 b=0.250 c=0.500"},
		{"millicores count", []*corev1.Node{node("1", "a", "500m"), node("2", "b", "1500m")}, "a=0.250 b=0.750"},
		{"not ready and control-plane nodes do not count, even without a zone",
			[]*corev1.Node{node("1", "a", "1"), node("2", "b", "1"), node("3", "c", "6", notReadyNode), node("4", "", "6", controlPlaneNode),
				node("5", "", "", notReadyNode)},
			"a=0.500 b=0.500"},
		{"a ready node without a zone", []*corev1.Node{node("1", "a", "1"), node("2", "b", "1"), node("3", "", "1")}, "none: " + nodeWithoutZoneCPU},
		{"a ready node without allocatable CPU", []*corev1.Node{node("1", "a", "1"), node("2", "b", "1"), node("3", "c", "")}, "none: " + nodeWithoutZoneCPU},
		{"one zone", []*corev1.Node{node("1", "a", "1"), node("2", "a", "1"), node("3", "b", "1", notReadyNode)}, "none: " + oneZoneOnly},
		{"the older master label excludes a node too", []*corev1.Node{node("1", "a", "1"), node("2", "b", "3"),
			node("3", "c", "4", func(n *corev1.Node) { n.Labels["node-role.kubernetes.io/master"] = "" })}, "a=0.250 b=0.750"},
		{"a ready node with zero allocatable CPU", []*corev1.Node{node("1", "a", "1"), node("2", "b", "1"), node("3", "c", "0")}, "none: " + nodeWithoutZoneCPU},
		{"no nodes", nil, "none: " + noReadyNodes},
	} {
		if got := ratios(NodeTopology(tc.nodes)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
	if got := ratios(Topology{}); got != "none: " {
		t.Errorf("zero Topology: %s", got)
	}
}

func TestAllocate(t *testing.T) {
	three := Topology{CPURatios: map[string]float64{"a": 1.0 / 3, "b": 1.0 / 3, "c": 1.0 / 3}}
	skewed := Topology{CPURatios: map[string]float64{"a": 0.5, "b": 0.25, "c": 0.25}}
	for _, tc := range []struct {
		name      string
		topo      Topology
		endpoints int
		want      string // zone:min-max/desired, or the reason
	}{
		{"equal zones", three, 6, "a:2-2/2.00 b:2-2/2.00 c:2-2/2.00"},
		{"room above the minimums", three, 12, "a:4-4/4.00 b:4-4/4.00 c:4-4/4.00"},
		{"spare endpoints raise every maximum", three, 7, "a:2-3/2.33 b:2-3/2.33 c:2-3/2.33"},
		{"skewed", skewed, 4, "a:2-2/2.00 b:1-1/1.00 c:1-1/1.00"},
		{"skewed, more", skewed, 20, "a:9-10/10.00 b:5-6/5.00 c:5-6/5.00"},
		{"minimum above desired sets desired", Topology{CPURatios: map[string]float64{"a": 0.9, "b": 0.1}}, 5, "a:4-4/4.50 b:1-1/1.00"},
		// 6 / 1.2 is exactly 5: the minimum is not rounded up past it.
		{"a desired share at the threshold's whole number", Topology{CPURatios: map[string]float64{"a": 0.6, "b": 0.4}}, 10, "a:5-6/6.00 b:4-5/4.00"},
		{"a zone of 5% CPU still gets one endpoint", Topology{CPURatios: map[string]float64{"a": 0.95, "b": 0.05}}, 10, "a:8-9/9.50 b:1-2/1.00"},
		{"fewer endpoints than zones", three, 2, "fewer ready endpoints than zones (2 endpoints, 3 zones)"},
		{"minimums add up to more than there are", three, 4,
			"every zone's minimum share within the 20% overload threshold needs more endpoints than there are (4 endpoints, 3 zones)"},
		{"no topology", Topology{Insufficient: oneZoneOnly}, 10, oneZoneOnly},
		{"zero topology", Topology{}, 10, "no node information yet"},
	} {
		alloc, why := allocate(tc.topo, tc.endpoints)
		got := why
		if why == "" {
			var parts []string
			for _, z := range slices.Sorted(maps.Keys(alloc)) {
				a := alloc[z]
				parts = append(parts, fmt.Sprintf("%s:%d-%d/%.2f", z, a.minimum, a.maximum, a.desired))
			}
			got = strings.Join(parts, " ")
		}
		if got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// zonal builds a topology-mode Auto scenario: pods named like "a1" run on
// node-a (zone a) with addresses 10.1.0.1...
func zonal(annotation string, pods ...string) (*corev1.Service, []*corev1.Pod, func(string) (string, bool)) {
	svc := service(func(s *corev1.Service) { s.Annotations = map[string]string{annotation: "Auto"} })
	if annotation == corev1.DeprecatedAnnotationTopologyAwareHints {
		svc.Annotations[annotation] = "auto"
	}
	var ps []*corev1.Pod
	for i, name := range pods {
		zone := name[:1]
		ps = append(ps, pod(name, fmt.Sprintf("10.1.0.%d", i+1), func(p *corev1.Pod) { p.Spec.NodeName = "node-" + zone }))
	}
	nodes := func(name string) (string, bool) { return strings.TrimPrefix(name, "node-"), true }
	return svc, ps, nodes
}

// zoneHints renders every endpoint as pod:hint (or pod:- without hints),
// sorted, over all slices.
func zoneHints(ss []*discoveryv1.EndpointSlice) string {
	var out []string
	for _, s := range ss {
		for _, e := range s.Endpoints {
			h := "-"
			if e.Hints != nil {
				var zs []string
				for _, z := range e.Hints.ForZones {
					zs = append(zs, z.Name)
				}
				h = strings.Join(zs, "+")
			}
			out = append(out, e.TargetRef.Name+":"+h)
		}
	}
	slices.Sort(out)
	return strings.Join(out, " ")
}

func events(p Plan) string {
	var out []string
	for _, e := range p.Events {
		out = append(out, e.Type+" "+e.Reason+": "+e.Message)
	}
	return strings.Join(out, "; ")
}

func TestTopologyHints(t *testing.T) {
	equal := Topology{CPURatios: map[string]float64{"a": 1.0 / 3, "b": 1.0 / 3, "c": 1.0 / 3}}
	skewed := Topology{CPURatios: map[string]float64{"a": 0.5, "b": 0.25, "c": 0.25}}
	for _, tc := range []struct {
		name  string
		topo  Topology
		pods  []string
		want  string
		zones map[string]int
	}{
		{"every endpoint serves its zone", equal, []string{"a1", "a2", "b1", "b2", "c1", "c2"},
			"a1:a a2:a b1:b b2:b c1:c c2:c", map[string]int{"a": 2, "b": 2, "c": 2}},
		{"a zone above its share gives one endpoint to the zone below", skewed, []string{"a1", "b1", "b2", "c1"},
			"a1:a b1:a b2:b c1:c", map[string]int{"a": 2, "b": 1, "c": 1}},
		{"a zone without endpoints gets some from the others", equal, []string{"a1", "a2", "a3", "a4", "a5", "b1", "b2", "b3", "b4"},
			"a1:c a2:c a3:a a4:a a5:a b1:c b2:b b3:b b4:b", map[string]int{"a": 3, "b": 3, "c": 3}},
		{"a zone without nodes gives all its endpoints", Topology{CPURatios: map[string]float64{"a": 0.5, "b": 0.5}},
			[]string{"a1", "a2", "b1", "b2", "c1", "c2"}, "a1:a a2:a b1:b b2:b c1:a c2:b", map[string]int{"a": 3, "b": 3}},
		{"within half an endpoint nothing moves", Topology{CPURatios: map[string]float64{"a": 0.5, "b": 0.5}},
			[]string{"a1", "a2", "a3", "a4", "b1", "b2", "b3"}, "a1:a a2:a a3:a a4:a b1:b b2:b b3:b", map[string]int{"a": 4, "b": 3}},
	} {
		svc, pods, nodes := zonal(corev1.AnnotationTopologyMode, tc.pods...)
		plan := Reconcile(Input{Service: svc, Pods: pods, Nodes: nodes, Topology: tc.topo})
		if got := zoneHints(plan.Create); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if !maps.Equal(plan.ZoneHints[discoveryv1.AddressTypeIPv4], tc.zones) {
			t.Errorf("%s: zone hints %v, want %v", tc.name, plan.ZoneHints, tc.zones)
		}
		if got := events(plan); got != "Normal TopologyAwareHintsEnabled: Topology aware hints given, addressType: IPv4" {
			t.Errorf("%s: events %s", tc.name, got)
		}
		// Synced again over what it wrote, nothing changes, and no event.
		again := Reconcile(Input{Service: svc, Pods: pods, Nodes: nodes, Topology: tc.topo, Slices: apply(t, nil, plan), ZoneHints: plan.ZoneHints})
		if !again.Empty() || len(again.Events) > 0 || !maps.Equal(again.ZoneHints[discoveryv1.AddressTypeIPv4], tc.zones) {
			t.Errorf("%s: the second sync wrote %+v, events %s", tc.name, again, events(again))
		}
	}
}

func TestTopologyHintsAnnotations(t *testing.T) {
	equal := Topology{CPURatios: map[string]float64{"a": 0.5, "b": 0.5}}
	for _, tc := range []struct {
		name        string
		annotations map[string]string
		dist        string
		want        string
	}{
		{"topology-mode Auto", map[string]string{corev1.AnnotationTopologyMode: "Auto"}, "", "a1:a a2:a b1:b b2:b"},
		{"topology-mode auto", map[string]string{corev1.AnnotationTopologyMode: "auto"}, "", "a1:a a2:a b1:b b2:b"},
		{"the older annotation", map[string]string{corev1.DeprecatedAnnotationTopologyAwareHints: "auto"}, "", "a1:a a2:a b1:b b2:b"},
		{"the older annotation takes precedence", map[string]string{corev1.DeprecatedAnnotationTopologyAwareHints: "disabled",
			corev1.AnnotationTopologyMode: "Auto"}, "", "a1:- a2:- b1:- b2:-"},
		{"other values give none", map[string]string{corev1.AnnotationTopologyMode: "PreferZone"}, "", "a1:- a2:- b1:- b2:-"},
		{"Auto over trafficDistribution", map[string]string{corev1.AnnotationTopologyMode: "Auto"}, corev1.ServiceTrafficDistributionPreferSameNode,
			"a1:a a2:a b1:b b2:b"},
	} {
		svc, pods, nodes := zonal(corev1.AnnotationTopologyMode, "a1", "a2", "b1", "b2")
		svc.Annotations = tc.annotations
		if tc.dist != "" {
			svc.Spec.TrafficDistribution = &tc.dist
		}
		plan := Reconcile(Input{Service: svc, Pods: pods, Nodes: nodes, Topology: equal})
		if got := zoneHints(plan.Create); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestTopologyHintsRemoved: when hints cannot be given, every slice loses
// them (the unchanged ones are rewritten) and a warning says why.
func TestTopologyHintsRemoved(t *testing.T) {
	equal := Topology{CPURatios: map[string]float64{"a": 1.0 / 3, "b": 1.0 / 3, "c": 1.0 / 3}}
	svc, pods, nodes := zonal(corev1.AnnotationTopologyMode, "a1", "a2", "b1", "b2", "c1", "c2")
	hinted := Reconcile(Input{Service: svc, Pods: pods, Nodes: nodes, Topology: equal})
	state := apply(t, nil, hinted)
	if zoneHints(state) != "a1:a a2:a b1:b b2:b c1:c c2:c" {
		t.Fatalf("no hints to start with: %s", zoneHints(state))
	}
	noZone := pods[5].DeepCopy()
	noZone.Spec.NodeName = "node-"
	for _, tc := range []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		topo Topology
		want string
	}{
		{"fewer endpoints than zones", svc, pods[:2], equal,
			"Warning TopologyAwareHintsDisabled: Topology aware hints not given: fewer ready endpoints than zones (2 endpoints, 3 zones), addressType: IPv4"},
		{"a zone loses its endpoints: the others cannot spare its minimum", svc, pods[:4], equal,
			"Warning TopologyAwareHintsDisabled: Topology aware hints not given: every zone's minimum share within the 20% overload threshold needs more endpoints than there are (4 endpoints, 3 zones), addressType: IPv4"},
		{"not ready endpoints do not count", svc, []*corev1.Pod{pods[0], pods[1], pods[2], pods[3], pods[4], notReadyPod(pods[5])}, equal,
			"Warning TopologyAwareHintsDisabled: Topology aware hints not given: every zone's minimum share within the 20% overload threshold needs more endpoints than there are (5 endpoints, 3 zones), addressType: IPv4"},
		{"a ready endpoint without a zone", svc, []*corev1.Pod{pods[0], pods[1], pods[2], pods[3], pods[4], noZone}, equal,
			"Warning TopologyAwareHintsDisabled: Topology aware hints not given: a ready endpoint has no zone, addressType: IPv4"},
		{"the nodes are in one zone", svc, pods, Topology{Insufficient: oneZoneOnly},
			"Warning TopologyAwareHintsDisabled: Topology aware hints not given: " + oneZoneOnly + ", addressType: IPv4"},
		{"a node lacks its zone", svc, pods, NodeTopology([]*corev1.Node{node("1", "a", "1"), node("2", "b", "1"), node("3", "", "1")}),
			"Warning TopologyAwareHintsDisabled: Topology aware hints not given: " + nodeWithoutZoneCPU + ", addressType: IPv4"},
		{"the annotation is removed", service(), pods, equal,
			"Warning TopologyAwareHintsDisabled: Topology aware hints removed: the service's topology annotation is no longer Auto"},
	} {
		plan := Reconcile(Input{Service: tc.svc, Pods: tc.pods, Nodes: nodes, Topology: tc.topo, Slices: state, ZoneHints: hinted.ZoneHints})
		after := apply(t, state, plan)
		if got := zoneHints(after); strings.Contains(got, ":a") || strings.Contains(got, ":b") || strings.Contains(got, ":c") {
			t.Errorf("%s: hints left: %s", tc.name, got)
		}
		if plan.ZoneHints != nil {
			t.Errorf("%s: zone hints %v, want none", tc.name, plan.ZoneHints)
		}
		if got := events(plan); got != tc.want {
			t.Errorf("%s: events\n%s\nwant\n%s", tc.name, got, tc.want)
		}
	}
	// Once hints are gone and the state says so, an annotation-less sync
	// says nothing more.
	plain := Reconcile(Input{Service: service(), Pods: pods, Nodes: nodes, Topology: equal, Slices: state})
	if len(plain.Events) > 0 {
		t.Errorf("events without hints before: %s", events(plain))
	}
}

func notReadyPod(p *corev1.Pod) *corev1.Pod {
	c := p.DeepCopy()
	notReady(c)
	return c
}

// TestTopologyHintsReused: slices left alone keep their hints while they
// fit the allocation (even hints for another zone); the slices written
// anyway are re-hinted; a slice whose hints no longer fit is rewritten.
func TestTopologyHintsReused(t *testing.T) {
	three := Topology{CPURatios: map[string]float64{"a": 1.0 / 3, "b": 1.0 / 3, "c": 1.0 / 3}}
	svc, pods, nodes := zonal(corev1.AnnotationTopologyMode, "a1", "a2", "a3", "b1", "b2", "b3", "c1", "c2", "c3", "a4")
	// Two slices of five: the first (a1-a3, b1, b2) is given hints that
	// differ from same-zone but fit: a1 serves c.
	first := Reconcile(Input{Service: svc, Pods: pods[:5], Nodes: nodes, MaxEndpointsPerSlice: 5})
	s1 := apply(t, nil, first)[0]
	for i := range s1.Endpoints {
		ep := &s1.Endpoints[i]
		zone := *ep.Zone
		if ep.TargetRef.Name == "a1" {
			zone = "c"
		}
		ep.Hints = zoneHint(zone)
	}
	for _, tc := range []struct {
		name        string
		topo        Topology
		pods        []*corev1.Pod
		writesFirst bool
		want        string
	}{
		{"fitting hints are kept; the new slice is hinted around them", three, pods[:9], false,
			"a1:c a2:a a3:a b1:b b2:b b3:b c1:a c2:c c3:c"},
		{"a hint for a zone without nodes is rewritten", Topology{CPURatios: map[string]float64{"a": 0.5, "b": 0.5}},
			[]*corev1.Pod{pods[0], pods[1], pods[2], pods[3], pods[4], pods[5], pods[9]}, true,
			"a1:a a2:a a3:a a4:a b1:b b2:b b3:b"},
	} {
		plan := Reconcile(Input{Service: svc, Pods: tc.pods, Nodes: nodes, Topology: tc.topo, MaxEndpointsPerSlice: 5,
			Slices: []*discoveryv1.EndpointSlice{s1}, ZoneHints: ZoneHints{discoveryv1.AddressTypeIPv4: {"a": 2, "b": 2, "c": 1}}})
		wroteFirst := slices.ContainsFunc(plan.Update, func(s *discoveryv1.EndpointSlice) bool { return s.Name == s1.Name })
		if wroteFirst != tc.writesFirst {
			t.Errorf("%s: first slice written %v, want %v", tc.name, wroteFirst, tc.writesFirst)
		}
		if got := zoneHints(apply(t, []*discoveryv1.EndpointSlice{s1}, plan)); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
		if len(plan.Events) > 0 {
			t.Errorf("%s: events %s (hints were given before)", tc.name, events(plan))
		}
	}
}

// TestTopologyHintsReplaceTrafficDistribution: slices written for
// trafficDistribution PreferSameNode (zone and node hints) lose their node
// hints once topology-mode Auto is set, though their zone hints fit.
func TestTopologyHintsReplaceTrafficDistribution(t *testing.T) {
	equal := Topology{CPURatios: map[string]float64{"a": 0.5, "b": 0.5}}
	svc, pods, nodes := zonal(corev1.AnnotationTopologyMode, "a1", "a2", "b1", "b2")
	sameNode := svc.DeepCopy()
	sameNode.Annotations = nil
	dist := corev1.ServiceTrafficDistributionPreferSameNode
	sameNode.Spec.TrafficDistribution = &dist
	state := apply(t, nil, Reconcile(Input{Service: sameNode, Pods: pods, Nodes: nodes}))
	svc.Spec.TrafficDistribution = &dist
	plan := Reconcile(Input{Service: svc, Pods: pods, Nodes: nodes, Topology: equal, Slices: state})
	after := apply(t, state, plan)
	for _, s := range after {
		for _, e := range s.Endpoints {
			if e.Hints == nil || len(e.Hints.ForNodes) > 0 || len(e.Hints.ForZones) != 1 {
				t.Errorf("%s: hints %+v, want its zone only", e.TargetRef.Name, e.Hints)
			}
		}
	}
}

func TestOverloaded(t *testing.T) {
	three := Topology{CPURatios: map[string]float64{"a": 1.0 / 3, "b": 1.0 / 3, "c": 1.0 / 3}}
	for _, tc := range []struct {
		name  string
		hints map[string]int
		topo  Topology
		want  bool
	}{
		{"balanced", map[string]int{"a": 2, "b": 2, "c": 2}, three, false},
		{"no hints", nil, three, false},
		{"a zone below its minimum", map[string]int{"a": 3, "b": 2, "c": 1}, three, true},
		// 9 endpoints over 60/40: minimums ceil(4.5) = 5 and exactly 3.
		{"every zone at its minimum or above", map[string]int{"a": 5, "b": 4}, Topology{CPURatios: map[string]float64{"a": 0.6, "b": 0.4}}, false},
		{"a zone one below its minimum", map[string]int{"a": 4, "b": 5}, Topology{CPURatios: map[string]float64{"a": 0.6, "b": 0.4}}, true},
		{"a zone with none hinted", map[string]int{"a": 3, "b": 3, "c": 0}, three, true},
		{"a new zone", map[string]int{"a": 3, "b": 3}, three, true},
		{"no topology any more", map[string]int{"a": 3, "b": 3}, Topology{Insufficient: oneZoneOnly}, true},
	} {
		if got := Overloaded(tc.hints, tc.topo); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// BenchmarkNodeTopology is the work of one node event that changes the
// topology (a node's readiness, zone or CPU) in a 1,000-node cluster.
func BenchmarkNodeTopology(b *testing.B) {
	var nodes []*corev1.Node
	for i := range 1000 {
		nodes = append(nodes, node(fmt.Sprintf("node-%d", i), fmt.Sprintf("zone-%d", i%3), "4"))
	}
	b.ReportAllocs()
	for b.Loop() {
		if NodeTopology(nodes).CPURatios == nil {
			b.Fatal("no topology")
		}
	}
}

// TestTopologyHintsDualStack: each address type of a dual-stack service
// is hinted over its own endpoints, and the service gets one
// TopologyAwareHintsEnabled event, as upstream's cache records hints per
// service; when one address type can no longer be hinted it alone loses
// its hints, with its own warning.
func TestTopologyHintsDualStack(t *testing.T) {
	equal := Topology{CPURatios: map[string]float64{"a": 0.5, "b": 0.5}}
	svc, _, nodes := zonal(corev1.AnnotationTopologyMode)
	svc.Spec.ClusterIPs = []string{"10.96.0.10", "fd00::10"}
	svc.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	onNode := func(p *corev1.Pod, zone string) *corev1.Pod { p.Spec.NodeName = "node-" + zone; return p }
	pods := []*corev1.Pod{
		onNode(dualStackPod("a1", "10.1.0.1", "fd01::1"), "a"), onNode(dualStackPod("a2", "10.1.0.2", "fd01::2"), "a"),
		onNode(dualStackPod("b1", "10.1.0.3", "fd01::3"), "b"), onNode(dualStackPod("b2", "10.1.0.4", "fd01::4"), "b"),
	}
	plan := Reconcile(Input{Service: svc, Pods: pods, Nodes: nodes, Topology: equal})
	byType := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	for _, s := range plan.Create {
		byType[s.AddressType] = append(byType[s.AddressType], s)
	}
	for _, at := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
		if got := zoneHints(byType[at]); got != "a1:a a2:a b1:b b2:b" {
			t.Errorf("%s: %s", at, got)
		}
		if !maps.Equal(plan.ZoneHints[at], map[string]int{"a": 2, "b": 2}) {
			t.Errorf("%s: zone hints %v", at, plan.ZoneHints[at])
		}
	}
	if got := events(plan); got != "Normal TopologyAwareHintsEnabled: Topology aware hints given, addressType: IPv4" {
		t.Errorf("events %s, want one for the service", got)
	}
	// Three pods lose their IPv6 addresses: that address type has fewer
	// endpoints than zones; the IPv4 one keeps its hints, and no event
	// says they were given again.
	state := apply(t, nil, plan)
	oneV6 := []*corev1.Pod{pods[0], onNode(pod("a2", "10.1.0.2"), "a"), onNode(pod("b1", "10.1.0.3"), "b"), onNode(pod("b2", "10.1.0.4"), "b")}
	next := Reconcile(Input{Service: svc, Pods: oneV6, Nodes: nodes, Topology: equal, Slices: state, ZoneHints: plan.ZoneHints})
	if got := events(next); got != "Warning TopologyAwareHintsDisabled: Topology aware hints not given: fewer ready endpoints than zones (1 endpoints, 2 zones), addressType: IPv6" {
		t.Errorf("events %s", got)
	}
	if next.ZoneHints[discoveryv1.AddressTypeIPv6] != nil || !maps.Equal(next.ZoneHints[discoveryv1.AddressTypeIPv4], map[string]int{"a": 2, "b": 2}) {
		t.Errorf("zone hints %v", next.ZoneHints)
	}
}
