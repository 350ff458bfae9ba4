// Package endpointslicemirroring is the EndpointSliceMirroring controller,
// as kube-controller-manager's (--controllers name
// "endpointslicemirroring", service account
// endpointslicemirroring-controller): the Endpoints of a service without a
// selector — written by users or other controllers — are mirrored into
// EndpointSlices, one slice per address type and port set, labelled
// kubernetes.io/service-name and endpointslice.kubernetes.io/managed-by=
// endpointslicemirroring-controller.k8s.io and owned by the Endpoints.
// Endpoints labelled endpointslice.kubernetes.io/skip-mirror=true (the API
// server's `kubernetes` Endpoints), leader-election locks, Endpoints of
// services with a selector (the EndpointSlice controller's) and Endpoints
// without a service get no slices; their mirrored slices are deleted.
//
// Reconcile is a pure function of the Endpoints and the slices mirrored
// for it, returning the writes as an endpointslice.Plan; Controller is the
// thin informer loop.
package endpointslicemirroring

import (
	"cmp"
	"maps"
	"net/netip"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/controller/endpointslice"
	"github.com/kubeproof/kubeproof/impl/ipfamily"
)

// ControllerName is the managed-by label's value on mirrored slices.
const ControllerName = "endpointslicemirroring-controller.k8s.io"

// DefaultMaxEndpointsPerSubset is --mirroring-max-endpoints-per-subset's
// default: addresses of one Endpoints subset beyond it are not mirrored.
const DefaultMaxEndpointsPerSubset = 1000

// leaderAnnotation marks an Endpoints object used as a leader-election
// lock.
const leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// ShouldMirror reports whether ep is mirrored at all (given a service
// without a selector): not skip-mirror, not a leader-election lock.
func ShouldMirror(ep *corev1.Endpoints) bool {
	if ep == nil || ep.Labels[discoveryv1.LabelSkipMirror] == "true" {
		return false
	}
	_, lock := ep.Annotations[leaderAnnotation]
	return !lock
}

// Input is what Reconcile decides from.
type Input struct {
	// Endpoints to mirror; nil, or one that should not be mirrored
	// (ShouldMirror, ServiceWithoutSelector false), deletes every
	// mirrored slice.
	Endpoints *corev1.Endpoints
	// ServiceWithoutSelector: the Endpoints' service exists and has no
	// selector.
	ServiceWithoutSelector bool
	// Slices mirrored for the Endpoints (by label; those being deleted
	// left out).
	Slices []*discoveryv1.EndpointSlice
	// MaxEndpointsPerSubset (DefaultMaxEndpointsPerSubset when 0).
	MaxEndpointsPerSubset int
}

// Result is Reconcile's decision: the writes, and the addresses left out
// (invalid IPs, and those over the per-subset maximum) for the warning
// events upstream records.
type Result struct {
	Plan                      endpointslice.Plan
	InvalidAddresses, OverMax int
}

