// Package endpointslice is the EndpointSlice controller, as
// kube-controller-manager's (--controllers name "endpointslice", service
// account endpointslice-controller): every service with a selector gets
// EndpointSlices (discovery.k8s.io/v1) listing the pods its selector
// matches in its namespace, one set of slices per address type of the
// service's ipFamilies (IPv4, IPv6, or both for a dual-stack service, each
// endpoint with the pod's addresses of that family), at most
// MaxEndpointsPerSlice endpoints per slice, one group of slices per
// distinct set of resolved ports. Slices are labelled
// kubernetes.io/service-name and endpointslice.kubernetes.io/managed-by,
// owned by their service (controller reference, blockOwnerDeletion), so
// the garbage collector deletes them with it, as upstream relies on.
// Services without a selector and ExternalName services are left alone.
// Ready endpoints get trafficDistribution's hints, or, for a service with
// service.kubernetes.io/topology-mode: Auto (or the older
// topology-aware-hints: auto, either taking precedence over
// trafficDistribution), topology-aware hints giving each zone endpoints
// in proportion to its share of the ready nodes' allocatable CPU, as
// upstream's topology cache (topology.go), with TopologyAwareHintsEnabled
// and TopologyAwareHintsDisabled events.
//
// Reconcile is a pure function of the service, its pods, the nodes' zones
// (and the zones' CPU shares) and the slices the controller already owns
// for it, returning the slices to create, update and delete and the
// events to record as data; Controller is the thin informer loop that
// writes them.
package endpointslice

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kubeproof/kubeproof/impl/controller/endpoints"
	"github.com/kubeproof/kubeproof/impl/controller/podstate"
	"github.com/kubeproof/kubeproof/impl/ipfamily"
)

// ControllerName is the managed-by label's value on the slices this
// controller owns.
const ControllerName = "endpointslice-controller.k8s.io"

// Defaults and bounds of --max-endpoints-per-slice.
const (
	DefaultMaxEndpointsPerSlice = 100
	MaxMaxEndpointsPerSlice     = 1000
)

// Input is what Reconcile decides from.
type Input struct {
	// Service has a selector (callers skip the others; Reconcile then
	// returns an empty Plan).
	Service *corev1.Service
	// Pods of the service's namespace; those the selector does not match
	// are ignored.
	Pods []*corev1.Pod
	// Slices are the existing slices labelled for the service and managed
	// by this controller (slices being deleted are left out by the caller).
	Slices []*discoveryv1.EndpointSlice
	// Nodes gives a node's zone label (topology.kubernetes.io/zone) and
	// whether the node exists; nil means every node exists without a zone.
	Nodes func(name string) (zone string, ok bool)
	// MaxEndpointsPerSlice bounds each slice (DefaultMaxEndpointsPerSlice
	// when 0).
	MaxEndpointsPerSlice int
	// Topology is the zones' shares of the nodes' CPU, for a service with
	// topology-mode Auto (topology.go); ZoneHints the service's hints as
	// the previous sync's Plan gave them (nil: none).
	Topology  Topology
	ZoneHints ZoneHints
}

// Plan is Reconcile's result. Creates carry GenerateName; Updates are
// copies of existing slices (name and resourceVersion kept).
type Plan struct {
	Create, Update, Delete []*discoveryv1.EndpointSlice
	// SkippedPods are pods left out because their node is unknown (the
	// service should be synced again later, as upstream requeues it).
	SkippedPods []string
	// ZoneHints are the topology-aware hints the slices now give (nil:
	// none); Events are to be recorded on the service (topology.go).
	ZoneHints ZoneHints
	Events    []Event
}

// Empty reports whether the plan writes nothing.
func (p Plan) Empty() bool { return len(p.Create)+len(p.Update)+len(p.Delete) == 0 }

// WithTriggerTime sets the endpoints.kubernetes.io/last-change-trigger-time
// annotation of every slice the plan creates or updates to at (the
// oldest pod or service change the writes carry, from the endpoints
// controller's TriggerTimes), or removes it when at is zero, as upstream's
// reconciler does. The annotation does not count in Reconcile's
// comparisons: a sync that changes nothing else writes nothing.
func (p Plan) WithTriggerTime(at time.Time) Plan {
	for _, s := range slices.Concat(p.Create, p.Update) {
		if at.IsZero() {
			delete(s.Annotations, corev1.EndpointsLastChangeTriggerTime)
			continue
		}
		if s.Annotations == nil {
			s.Annotations = map[string]string{}
		}
		s.Annotations[corev1.EndpointsLastChangeTriggerTime] = at.UTC().Format(time.RFC3339Nano)
	}
	return p
}

