package endpointslice

// Topology-aware routing hints (service.kubernetes.io/topology-mode: Auto,
// or the older service.kubernetes.io/topology-aware-hints: auto), as
// kube-controller-manager's topology cache gives them: each zone gets a
// share of a service's ready endpoints (hints.forZones) in proportion to
// its share of the ready nodes' allocatable CPU, each endpoint serving its
// own zone where it can, moving as few endpoints to other zones as
// needed, and no zone getting so few that its endpoints would carry more
// than overloadThreshold above their fair load. When that cannot be done
// the hints are removed and a TopologyAwareHintsDisabled warning says why.
// Everything here is a pure function of observed state; the controller
// keeps the Topology (from its node informer) and each service's last
// allocation (Plan.ZoneHints) and passes them back in.

import (
	"fmt"
	"maps"
	"math"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
)

// overloadThreshold is how much more than its CPU-proportional share of
// traffic a zone's endpoints may be given (20%, upstream's): a zone must
// get at least its desired share divided by 1.2 endpoints, rounded up
// (computed as upstream does, desired × 1/1.2, so that a share at a
// whole number rounds alike).
const overloadThreshold = 0.2

// Event reasons, as upstream's.
const (
	ReasonTopologyHintsDisabled = "TopologyAwareHintsDisabled"
	ReasonTopologyHintsEnabled  = "TopologyAwareHintsEnabled"
)

// Event is an event Reconcile asks the controller to record on the service.
type Event struct {
	Type, Reason, Message string
}

// ZoneHints is a service's allocation of hints: per address type, how
// many ready endpoints are hinted for each zone. It is what the controller
// remembers between syncs (upstream's topology cache does the same) to
// know whether hints were given and to check, when nodes change, whether
// a service's zones became overloaded.
type ZoneHints map[discoveryv1.AddressType]map[string]int

// Topology is the topology cache's view of the cluster: each zone's share
// of the ready nodes' allocatable CPU. The zero value knows no nodes and
// gives no hints.
type Topology struct {
	// CPURatios by zone sum to 1; nil when the nodes allow no hints.
	CPURatios map[string]float64
	// Insufficient says why CPURatios is nil.
	Insufficient string
}

// Why a Topology gives no hints.
const (
	noReadyNodes       = "no ready node with allocatable CPU"
	nodeWithoutZoneCPU = "a ready node has no zone label or no allocatable CPU"
	oneZoneOnly        = "the ready nodes are all in one zone"
)

// NodeTopology computes the Topology of nodes as upstream's cache does:
// control-plane nodes (node-role.kubernetes.io/control-plane or /master
// labels) and nodes that are not Ready do not count; one counted node
// without a zone label or without allocatable CPU, or counted nodes in
// fewer than two zones, mean no hints at all.
func NodeTopology(nodes []*corev1.Node) Topology {
	cpuByZone := map[string]int64{}
	var total int64
	for _, n := range nodes {
		if controlPlane(n) || !nodeReady(n) {
			continue
		}
		zone := n.Labels[corev1.LabelTopologyZone]
		cpu := n.Status.Allocatable.Cpu().MilliValue()
		if zone == "" || cpu <= 0 {
			return Topology{Insufficient: nodeWithoutZoneCPU}
		}
		cpuByZone[zone] += cpu
		total += cpu
	}
	switch {
	case total == 0:
		return Topology{Insufficient: noReadyNodes}
	case len(cpuByZone) < 2:
		return Topology{Insufficient: oneZoneOnly}
	}
	ratios := make(map[string]float64, len(cpuByZone))
	for zone, cpu := range cpuByZone {
		ratios[zone] = float64(cpu) / float64(total)
	}
	return Topology{CPURatios: ratios}
}