// Reconcile returns the writes that make the mirrored slices match ep, as
// upstream's mirroring reconciler: the subsets are repacked (same ports
// merged, an address both ready and not ready counted ready), each
// subset's first MaxEndpointsPerSubset addresses (ready ones first) are
// mirrored as endpoints with the ready condition, target reference, node
// name and hostname; one slice per address type and port set, whose
// first existing slice is rewritten when its endpoints, labels (the
// Endpoints' plus the two slice labels) or annotations (the Endpoints'
// but last-applied-configuration and the trigger time) differ, the
// others deleted; deletes paired with creates become updates. No slice
// is created for Endpoints being deleted.
func Reconcile(in Input) Result {
	ep := in.Endpoints
	if ep == nil || !in.ServiceWithoutSelector || !ShouldMirror(ep) {
		return Result{Plan: endpointslice.Plan{Delete: slices.Clone(in.Slices)}}
	}
	maxPer := in.MaxEndpointsPerSubset
	if maxPer <= 0 {
		maxPer = DefaultMaxEndpointsPerSubset
	}
	var res Result
	desired := map[string]map[string]discoveryv1.Endpoint{}
	ports := map[string][]discoveryv1.EndpointPort{}
	types := map[string]discoveryv1.AddressType{}
	for _, ss := range repack(ep.Subsets) {
		sp := slicePorts(ss.Ports)
		added := 0
		add := func(a corev1.EndpointAddress, ready bool) {
			if added >= maxPer {
				res.OverMax++
				return
			}
			ip, err := ipfamily.Parse(a.IP)
			if err != nil {
				res.InvalidAddresses++
				return
			}
			// As kube-controller-manager: an IPv4-mapped IPv6 address is
			// IPv4 (as ipfamily.Of reads it), and the address is mirrored
			// as its family prints it (an IPv6 slice refuses a mapped one).
			ip = ip.Unmap()
			at := discoveryv1.AddressTypeIPv4
			if !ip.Is4() {
				at = discoveryv1.AddressTypeIPv6
			}
			k := string(at) + "\x02" + endpointslicePortsKey(sp)
			if desired[k] == nil {
				desired[k], ports[k], types[k] = map[string]discoveryv1.Endpoint{}, sp, at
			}
			e := addressEndpoint(a, ip, ready)
			desired[k][endpointKey(&e)] = e
			added++
		}
		for _, a := range ss.Addresses {
			add(a, true)
		}
		for _, a := range ss.NotReadyAddresses {
			add(a, false)
		}
	}

	existing := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range sortedByName(in.Slices) {
		k := string(s.AddressType) + "\x02" + endpointslicePortsKey(s.Ports)
		existing[k] = append(existing[k], s)
	}
	plan := &res.Plan
	for _, k := range slices.Sorted(maps.Keys(existing)) {
		if _, ok := desired[k]; !ok {
			plan.Delete = append(plan.Delete, existing[k]...)
		}
	}
	wantLabels, wantAnnotations := sliceLabels(ep), sliceAnnotations(ep)
	// The owner is this Endpoints object (not an older one of that name).
	wantOwners := []metav1.OwnerReference{*metav1.NewControllerRef(ep, corev1.SchemeGroupVersion.WithKind("Endpoints"))}
	for _, k := range slices.Sorted(maps.Keys(desired)) {
		cur := existing[k]
		if len(cur) > 1 {
			plan.Delete = append(plan.Delete, cur[1:]...)
		}
		if len(cur) > 0 && sameEndpoints(cur[0].Endpoints, desired[k]) &&
			maps.Equal(cur[0].Labels, wantLabels) && maps.Equal(cur[0].Annotations, wantAnnotations) &&
			equality.Semantic.DeepEqual(cur[0].OwnerReferences, wantOwners) {
			continue
		}
		s := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ep.Namespace, GenerateName: ep.Name + "-",
			},
			AddressType: types[k],
			Ports:       ports[k],
		}
		if len(cur) > 0 {
			s = cur[0].DeepCopy()
			s.Ports = ports[k]
		}
		s.Labels, s.Annotations, s.OwnerReferences = maps.Clone(wantLabels), maps.Clone(wantAnnotations), slices.Clone(wantOwners)
		s.Endpoints = sortedEndpoints(desired[k])
		if len(cur) > 0 {
			plan.Update = append(plan.Update, s)
		} else if ep.DeletionTimestamp == nil {
			plan.Create = append(plan.Create, s)
		}
	}
	recycle(plan)
	return res
}

// repack merges subsets with the same ports and drops duplicate
// addresses, a ready one winning over a not-ready one.
func repack(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	type group struct {
		ports             []corev1.EndpointPort
		ready, notReady   []corev1.EndpointAddress
		seenR, seenNotRdy map[string]bool
	}
	groups := map[string]*group{}
	var order []string
	addrKey := func(a corev1.EndpointAddress) string {
		k := a.IP
		if a.TargetRef != nil {
			k += "\x00" + string(a.TargetRef.UID) + "\x00" + a.TargetRef.Namespace + "/" + a.TargetRef.Name
		}
		return k
	}
	for _, ss := range subsets {
		ps := slices.Clone(ss.Ports)
		slices.SortFunc(ps, func(a, b corev1.EndpointPort) int {
			return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol))
		})
		k := corePortsKey(ps)
		g := groups[k]
		if g == nil {
			g = &group{ports: ps, seenR: map[string]bool{}, seenNotRdy: map[string]bool{}}
			groups[k] = g
			order = append(order, k)
		}
		for _, a := range ss.Addresses {
			if ak := addrKey(a); !g.seenR[ak] {
				g.seenR[ak] = true
				g.ready = append(g.ready, a)
			}
		}
		for _, a := range ss.NotReadyAddresses {
			if ak := addrKey(a); !g.seenNotRdy[ak] {
				g.seenNotRdy[ak] = true
				g.notReady = append(g.notReady, a)
			}
		}
	}
	out := make([]corev1.EndpointSubset, 0, len(order))
	for _, k := range order {
		g := groups[k]
		notReady := slices.DeleteFunc(g.notReady, func(a corev1.EndpointAddress) bool { return g.seenR[addrKey(a)] })
		out = append(out, corev1.EndpointSubset{Ports: g.ports, Addresses: g.ready, NotReadyAddresses: notReady})
	}
	return out
}