// Reconcile returns the writes that make the service's slices list
// exactly its pods' endpoints, as upstream's reconciler does, for each
// address type of the service (AddressTypes; slices of another address
// type are deleted): endpoints are grouped by their resolved ports; within
// a group, existing slices keep the endpoints still wanted (updated where
// they changed), emptied slices are deleted, the slices being updated
// anyway are filled up first (fullest first), then what remains goes into
// new slices, or into the unchanged slice that fits it most closely;
// deletes paired with creates of the same address type become updates.
// An address type with no endpoints at all keeps one empty placeholder
// slice. Last, a topology-mode Auto service's hints are allocated
// (addTopologyHints). An unchanged state writes nothing.
func Reconcile(in Input) Plan {
	svc := in.Service
	if svc == nil || len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName {
		return Plan{}
	}
	maxPer := in.MaxEndpointsPerSlice
	if maxPer <= 0 {
		maxPer = DefaultMaxEndpointsPerSlice
	}
	var plan Plan
	types := AddressTypes(svc)
	byType := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	for _, s := range sortedByName(in.Slices) {
		if !ownedBy(s, svc) || !slices.Contains(types, s.AddressType) {
			plan.Delete = append(plan.Delete, s)
			continue
		}
		byType[s.AddressType] = append(byType[s.AddressType], s)
	}
	skipped := map[string]bool{}
	for _, t := range types {
		var part Plan
		reconcileAddressType(in, t, byType[t], maxPer, &part)
		pairDeletesWithCreates(svc, &part)
		plan.Create = append(plan.Create, part.Create...)
		plan.Update = append(plan.Update, part.Update...)
		plan.Delete = append(plan.Delete, part.Delete...)
		for _, name := range part.SkippedPods {
			if !skipped[name] {
				skipped[name] = true
				plan.SkippedPods = append(plan.SkippedPods, name)
			}
		}
	}
	addTopologyHints(in, &plan)
	return plan
}

// AddressTypes are the address types of the service's slices, in
// ipFamilies order, as upstream: a family each; without families (a
// service written before they existed) its ClusterIP's, or both for a
// headless service, whose pods may have either.
func AddressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var out []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			out = append(out, discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			out = append(out, discoveryv1.AddressTypeIPv6)
		}
	}
	if len(out) > 0 {
		return slices.Compact(out)
	}
	if ip := svc.Spec.ClusterIP; ip != "" && ip != corev1.ClusterIPNone {
		if ipfamily.Of(ip) == corev1.IPv6Protocol {
			return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
		}
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	}
	return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
}

