// Package endpoints is the endpoints controller, as kube-controller-manager's
// endpoint controller (--controllers name "endpoint", service account
// endpoint-controller): it keeps the Endpoints object of every service with
// a selector equal to the pods that selector matches in the service's
// namespace, and deletes the Endpoints of a deleted service. Services
// without a selector are left alone: their Endpoints belong to users or,
// for the `kubernetes` service, to the API servers.
//
// Decide is a pure function of the service, its namespace's pods and the
// current Endpoints, returning the Endpoints to write (or the delete) as
// data; Controller is the thin informer loop that does the writes. The
// Endpoints written carry upstream's last-change-trigger-time annotation
// (TriggerTimes, whose decision nextTriggerTime is pure too), and the syncs
// pod changes cause can be batched (WithBatchPeriod).
package endpoints

import (
	"cmp"
	"maps"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/impl/controller/podstate"
	"github.com/kubeproof/kubeproof/impl/ipfamily"
)

// Labels and annotations the controller sets, as upstream's.
const (
	// HeadlessLabel marks the Endpoints of a headless service (clusterIP
	// None).
	HeadlessLabel = "service.kubernetes.io/headless"
	// OverCapacityAnnotation is set to "truncated" on Endpoints that hold
	// MaxAddresses of more matching addresses.
	OverCapacityAnnotation = "endpoints.kubernetes.io/over-capacity"
	overCapacityTruncated  = "truncated"
	// MaxAddresses is how many addresses (ready and not ready) one
	// Endpoints object holds at most.
	MaxAddresses = 1000
)

// Action is the write a sync makes.
type Action int

// Actions.
const (
	None Action = iota
	Create
	Update
	Delete
)

func (a Action) String() string {
	switch a {
	case Create:
		return "create"
	case Update:
		return "update"
	case Delete:
		return "delete"
	}
	return "none"
}

// Plan is Decide's result: the write and, for Create and Update, the
// Endpoints object to send (a copy of the current one with subsets,
// labels and the capacity annotation replaced).
type Plan struct {
	Action    Action
	Endpoints *corev1.Endpoints
}

// Decide returns what the Endpoints of svc should become. svc nil means
// the service is gone: its Endpoints, if any, are deleted. A service
// without a selector, or of type ExternalName, is never touched. pods are the pods of the service's
// namespace (those its selector does not match are ignored); current is
// the existing Endpoints of the same name or nil. Nothing is written when
// the subsets, labels and capacity annotation already match, so an
// unchanged state never rewrites.
func Decide(svc *corev1.Service, pods []*corev1.Pod, current *corev1.Endpoints) Plan {
	if svc == nil {
		if current == nil {
			return Plan{}
		}
		return Plan{Action: Delete, Endpoints: current}
	}
	if len(svc.Spec.Selector) == 0 || svc.Spec.Type == corev1.ServiceTypeExternalName {
		// An ExternalName service gets no Endpoints from the controller
		// even with a selector, as upstream's; existing ones stay.
		return Plan{}
	}
	subsets, truncated := Subsets(svc, pods)
	wantLabels := serviceLabels(svc)
	if current != nil && equality.Semantic.DeepEqual(current.Subsets, subsets) &&
		labelsEqual(current.Labels, wantLabels) && (current.Annotations[OverCapacityAnnotation] == overCapacityTruncated) == truncated {
		return Plan{}
	}
	var ep *corev1.Endpoints
	action := Update
	if current == nil {
		action = Create
		ep = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Namespace: svc.Namespace, Name: svc.Name}}
	} else {
		ep = current.DeepCopy()
	}
	ep.Subsets = subsets
	ep.Labels = wantLabels
	if truncated {
		if ep.Annotations == nil {
			ep.Annotations = map[string]string{}
		}
		ep.Annotations[OverCapacityAnnotation] = overCapacityTruncated
	} else {
		delete(ep.Annotations, OverCapacityAnnotation)
	}
	return Plan{Action: action, Endpoints: ep}
}

// serviceLabels are the Endpoints' labels: the service's, plus the
// headless label for a headless service.
func serviceLabels(svc *corev1.Service) map[string]string {
	out := maps.Clone(svc.Labels)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone {
		if out == nil {
			out = map[string]string{}
		}
		out[HeadlessLabel] = ""
	}
	return out
}

func labelsEqual(a, b map[string]string) bool { return maps.Equal(a, b) }