func controlPlane(n *corev1.Node) bool {
	_, cp := n.Labels["node-role.kubernetes.io/control-plane"]
	_, master := n.Labels["node-role.kubernetes.io/master"]
	return cp || master
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// TopologyNodeChanged reports whether a node update can change the
// Topology: its readiness, zone, control-plane labels or allocatable CPU
// (upstream looks at the first two; the others are cheap to add).
func TopologyNodeChanged(old, cur *corev1.Node) bool {
	return nodeReady(old) != nodeReady(cur) || controlPlane(old) != controlPlane(cur) ||
		old.Labels[corev1.LabelTopologyZone] != cur.Labels[corev1.LabelTopologyZone] ||
		old.Status.Allocatable.Cpu().Cmp(*cur.Status.Allocatable.Cpu()) != 0
}

// topologyAuto reports whether svc asks for topology-aware hints: the
// older topology-aware-hints annotation when present (it takes
// precedence, as upstream), else topology-mode, "Auto" or "auto".
func topologyAuto(svc *corev1.Service) bool {
	v, ok := svc.Annotations[corev1.DeprecatedAnnotationTopologyAwareHints]
	if !ok {
		v = svc.Annotations[corev1.AnnotationTopologyMode]
	}
	return v == "Auto" || v == "auto"
}

// zoneAllocation is how many endpoints a zone should get: at least
// minimum (below it the zone is overloaded), at most maximum (what is
// left when every other zone has its minimum), ideally desired.
type zoneAllocation struct {
	minimum, maximum int
	desired          float64
}

// allocate splits endpoints ready endpoints over the zones of ratios, or
// says why it cannot: no topology, fewer endpoints than zones, or minimums
// adding up to more endpoints than there are.
func allocate(topo Topology, endpoints int) (map[string]zoneAllocation, string) {
	if topo.CPURatios == nil {
		if topo.Insufficient == "" {
			return nil, "no node information yet"
		}
		return nil, topo.Insufficient
	}
	zones := len(topo.CPURatios)
	if zones > endpoints {
		return nil, fmt.Sprintf("fewer ready endpoints than zones (%d endpoints, %d zones)", endpoints, zones)
	}
	out := make(map[string]zoneAllocation, zones)
	minTotal := 0
	for zone, ratio := range topo.CPURatios {
		desired := ratio * float64(endpoints)
		minimum := int(math.Ceil(desired * (1 / (1 + overloadThreshold))))
		out[zone] = zoneAllocation{minimum: minimum, desired: math.Max(desired, float64(minimum))}
		minTotal += minimum
	}
	if minTotal > endpoints {
		return nil, fmt.Sprintf("every zone's minimum share within the %d%% overload threshold needs more endpoints than there are (%d endpoints, %d zones)",
			int(overloadThreshold*100), endpoints, zones)
	}
	for zone, a := range out {
		a.maximum = a.minimum + endpoints - minTotal
		out[zone] = a
	}
	return out, ""
}

// Overloaded reports whether an allocation of hints leaves some zone of
// topo with fewer endpoints than its minimum share (or topo gives no hints
// any more), so the service must be synced again; upstream checks this
// when nodes change.
func Overloaded(hints map[string]int, topo Topology) bool {
	if len(hints) == 0 {
		return false
	}
	if len(topo.CPURatios) == 0 {
		return true
	}
	total := 0
	for _, n := range hints {
		total += n
	}
	for zone, ratio := range topo.CPURatios {
		n, ok := hints[zone]
		if !ok || float64(n) < math.Ceil(float64(total)*ratio*(1/(1+overloadThreshold))) {
			return true
		}
	}
	return false
}

func endpointReady(ep *discoveryv1.Endpoint) bool {
	return ep.Conditions.Ready != nil && *ep.Conditions.Ready
}

// addTopologyHints gives plan's slices the service's topology hints (or
// removes them), per address type, once Reconcile has decided which slices
// to create and update: the slices it leaves alone keep their hints while
// they still fit the allocation, as upstream. It sets plan.ZoneHints and
// adds the events to record. Without topology-mode Auto, the hints are
// those podEndpoint gives (trafficDistribution's or none): only the
// warning that hints were removed is left to add.
func addTopologyHints(in Input, plan *Plan) {
	svc := in.Service
	if !topologyAuto(svc) {
		if len(in.ZoneHints) > 0 {
			plan.Events = append(plan.Events, Event{corev1.EventTypeWarning, ReasonTopologyHintsDisabled,
				"Topology aware hints removed: the service's topology annotation is no longer Auto"})
		}
		return
	}
	written := map[string]bool{}
	for _, s := range slices.Concat(plan.Update, plan.Delete) {
		written[s.Name] = true
	}
	byType := map[discoveryv1.AddressType]*sliceSet{}
	set := func(t discoveryv1.AddressType) *sliceSet {
		if byType[t] == nil {
			byType[t] = &sliceSet{}
		}
		return byType[t]
	}
	for _, s := range plan.Create {
		set(s.AddressType).allocatable = append(set(s.AddressType).allocatable, s)
	}
	for _, s := range plan.Update {
		set(s.AddressType).allocatable = append(set(s.AddressType).allocatable, s)
	}
	for _, s := range sortedByName(in.Slices) {
		if !written[s.Name] {
			set(s.AddressType).unchanged = append(set(s.AddressType).unchanged, s)
		}
	}
	// Whether the service has hints, as upstream's cache knows it: per
	// service, so a dual-stack service's second address type given hints
	// with the first gets no event of its own, and removing one address
	// type's hints forgets them for the service.
	hinted := len(in.ZoneHints) > 0
	for _, t := range slices.Sorted(maps.Keys(byType)) {
		ss := byType[t]
		hints, why := ss.hint(in.Topology)
		if why != "" {
			ss.removeHints()
			hinted = false
			plan.Events = append(plan.Events, Event{corev1.EventTypeWarning, ReasonTopologyHintsDisabled,
				fmt.Sprintf("Topology aware hints not given: %s, addressType: %s", why, t)})
		} else {
			if plan.ZoneHints == nil {
				plan.ZoneHints = ZoneHints{}
			}
			plan.ZoneHints[t] = hints
			if !hinted {
				hinted = true
				plan.Events = append(plan.Events, Event{corev1.EventTypeNormal, ReasonTopologyHintsEnabled,
					fmt.Sprintf("Topology aware hints given, addressType: %s", t)})
			}
		}
		plan.Update = append(plan.Update, ss.moved...)
	}
}

// sliceSet is one address type's slices during addTopologyHints:
// allocatable ones are written anyway (their endpoints may be re-hinted
// freely); unchanged ones are only written if their hints must change
// (then copied into moved, which becomes allocatable too).
type sliceSet struct {
	allocatable, unchanged, moved []*discoveryv1.EndpointSlice
}

// hint allocates the set's ready endpoints to zones: the hints of
// unchanged slices are kept while they fit the allocation; every other
// ready endpoint starts hinted for its own zone; then as few endpoints as
// possible move from zones above their desired share to zones below it.
// It returns the hints by zone, or why none can be given.
func (ss *sliceSet) hint(topo Topology) (map[string]int, string) {
	ready := 0
	for _, s := range slices.Concat(ss.allocatable, ss.unchanged) {
		for i := range s.Endpoints {
			if endpointReady(&s.Endpoints[i]) {
				ready++
			}
		}
	}
	alloc, why := allocate(topo, ready)
	if why != "" {
		return nil, why
	}
	hinted := ss.keepValidHints(alloc)
	for _, s := range ss.allocatable {
		for i := range s.Endpoints {
			ep := &s.Endpoints[i]
			if !endpointReady(ep) {
				ep.Hints = nil
				continue
			}
			if ep.Zone == nil || *ep.Zone == "" {
				return nil, "a ready endpoint has no zone"
			}
			ep.Hints = zoneHint(*ep.Zone)
			hinted[*ep.Zone]++
		}
	}
	giving, receiving := givingAndReceiving(alloc, hinted)
	for _, s := range ss.allocatable {
		for i := range s.Endpoints {
			ep := &s.Endpoints[i]
			if !endpointReady(ep) || giving[*ep.Zone] == 0 {
				continue
			}
			to := ""
			for _, z := range slices.Sorted(maps.Keys(receiving)) {
				if receiving[z] > 0 {
					to = z
					break
				}
			}
			if to == "" {
				break
			}
			ep.Hints = zoneHint(to)
			giving[*ep.Zone]--
			receiving[to]--
			hinted[*ep.Zone]--
			hinted[to]++
		}
	}
	maps.DeleteFunc(hinted, func(_ string, n int) bool { return n == 0 })
	if len(hinted) == 0 {
		return nil, "no zone was allocated endpoints"
	}
	return hinted, ""
}

func zoneHint(zone string) *discoveryv1.EndpointHints {
	return &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: zone}}}
}