// familyOf is the IP family of an address type.
func familyOf(t discoveryv1.AddressType) corev1.IPFamily {
	if t == discoveryv1.AddressTypeIPv6 {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// reconcileAddressType converges the slices of one address type:
// existing are the service's slices of that type, sorted by name.
func reconcileAddressType(in Input, t discoveryv1.AddressType, existing []*discoveryv1.EndpointSlice, maxPer int, plan *Plan) {
	svc := in.Service
	desired, ports := desiredEndpoints(in, t, plan)
	wantLabels := sliceLabels(svc)
	byPorts := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		k := portsKey(s.Ports)
		byPorts[k] = append(byPorts[k], s)
	}
	for _, k := range slices.Sorted(maps.Keys(byPorts)) {
		if _, ok := desired[k]; !ok {
			plan.Delete = append(plan.Delete, byPorts[k]...)
		}
	}
	for _, k := range slices.Sorted(maps.Keys(desired)) {
		reconcilePorts(svc, t, byPorts[k], desired[k], ports[k], wantLabels, maxPer, plan)
	}

	// An address type without endpoints keeps one placeholder slice.
	if len(plan.Delete) == len(existing) && len(plan.Create) == 0 {
		placeholder := newSlice(svc, t, nil, wantLabels)
		if len(plan.Delete) == 1 && isPlaceholder(plan.Delete[0], placeholder) {
			plan.Delete = nil
		} else {
			plan.Create = append(plan.Create, placeholder)
		}
	}
}

// desiredEndpoints groups the endpoints of address type t of the
// service's pods by the key of their resolved ports, each group keyed by
// endpointKey. A pod without an address of the type has no endpoint in
// it.
func desiredEndpoints(in Input, t discoveryv1.AddressType, plan *Plan) (map[string]map[string]discoveryv1.Endpoint, map[string][]discoveryv1.EndpointPort) {
	svc := in.Service
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	desired := map[string]map[string]discoveryv1.Endpoint{}
	ports := map[string][]discoveryv1.EndpointPort{}
	for _, pod := range in.Pods {
		if pod.Namespace != svc.Namespace || !selector.Matches(labels.Set(pod.Labels)) || !inSlices(pod) {
			continue
		}
		addrs := podAddresses(pod, t)
		if len(addrs) == 0 {
			continue
		}
		zone, nodeKnown := "", true
		if in.Nodes != nil && pod.Spec.NodeName != "" {
			zone, nodeKnown = in.Nodes(pod.Spec.NodeName)
		}
		if !nodeKnown && !svc.Spec.PublishNotReadyAddresses {
			// As upstream: a pod on an unknown node is left out (and the
			// service retried) unless the service publishes every address.
			plan.SkippedPods = append(plan.SkippedPods, pod.Name)
			continue
		}
		eps := endpointPorts(svc, pod)
		k := portsKey(eps)
		if desired[k] == nil {
			desired[k] = map[string]discoveryv1.Endpoint{}
			ports[k] = eps
		}
		ep := podEndpoint(svc, pod, addrs, zone)
		desired[k][endpointKey(&ep)] = ep
	}
	return desired, ports
}

// podAddresses are the pod's IPs of address type t (status.podIPs order).
func podAddresses(pod *corev1.Pod, t discoveryv1.AddressType) []string {
	var out []string
	for _, ip := range endpoints.PodIPs(pod) {
		if ipfamily.Of(ip) == familyOf(t) {
			out = append(out, ip)
		}
	}
	return out
}

// inSlices reports whether pod has an endpoint: it has an address and is
// not in a terminal phase. Terminating pods are kept (ready false, serving
// as their readiness, terminating true).
func inSlices(pod *corev1.Pod) bool {
	_, err := netip.ParseAddr(endpoints.PodIP(pod))
	return err == nil && pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
}

// endpointPorts resolves the service's ports on pod; a port the pod lacks
// (a named target port none of its containers has) is left out. A
// headless service without ports has none.
func endpointPorts(svc *corev1.Service, pod *corev1.Pod) []discoveryv1.EndpointPort {
	out := []discoveryv1.EndpointPort{}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		port, ok := endpoints.TargetPort(pod, sp)
		if !ok {
			continue
		}
		name, protocol := sp.Name, endpoints.ServicePortProtocol(sp)
		out = append(out, discoveryv1.EndpointPort{Name: &name, Protocol: &protocol, Port: &port, AppProtocol: sp.AppProtocol})
	}
	return out
}

// podEndpoint is pod's endpoint at addrs (its IPs of the slice's address
// type); conditions serving = ready,
// terminating = being deleted, ready = serving and not terminating (or
// always, for a service publishing not-ready addresses); node, zone,
// target reference, the hostname when the pod's subdomain names the
// service, and a ready endpoint's trafficDistribution hints.
func podEndpoint(svc *corev1.Service, pod *corev1.Pod, addrs []string, zone string) discoveryv1.Endpoint {
	serving := podstate.IsReady(pod)
	terminating := pod.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses:  addrs,
		Conditions: discoveryv1.EndpointConditions{Ready: &ready, Serving: &serving, Terminating: &terminating},
		TargetRef:  &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		node := pod.Spec.NodeName
		ep.NodeName = &node
	}
	if zone != "" {
		ep.Zone = &zone
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
		hostname := pod.Spec.Hostname
		ep.Hostname = &hostname
	}
	if ready {
		ep.Hints = trafficHints(svc, &ep)
	}
	return ep
}

// trafficHints are a ready endpoint's hints for the service's
// trafficDistribution, as upstream's heuristics: PreferClose (the old
// name) and PreferSameZone give the endpoint's zone, PreferSameNode its
// zone and node; none without the field or without a zone (or node), and
// none here when topology-mode is Auto (addTopologyHints gives them).
func trafficHints(svc *corev1.Service, ep *discoveryv1.Endpoint) *discoveryv1.EndpointHints {
	if svc.Spec.TrafficDistribution == nil || topologyAuto(svc) { // topology-mode Auto takes precedence
		return nil
	}
	h := &discoveryv1.EndpointHints{}
	switch *svc.Spec.TrafficDistribution {
	case corev1.ServiceTrafficDistributionPreferClose, corev1.ServiceTrafficDistributionPreferSameZone:
		if ep.Zone != nil {
			h.ForZones = []discoveryv1.ForZone{{Name: *ep.Zone}}
		}
	case corev1.ServiceTrafficDistributionPreferSameNode:
		if ep.Zone != nil {
			h.ForZones = []discoveryv1.ForZone{{Name: *ep.Zone}}
		}
		if ep.NodeName != nil {
			h.ForNodes = []discoveryv1.ForNode{{Name: *ep.NodeName}}
		}
	}
	if len(h.ForZones)+len(h.ForNodes) == 0 {
		return nil
	}
	return h
}