// Subsets returns the packed subsets of svc over pods, and whether more
// than MaxAddresses addresses were found (the subsets are then
// truncated). Pods not matched by the selector, without an IP, in a
// terminal phase or terminating (unless the service publishes not-ready
// addresses) are left out. A pod lacking a named target port is left out
// of that port. Addresses with the same set of ports share one subset;
// subsets, addresses and ports are sorted, so the result depends only on
// the state, never on the order of pods.
func Subsets(svc *corev1.Service, pods []*corev1.Pod) ([]corev1.EndpointSubset, bool) {
	selector := labels.SelectorFromSet(svc.Spec.Selector)
	publishNotReady := svc.Spec.PublishNotReadyAddresses
	headless := svc.Spec.ClusterIP == corev1.ClusterIPNone
	groups := map[string]*corev1.EndpointSubset{}
	for _, pod := range pods {
		if pod.Namespace != svc.Namespace || !selector.Matches(labels.Set(pod.Labels)) || !inEndpoints(pod, publishNotReady) {
			continue
		}
		// The pod's address of the service's primary family; a pod
		// without one is left out, as upstream.
		ip := PodIPOfFamily(pod, EndpointsFamily(svc, pod))
		if ip == "" {
			continue
		}
		var ports []corev1.EndpointPort
		if len(svc.Spec.Ports) == 0 {
			if !headless {
				continue
			}
		} else {
			for i := range svc.Spec.Ports {
				if p, ok := endpointPort(pod, &svc.Spec.Ports[i]); ok {
					ports = append(ports, p)
				}
			}
			if len(ports) == 0 {
				continue
			}
		}
		slices.SortFunc(ports, comparePorts)
		key := portsKey(ports)
		g := groups[key]
		if g == nil {
			g = &corev1.EndpointSubset{Ports: ports}
			groups[key] = g
		}
		addr := address(svc, pod, ip)
		if publishNotReady || podstate.IsReady(pod) {
			g.Addresses = append(g.Addresses, addr)
		} else {
			g.NotReadyAddresses = append(g.NotReadyAddresses, addr)
		}
	}
	keys := slices.Sorted(maps.Keys(groups))
	subsets := make([]corev1.EndpointSubset, 0, len(keys))
	for _, k := range keys {
		g := groups[k]
		slices.SortFunc(g.Addresses, compareAddresses)
		slices.SortFunc(g.NotReadyAddresses, compareAddresses)
		subsets = append(subsets, *g)
	}
	if len(subsets) == 0 {
		return nil, false
	}
	return truncate(subsets)
}

// inEndpoints reports whether pod has an address at all: it has an IP, is
// not in a terminal phase, and is not terminating unless the service
// publishes not-ready addresses (those keep terminating pods).
func inEndpoints(pod *corev1.Pod, publishNotReady bool) bool {
	if PodIP(pod) == "" {
		return false
	}
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false
	}
	return publishNotReady || pod.DeletionTimestamp == nil
}

// PodIP is the pod's primary IP ("" before it has one).
func PodIP(pod *corev1.Pod) string {
	if pod.Status.PodIP != "" {
		return pod.Status.PodIP
	}
	if len(pod.Status.PodIPs) > 0 {
		return pod.Status.PodIPs[0].IP
	}
	return ""
}

// PodIPs are the pod's IPs, the primary first (status.podIPs, or podIP
// alone when podIPs is unset).
func PodIPs(pod *corev1.Pod) []string {
	if len(pod.Status.PodIPs) == 0 {
		if pod.Status.PodIP == "" {
			return nil
		}
		return []string{pod.Status.PodIP}
	}
	out := make([]string, len(pod.Status.PodIPs))
	for i, ip := range pod.Status.PodIPs {
		out[i] = ip.IP
	}
	return out
}

// PodIPOfFamily is the pod's first IP of family f ("" when it has none).
func PodIPOfFamily(pod *corev1.Pod, f corev1.IPFamily) string {
	for _, ip := range PodIPs(pod) {
		if ipfamily.Of(ip) == f {
			return ip
		}
	}
	return ""
}

// EndpointsFamily is the family of the addresses the Endpoints of svc
// list, as upstream's endpoints controller: the service's primary family
// (ipFamilies[0], headful or headless); without families (a service
// written before they existed), its ClusterIP's family, or for a headless
// service the pod's primary IP's; IPv4 when nothing says.
func EndpointsFamily(svc *corev1.Service, pod *corev1.Pod) corev1.IPFamily {
	if len(svc.Spec.IPFamilies) > 0 {
		return svc.Spec.IPFamilies[0]
	}
	ip := svc.Spec.ClusterIP
	if ip == "" || ip == corev1.ClusterIPNone {
		ip = PodIP(pod)
	}
	if ipfamily.Of(ip) == corev1.IPv6Protocol {
		return corev1.IPv6Protocol
	}
	return corev1.IPv4Protocol
}

// address is pod's EndpointAddress for svc at ip; the hostname is the
// pod's when its subdomain names the service.
func address(svc *corev1.Service, pod *corev1.Pod, ip string) corev1.EndpointAddress {
	a := corev1.EndpointAddress{
		IP:        ip,
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
	}
	if pod.Spec.NodeName != "" {
		node := pod.Spec.NodeName
		a.NodeName = &node
	}
	if pod.Spec.Hostname != "" && pod.Spec.Subdomain == svc.Name {
		a.Hostname = pod.Spec.Hostname
	}
	return a
}

// endpointPort is sp's EndpointPort on pod, if its target port resolves.
func endpointPort(pod *corev1.Pod, sp *corev1.ServicePort) (corev1.EndpointPort, bool) {
	out := corev1.EndpointPort{Name: sp.Name, Protocol: ServicePortProtocol(sp), AppProtocol: sp.AppProtocol}
	port, ok := TargetPort(pod, sp)
	out.Port = port
	return out, ok
}