// keepValidHints counts the hints of the unchanged slices, in name order,
// keeping a slice unchanged only if each of its ready endpoints has zone
// hints (and no node hints), only for zones of the allocation, and the
// zones' counts stay within their maximum; the others are copied to be
// written (moved, and made allocatable).
func (ss *sliceSet) keepValidHints(alloc map[string]zoneAllocation) map[string]int {
	hinted := map[string]int{}
	var keep []*discoveryv1.EndpointSlice
	for _, s := range ss.unchanged {
		if counts, ok := sliceHints(s, hinted, alloc); ok {
			keep = append(keep, s)
			for z, n := range counts {
				hinted[z] += n
			}
			continue
		}
		c := s.DeepCopy()
		ss.moved = append(ss.moved, c)
		ss.allocatable = append(ss.allocatable, c)
	}
	ss.unchanged = keep
	return hinted
}

// sliceHints counts s's hints by zone, or reports that they do not fit.
func sliceHints(s *discoveryv1.EndpointSlice, hinted map[string]int, alloc map[string]zoneAllocation) (map[string]int, bool) {
	counts := map[string]int{}
	for i := range s.Endpoints {
		ep := &s.Endpoints[i]
		if !endpointReady(ep) {
			continue
		}
		// Node hints are trafficDistribution's (PreferSameNode), left
		// from before the annotation: upstream keeps them; they go.
		if ep.Hints == nil || len(ep.Hints.ForZones) == 0 || len(ep.Hints.ForNodes) > 0 {
			return nil, false
		}
		for _, z := range ep.Hints.ForZones {
			if _, ok := alloc[z.Name]; !ok {
				return nil, false
			}
			counts[z.Name]++
		}
	}
	for z, n := range counts {
		if n+hinted[z] > alloc[z].maximum {
			return nil, false
		}
	}
	return counts, true
}