func corePortsKey(ps []corev1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ps {
		b.WriteString(p.Name + "\x00" + strconv.Itoa(int(p.Port)) + "\x00" + string(p.Protocol) + "\x00")
		if p.AppProtocol != nil {
			b.WriteString(*p.AppProtocol)
		}
		b.WriteByte(1)
	}
	return b.String()
}

// slicePorts converts an Endpoints subset's ports.
func slicePorts(ps []corev1.EndpointPort) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, 0, len(ps))
	for _, p := range ps {
		name, port, protocol := p.Name, p.Port, p.Protocol
		out = append(out, discoveryv1.EndpointPort{Name: &name, Port: &port, Protocol: &protocol, AppProtocol: p.AppProtocol})
	}
	return out
}

// addressEndpoint is an Endpoints address, parsed as ip, as a slice
// endpoint.
func addressEndpoint(a corev1.EndpointAddress, ip netip.Addr, ready bool) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{
		Addresses:  []string{ip.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: &ready},
		TargetRef:  a.TargetRef.DeepCopy(),
		NodeName:   a.NodeName,
	}
	if a.Hostname != "" {
		h := a.Hostname
		e.Hostname = &h
	}
	return e
}

// endpointKey identifies an endpoint: addresses, hostname, target.
func endpointKey(e *discoveryv1.Endpoint) string {
	k := strings.Join(e.Addresses, ",") + "\x00"
	if e.Hostname != nil {
		k += *e.Hostname
	}
	if e.TargetRef != nil {
		k += "\x00" + e.TargetRef.Namespace + "/" + e.TargetRef.Name
	}
	return k
}

// endpointslicePortsKey identifies a port set regardless of order.
func endpointslicePortsKey(ports []discoveryv1.EndpointPort) string {
	keys := make([]string, 0, len(ports))
	for _, p := range ports {
		k := ""
		if p.Name != nil {
			k = *p.Name
		}
		k += "\x00"
		if p.Port != nil {
			k += strconv.Itoa(int(*p.Port))
		}
		k += "\x00"
		if p.Protocol != nil {
			k += string(*p.Protocol)
		}
		if p.AppProtocol != nil {
			k += "\x00+" + *p.AppProtocol
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return strings.Join(keys, "\x01")
}

func sameEndpoints(have []discoveryv1.Endpoint, want map[string]discoveryv1.Endpoint) bool {
	if len(have) != len(want) {
		return false
	}
	for i := range have {
		w, ok := want[endpointKey(&have[i])]
		if !ok || !equality.Semantic.DeepEqual(w, have[i]) {
			return false
		}
	}
	return true
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

// sliceLabels are the Endpoints' labels plus the service name and the
// managed-by label.
func sliceLabels(ep *corev1.Endpoints) map[string]string {
	out := maps.Clone(ep.Labels)
	if out == nil {
		out = map[string]string{}
	}
	out[discoveryv1.LabelServiceName] = ep.Name
	out[discoveryv1.LabelManagedBy] = ControllerName
	return out
}

// sliceAnnotations are the Endpoints' annotations but
// last-applied-configuration and the last-change trigger time.
func sliceAnnotations(ep *corev1.Endpoints) map[string]string {
	out := map[string]string{}
	for k, v := range ep.Annotations {
		if k != corev1.LastAppliedConfigAnnotation && k != corev1.EndpointsLastChangeTriggerTime {
			out[k] = v
		}
	}
	return out
}

// recycle turns a delete and a create of the same address type into one
// update of the deleted slice.
func recycle(plan *endpointslice.Plan) {
	var keep []*discoveryv1.EndpointSlice
	for _, d := range plan.Delete {
		i := slices.IndexFunc(plan.Create, func(c *discoveryv1.EndpointSlice) bool { return c.AddressType == d.AddressType })
		if i < 0 {
			keep = append(keep, d)
			continue
		}
		c := plan.Create[i]
		plan.Create = slices.Delete(plan.Create, i, i+1)
		u := d.DeepCopy()
		u.Labels, u.Annotations, u.OwnerReferences, u.Ports, u.Endpoints = c.Labels, c.Annotations, c.OwnerReferences, c.Ports, c.Endpoints
		plan.Update = append(plan.Update, u)
	}
	plan.Delete = keep
}