// endpointKey identifies an endpoint across syncs: its addresses,
// hostname and target pod (the rest may change in place).
func endpointKey(ep *discoveryv1.Endpoint) string {
	var b strings.Builder
	for _, a := range ep.Addresses {
		b.WriteString(a)
		b.WriteByte(',')
	}
	b.WriteByte(0)
	if ep.Hostname != nil {
		b.WriteString(*ep.Hostname)
	}
	b.WriteByte(0)
	if ep.TargetRef != nil {
		b.WriteString(ep.TargetRef.Namespace + "/" + ep.TargetRef.Name)
	}
	return b.String()
}

// portsKey identifies a set of ports regardless of order.
func portsKey(ports []discoveryv1.EndpointPort) string {
	keys := make([]string, 0, len(ports))
	for _, p := range ports {
		var b strings.Builder
		b.WriteString(deref(p.Name))
		b.WriteByte(0)
		if p.Port != nil {
			b.WriteString(strconv.Itoa(int(*p.Port)))
		}
		b.WriteByte(0)
		if p.Protocol != nil {
			b.WriteString(string(*p.Protocol))
		}
		b.WriteByte(0)
		if p.AppProtocol != nil {
			b.WriteString("+" + *p.AppProtocol)
		}
		keys = append(keys, b.String())
	}
	slices.Sort(keys)
	return strings.Join(keys, "\x01")
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// reconcilePorts converges the slices of one port group of address type
// t: existing holds the group's current slices (sorted by name), desired
// its wanted endpoints by key.
func reconcilePorts(svc *corev1.Service, t discoveryv1.AddressType, existing []*discoveryv1.EndpointSlice, desired map[string]discoveryv1.Endpoint,
	ports []discoveryv1.EndpointPort, wantLabels map[string]string, maxPer int, plan *Plan) {
	remaining := maps.Clone(desired)
	var updated, unchanged []*discoveryv1.EndpointSlice
	// 1. Existing slices keep the endpoints still wanted, refreshed.
	for _, s := range existing {
		var kept []discoveryv1.Endpoint
		changed := false
		for i := range s.Endpoints {
			k := endpointKey(&s.Endpoints[i])
			want, ok := remaining[k]
			if !ok {
				continue
			}
			delete(remaining, k)
			if topologyAuto(svc) { // its hints are decided by addTopologyHints
				want.Hints = s.Endpoints[i].Hints
			}
			kept = append(kept, want)
			if !equality.Semantic.DeepEqual(want, s.Endpoints[i]) {
				changed = true
			}
		}
		labelsChanged := !maps.Equal(s.Labels, wantLabels)
		switch {
		case changed || len(kept) != len(s.Endpoints):
			if len(kept) == 0 {
				plan.Delete = append(plan.Delete, s)
				continue
			}
			u := s.DeepCopy()
			u.Endpoints, u.Labels = kept, maps.Clone(wantLabels)
			updated = append(updated, u)
		case labelsChanged:
			u := s.DeepCopy()
			u.Labels = maps.Clone(wantLabels)
			updated = append(updated, u)
		default:
			unchanged = append(unchanged, s)
		}
	}
	queue := sortedEndpoints(remaining)
	// 2. Slices written anyway are filled up first, fullest first.
	slices.SortStableFunc(updated, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(len(b.Endpoints), len(a.Endpoints)) })
	for _, u := range updated {
		for len(queue) > 0 && len(u.Endpoints) < maxPer {
			u.Endpoints, queue = append(u.Endpoints, queue[0]), queue[1:]
		}
	}
	plan.Update = append(plan.Update, updated...)
	// 3. The rest: a full slice's worth goes into a new slice; a smaller
	// remainder into the unchanged slice it fits most closely, else a new
	// slice.
	for len(queue) > 0 {
		var fill *discoveryv1.EndpointSlice
		if len(queue) < maxPer {
			if i := closestFit(unchanged, len(queue), maxPer); i >= 0 {
				fill = unchanged[i].DeepCopy()
				unchanged = slices.Delete(unchanged, i, i+1)
				fill.Labels = maps.Clone(wantLabels)
			}
		}
		isNew := fill == nil
		if isNew {
			fill = newSlice(svc, t, ports, wantLabels)
		}
		for len(queue) > 0 && len(fill.Endpoints) < maxPer {
			fill.Endpoints, queue = append(fill.Endpoints, queue[0]), queue[1:]
		}
		if isNew {
			plan.Create = append(plan.Create, fill)
		} else {
			plan.Update = append(plan.Update, fill)
		}
	}
}

