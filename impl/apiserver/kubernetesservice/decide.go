// Package kubernetesservice keeps the `kubernetes` Service's Endpoints and
// EndpointSlice listing exactly the API servers that are alive, as
// kube-apiserver's lease endpoint reconciler (--endpoint-reconciler-type=lease,
// its default) does: each API server keeps a lease on its advertised
// address in etcd (Leases, under /masterleases/<ip>, with a time to live),
// renews it every reconcile interval, and makes the Endpoints list the
// addresses of the live leases. A server that stops gracefully removes its
// lease and address at once; one that dies loses its address when its
// lease expires.
//
// The decisions (Addresses, Endpoints, EndpointSlice) are pure functions of
// the leases and the objects as stored; package apiserver does the reads
// and writes.
package kubernetesservice

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	// Name is the name of the Service, Endpoints and EndpointSlice, in
	// the default namespace.
	Name = "kubernetes"
	// PortName is the name of their one port.
	PortName = "https"
)

// Addresses are the lease addresses listed in the Endpoints: those of the
// Service's IP family (ipv6 or not; a single-stack Service lists one
// family), valid, once each, sorted as strings, as kube-apiserver sorts
// them.
func Addresses(leases []string, ipv6 bool) []string {
	out := make([]string, 0, len(leases))
	for _, l := range leases {
		a, err := netip.ParseAddr(l)
		if err != nil || a.Unmap().Is6() != ipv6 {
			continue
		}
		out = append(out, a.Unmap().String())
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// EndpointPorts are the Endpoints' ports for an API server port.
func EndpointPorts(port int32) []corev1.EndpointPort {
	return []corev1.EndpointPort{{Name: PortName, Port: port, Protocol: corev1.ProtocolTCP}}
}

// Endpoints is the Endpoints to write so that cur (nil: there is none)
// lists exactly addrs (from Addresses), or nil when cur already does.
// As kube-apiserver's reconciler: the labels are exactly the skip-mirror
// label (the EndpointSlice mirroring controller leaves it alone; this
// reconciler writes the EndpointSlice itself); the ports are set when
// missing, and replaced by ports only when resetPorts (a server removing
// itself), so that servers disagreeing on the port do not rewrite it
// back and forth. With no address the Endpoints have no subset (a subset
// needs an address).
func Endpoints(cur *corev1.Endpoints, addrs []string, ports []corev1.EndpointPort, resetPorts bool) *corev1.Endpoints {
	var want *corev1.Endpoints
	if cur != nil {
		want = cur.DeepCopy()
	} else {
		want = &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: metav1.NamespaceDefault}}
	}
	want.Labels = map[string]string{discoveryv1.LabelSkipMirror: "true"}
	if len(addrs) == 0 {
		want.Subsets = nil
	} else {
		curPorts := []corev1.EndpointPort(nil)
		if len(want.Subsets) == 1 {
			curPorts = want.Subsets[0].Ports
		}
		if len(curPorts) == 0 || (resetPorts && !apiequality.Semantic.DeepEqual(curPorts, ports)) {
			curPorts = ports
		}
		ss := corev1.EndpointSubset{Addresses: make([]corev1.EndpointAddress, len(addrs)), Ports: curPorts}
		for i, a := range addrs {
			ss.Addresses[i] = corev1.EndpointAddress{IP: a}
		}
		want.Subsets = []corev1.EndpointSubset{ss}
	}
	if cur != nil && apiequality.Semantic.DeepEqual(cur.Subsets, want.Subsets) &&
		apiequality.Semantic.DeepEqual(cur.Labels, want.Labels) {
		return nil
	}
	return want
}

// AddressType is the EndpointSlice address type of the Service's family.
func AddressType(ipv6 bool) discoveryv1.AddressType {
	if ipv6 {
		return discoveryv1.AddressTypeIPv6
	}
	return discoveryv1.AddressTypeIPv4
}

// SliceChange is what EndpointSlice decided.
type SliceChange struct {
	// Write is the EndpointSlice to create (when there is none, or
	// Recreate) or update; nil: cur is right.
	Write *discoveryv1.EndpointSlice
	// Recreate: cur has another address type, which cannot be changed;
	// it is deleted and Write created.
	Recreate bool
}

// EndpointSlice decides the `kubernetes` EndpointSlice as kube-apiserver
// writes it next to the Endpoints: named and labelled for the Service
// (kubernetes.io/service-name only: no managed-by label, so the
// EndpointSlice controller leaves it alone), one ready endpoint per
// address, the ports set as Endpoints does.
func EndpointSlice(cur *discoveryv1.EndpointSlice, addrs []string, ports []corev1.EndpointPort, addressType discoveryv1.AddressType, resetPorts bool) SliceChange {
	recreate := cur != nil && cur.AddressType != addressType
	var want *discoveryv1.EndpointSlice
	if cur != nil && !recreate {
		want = cur.DeepCopy()
	} else {
		want = &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: Name, Namespace: metav1.NamespaceDefault}}
	}
	want.Labels = map[string]string{discoveryv1.LabelServiceName: Name}
	want.AddressType = addressType
	want.Endpoints = make([]discoveryv1.Endpoint, len(addrs))
	for i, a := range addrs {
		ready := true
		want.Endpoints[i] = discoveryv1.Endpoint{Addresses: []string{a}, Conditions: discoveryv1.EndpointConditions{Ready: &ready}}
	}
	slicePorts := make([]discoveryv1.EndpointPort, len(ports))
	for i, p := range ports {
		slicePorts[i] = discoveryv1.EndpointPort{Name: &p.Name, Port: &p.Port, Protocol: &p.Protocol}
	}
	if len(want.Ports) == 0 || (resetPorts && !apiequality.Semantic.DeepEqual(want.Ports, slicePorts)) {
		want.Ports = slicePorts
	}
	if cur != nil && !recreate && apiequality.Semantic.DeepEqual(cur.Endpoints, want.Endpoints) &&
		apiequality.Semantic.DeepEqual(cur.Ports, want.Ports) && apiequality.Semantic.DeepEqual(cur.Labels, want.Labels) {
		return SliceChange{}
	}
	return SliceChange{Write: want, Recreate: recreate}
}

// StraySlices are the names of the EndpointSlices labelled for the
// `kubernetes` Service other than its own (named kubernetes; one of the
// wrong address type is EndpointSlice's to recreate), which
// kube-apiserver deletes: another family's slice left by a dual-stack
// server, or one written by hand.
func StraySlices(listed []discoveryv1.EndpointSlice) []string {
	var out []string
	for _, sl := range listed {
		if sl.Labels[discoveryv1.LabelServiceName] == Name && sl.Name != Name {
			out = append(out, sl.Name)
		}
	}
	slices.Sort(out)
	return out
}