// givingAndReceiving turns the difference between each zone's desired
// share and its hinted endpoints into whole endpoints to give away and to
// receive: one at a time from the zone with the largest surplus to the
// zone with the largest deficit (ties to the first zone by name), while
// both are at least half an endpoint and one of them at least a whole.
// Endpoints in a zone without counted nodes (not in alloc) are all
// surplus; upstream leaves them hinted for their own zone, which no
// client there may be left to use.
func givingAndReceiving(alloc map[string]zoneAllocation, hinted map[string]int) (giving, receiving map[string]int) {
	surplus, deficit := map[string]float64{}, map[string]float64{}
	for zone, n := range hinted {
		if _, ok := alloc[zone]; !ok && n > 0 {
			surplus[zone] = float64(n)
		}
	}
	for zone, a := range alloc {
		switch d := float64(hinted[zone]) - a.desired; {
		case d > 0:
			surplus[zone] = d
		case d < 0:
			deficit[zone] = -d
		}
	}
	giving, receiving = map[string]int{}, map[string]int{}
	for {
		from, give := largest(surplus)
		to, take := largest(deficit)
		if from == "" || to == "" || (give < 1 && take < 1) || give < 0.5 || take < 0.5 {
			return giving, receiving
		}
		giving[from]++
		surplus[from]--
		receiving[to]++
		deficit[to]--
	}
}

// largest is the zone with the largest positive value (first by name on
// ties), or "".
func largest(m map[string]float64) (string, float64) {
	best, most := "", 0.0
	for _, z := range slices.Sorted(maps.Keys(m)) {
		if m[z] > most {
			best, most = z, m[z]
		}
	}
	return best, most
}

// removeHints clears every hint of the set: the slices written anyway
// lose theirs, unchanged slices with hints are copied to be written.
func (ss *sliceSet) removeHints() {
	for _, s := range ss.allocatable {
		for i := range s.Endpoints {
			s.Endpoints[i].Hints = nil
		}
	}
	for _, s := range ss.unchanged {
		if !slices.ContainsFunc(s.Endpoints, func(ep discoveryv1.Endpoint) bool { return ep.Hints != nil }) {
			continue
		}
		c := s.DeepCopy()
		for i := range c.Endpoints {
			c.Endpoints[i].Hints = nil
		}
		ss.moved = append(ss.moved, c)
	}
	ss.unchanged = nil
}