// closestFit is the index of the slice in ss with the least room that
// still fits n more endpoints, or -1.
func closestFit(ss []*discoveryv1.EndpointSlice, n, maxPer int) int {
	best, bestRoom := -1, maxPer+1
	for i, s := range ss {
		if room := maxPer - len(s.Endpoints); room >= n && room < bestRoom {
			best, bestRoom = i, room
		}
	}
	return best
}

func sortedEndpoints(m map[string]discoveryv1.Endpoint) []discoveryv1.Endpoint {
	out := make([]discoveryv1.Endpoint, 0, len(m))
	for _, k := range slices.Sorted(maps.Keys(m)) {
		out = append(out, m[k])
	}
	return out
}

func sortedByName(ss []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	out := slices.Clone(ss)
	slices.SortFunc(out, func(a, b *discoveryv1.EndpointSlice) int { return cmp.Compare(a.Name, b.Name) })
	return out
}

// pairDeletesWithCreates turns a delete and a create of one address type
// (plan holds one type's writes) into one update of the deleted slice (its
// name kept), as upstream saves writes.
func pairDeletesWithCreates(svc *corev1.Service, plan *Plan) {
	var keep []*discoveryv1.EndpointSlice
	for _, d := range plan.Delete {
		if len(plan.Create) == 0 || !ownedBy(d, svc) || d.AddressType != plan.Create[len(plan.Create)-1].AddressType {
			keep = append(keep, d)
			continue
		}
		c := plan.Create[len(plan.Create)-1]
		plan.Create = plan.Create[:len(plan.Create)-1]
		u := d.DeepCopy()
		u.Labels, u.Ports, u.Endpoints = c.Labels, c.Ports, c.Endpoints
		plan.Update = append(plan.Update, u)
	}
	plan.Delete = keep
}

// sliceLabels are a slice's labels: the service's (but the reserved
// keys), the headless label when the service has no cluster IP, the
// service name and the managed-by label.
func sliceLabels(svc *corev1.Service) map[string]string {
	out := map[string]string{}
	for k, v := range svc.Labels {
		if k != discoveryv1.LabelServiceName && k != discoveryv1.LabelManagedBy && k != corev1.IsHeadlessService {
			out[k] = v
		}
	}
	if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "" {
		out[corev1.IsHeadlessService] = ""
	}
	out[discoveryv1.LabelServiceName] = svc.Name
	out[discoveryv1.LabelManagedBy] = ControllerName
	return out
}

// newSlice is a new slice of svc of address type t with ports and no
// endpoints yet.
func newSlice(svc *corev1.Service, t discoveryv1.AddressType, ports []discoveryv1.EndpointPort, wantLabels map[string]string) *discoveryv1.EndpointSlice {
	if ports == nil {
		ports = []discoveryv1.EndpointPort{}
	}
	return &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       svc.Namespace,
			GenerateName:    svc.Name + "-", // a service name is a DNS label: the prefix is always valid
			Labels:          maps.Clone(wantLabels),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))},
		},
		AddressType: t,
		Ports:       slices.Clone(ports),
		Endpoints:   []discoveryv1.Endpoint{},
	}
}

// ownedBy reports whether svc is s's controller (a slice of an older
// service of the same name is not).
func ownedBy(s *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	ref := metav1.GetControllerOfNoCopy(s)
	return ref != nil && ref.UID == svc.UID && ref.Kind == "Service" && ref.APIVersion == "v1"
}

// isPlaceholder reports whether s is already the placeholder slice p: no
// endpoints, no ports, the same labels.
func isPlaceholder(s, p *discoveryv1.EndpointSlice) bool {
	return len(s.Endpoints) == 0 && len(s.Ports) == 0 && s.AddressType == p.AddressType && maps.Equal(s.Labels, p.Labels)
}