// ServicePortProtocol is sp's protocol, TCP when unset.
func ServicePortProtocol(sp *corev1.ServicePort) corev1.Protocol {
	if sp.Protocol == "" {
		return corev1.ProtocolTCP
	}
	return sp.Protocol
}

// TargetPort resolves sp's target port on pod: a number as it is (the
// service port when unset), a name through the pod's containers' ports of
// the same protocol; false when the pod has no such named port. The
// EndpointSlice controller resolves ports the same way.
func TargetPort(pod *corev1.Pod, sp *corev1.ServicePort) (int32, bool) {
	switch {
	case sp.TargetPort.Type == intstr.String && sp.TargetPort.StrVal != "":
		return namedPort(pod, sp.TargetPort.StrVal, ServicePortProtocol(sp))
	case sp.TargetPort.Type == intstr.Int && sp.TargetPort.IntVal != 0:
		return sp.TargetPort.IntVal, true
	default:
		return sp.Port, true
	}
}

func namedPort(pod *corev1.Pod, name string, protocol corev1.Protocol) (int32, bool) {
	for i := range pod.Spec.Containers {
		for _, p := range pod.Spec.Containers[i].Ports {
			pp := p.Protocol
			if pp == "" {
				pp = corev1.ProtocolTCP
			}
			if p.Name == name && pp == protocol {
				return p.ContainerPort, true
			}
		}
	}
	return 0, false
}

func comparePorts(a, b corev1.EndpointPort) int {
	return cmp.Or(cmp.Compare(a.Name, b.Name), cmp.Compare(a.Port, b.Port), cmp.Compare(a.Protocol, b.Protocol),
		cmp.Compare(deref(a.AppProtocol), deref(b.AppProtocol)))
}

func compareAddresses(a, b corev1.EndpointAddress) int {
	return cmp.Or(cmp.Compare(a.IP, b.IP), cmp.Compare(a.TargetRef.Namespace, b.TargetRef.Namespace),
		cmp.Compare(a.TargetRef.Name, b.TargetRef.Name), cmp.Compare(a.TargetRef.UID, b.TargetRef.UID))
}

// portsKey identifies a sorted port set.
func portsKey(ports []corev1.EndpointPort) string {
	var b strings.Builder
	for _, p := range ports {
		b.WriteString(p.Name)
		b.WriteByte(0)
		b.WriteString(strconv.Itoa(int(p.Port)))
		b.WriteByte(0)
		b.WriteString(string(p.Protocol))
		b.WriteByte(0)
		if p.AppProtocol != nil {
			b.WriteString("+" + *p.AppProtocol)
		}
		b.WriteByte(1)
	}
	return b.String()
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return "+" + *s
}

// truncate keeps at most MaxAddresses addresses, ready ones first (as
// upstream: when the ready ones fill the capacity, no not-ready address
// is kept), taking from each subset in proportion to its size.
func truncate(subsets []corev1.EndpointSubset) ([]corev1.EndpointSubset, bool) {
	ready, notReady := 0, 0
	for _, s := range subsets {
		ready += len(s.Addresses)
		notReady += len(s.NotReadyAddresses)
	}
	if ready+notReady <= MaxAddresses {
		return subsets, false
	}
	if ready >= MaxAddresses {
		keepReady := proportional(subsets, func(s *corev1.EndpointSubset) int { return len(s.Addresses) }, ready, MaxAddresses)
		out := subsets[:0]
		for i := range subsets {
			s := subsets[i]
			s.Addresses = s.Addresses[:keepReady[i]]
			s.NotReadyAddresses = nil
			if len(s.Addresses) > 0 {
				out = append(out, s)
			}
		}
		return out, true
	}
	keepNotReady := proportional(subsets, func(s *corev1.EndpointSubset) int { return len(s.NotReadyAddresses) }, notReady, MaxAddresses-ready)
	out := subsets[:0]
	for i := range subsets {
		s := subsets[i]
		s.NotReadyAddresses = s.NotReadyAddresses[:keepNotReady[i]]
		if len(s.NotReadyAddresses) == 0 {
			s.NotReadyAddresses = nil
		}
		if len(s.Addresses)+len(s.NotReadyAddresses) > 0 {
			out = append(out, s)
		}
	}
	return out, true
}

// proportional splits keep over the subsets in proportion to size(s) (of
// total), the rounding remainder going to the first subsets with room.
func proportional(subsets []corev1.EndpointSubset, size func(*corev1.EndpointSubset) int, total, keep int) []int {
	out := make([]int, len(subsets))
	given := 0
	for i := range subsets {
		out[i] = size(&subsets[i]) * keep / total
		given += out[i]
	}
	for i := 0; i < len(subsets) && given < keep; i++ {
		extra := min(size(&subsets[i])-out[i], keep-given)
		out[i] += extra
		given += extra
	}
	return out
}
