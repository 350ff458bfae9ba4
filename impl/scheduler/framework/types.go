package framework

import (
	"errors"
	"fmt"
	"iter"
	"sync"
	"sync/atomic"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
)

// ErrNotFound is returned by CycleState.Read and listers for missing entries.
var ErrNotFound = errors.New("not found")

// PodInfo is a pod with what scheduling derives from it computed once: its
// resource requests and its parsed (anti-)affinity terms. The scheduler's
// cache keeps one per assigned pod (tens of thousands), so the terms, which
// most pods do not have, are behind a pointer: *PodAffinityInfo is never
// nil in a PodInfo made by NewPodInfo (pods without affinity share one
// empty value), so its fields read as the PodInfo's own.
//
// Likewise *PodRequestsInfo: pods with equal requests (a workload's) share
// one, so a cached pod costs three pointers.
type PodInfo struct {
	Pod *v1.Pod
	*PodRequestsInfo
	*PodAffinityInfo
}

// PodRequestsInfo is AccountedPodRequests(Pod). A PodInfo's is never changed, only
// replaced (Update), as it may be shared.
type PodRequestsInfo struct {
	Requests        Resource
	NonZeroRequests Resource
}

// requestsKey is a PodRequestsInfo without extended resources, by value.
type requestsKey struct{ cpu, mem, eph, nzCPU, nzMem, nzEph int64 }

// sharedRequests keeps one PodRequestsInfo per requestsKey, at most
// maxSharedRequests of them (then new ones stay unshared).
var sharedRequests = struct {
	sync.Mutex
	m map[requestsKey]*PodRequestsInfo
}{m: map[requestsKey]*PodRequestsInfo{}}

const maxSharedRequests = 4096

// podRequestsInfo returns the PodRequestsInfo of pod, shared with equal
// ones when it has no extended resources.
func podRequestsInfo(pod *v1.Pod) *PodRequestsInfo {
	r, nz := AccountedPodRequests(pod)
	if len(r.ScalarResources) > 0 || len(nz.ScalarResources) > 0 || r.AllowedPodNumber != 0 || nz.AllowedPodNumber != 0 {
		return &PodRequestsInfo{Requests: r, NonZeroRequests: nz}
	}
	key := requestsKey{r.MilliCPU, r.Memory, r.EphemeralStorage, nz.MilliCPU, nz.Memory, nz.EphemeralStorage}
	sharedRequests.Lock()
	defer sharedRequests.Unlock()
	if ri, ok := sharedRequests.m[key]; ok {
		return ri
	}
	ri := &PodRequestsInfo{Requests: r, NonZeroRequests: nz}
	if len(sharedRequests.m) < maxSharedRequests {
		sharedRequests.m[key] = ri
	}
	return ri
}

// PodAffinityInfo is a pod's parsed (anti-)affinity terms. A PodInfo's is
// never changed, only replaced (Update), as it may be shared.
type PodAffinityInfo struct {
	RequiredAffinityTerms      []AffinityTerm
	RequiredAntiAffinityTerms  []AffinityTerm
	PreferredAffinityTerms     []WeightedAffinityTerm
	PreferredAntiAffinityTerms []WeightedAffinityTerm
	// ParseError records an unparsable selector in the pod's affinity.
	ParseError error
}

// noAffinity is the PodAffinityInfo of every pod without affinity.
var noAffinity = &PodAffinityInfo{}

// AffinityTerm is a parsed PodAffinityTerm.
type AffinityTerm struct {
	Namespaces  sets.Set[string]
	Selector    labels.Selector
	TopologyKey string
	// NamespaceSelector is nil when the term names no namespaceSelector;
	// an empty selector matches every namespace.
	NamespaceSelector labels.Selector
}

// WeightedAffinityTerm is a parsed WeightedPodAffinityTerm.
type WeightedAffinityTerm struct {
	AffinityTerm
	Weight int32
}

// Matches reports whether pod is selected by the term. nsLabels looks up
// the labels of a namespace; it is only called for terms with a non-empty
// namespaceSelector and may be nil (no namespace then matches such a term).
func (t *AffinityTerm) Matches(pod *v1.Pod, nsLabels func(namespace string) labels.Set) bool {
	if !t.Namespaces.Has(pod.Namespace) && !t.namespaceSelected(pod.Namespace, nsLabels) {
		return false
	}
	return t.Selector.Matches(labels.Set(pod.Labels))
}

func (t *AffinityTerm) namespaceSelected(ns string, nsLabels func(string) labels.Set) bool {
	switch {
	case t.NamespaceSelector == nil:
		return false
	case t.NamespaceSelector.Empty():
		return true
	case nsLabels == nil:
		return false
	}
	return t.NamespaceSelector.Matches(nsLabels(ns))
}

// NewPodInfo computes a PodInfo.
func NewPodInfo(pod *v1.Pod) *PodInfo {
	pi := &PodInfo{}
	pi.Update(pod)
	return pi
}

// Update recomputes the PodInfo for a new version of the pod.
func (pi *PodInfo) Update(pod *v1.Pod) {
	pi.Pod = pod
	pi.PodRequestsInfo = podRequestsInfo(pod)
	pi.PodAffinityInfo = noAffinity
	a := pod.Spec.Affinity
	if a == nil || a.PodAffinity == nil && a.PodAntiAffinity == nil {
		return
	}
	var errs []error
	ai := &PodAffinityInfo{}
	if pa := a.PodAffinity; pa != nil {
		ai.RequiredAffinityTerms = parseTerms(pod, pa.RequiredDuringSchedulingIgnoredDuringExecution, &errs)
		ai.PreferredAffinityTerms = parseWeightedTerms(pod, pa.PreferredDuringSchedulingIgnoredDuringExecution, &errs)
	}
	if pa := a.PodAntiAffinity; pa != nil {
		ai.RequiredAntiAffinityTerms = parseTerms(pod, pa.RequiredDuringSchedulingIgnoredDuringExecution, &errs)
		ai.PreferredAntiAffinityTerms = parseWeightedTerms(pod, pa.PreferredDuringSchedulingIgnoredDuringExecution, &errs)
	}
	ai.ParseError = errors.Join(errs...)
	pi.PodAffinityInfo = ai
}

func parseTerms(pod *v1.Pod, terms []v1.PodAffinityTerm, errs *[]error) []AffinityTerm {
	if len(terms) == 0 {
		return nil
	}
	out := make([]AffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(pod, &terms[i])
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		out = append(out, t)
	}
	return out
}

func parseWeightedTerms(pod *v1.Pod, terms []v1.WeightedPodAffinityTerm, errs *[]error) []WeightedAffinityTerm {
	if len(terms) == 0 {
		return nil
	}
	out := make([]WeightedAffinityTerm, 0, len(terms))
	for i := range terms {
		t, err := newAffinityTerm(pod, &terms[i].PodAffinityTerm)
		if err != nil {
			*errs = append(*errs, err)
			continue
		}
		out = append(out, WeightedAffinityTerm{AffinityTerm: t, Weight: terms[i].Weight})
	}
	return out
}

// newAffinityTerm parses a term: namespaces default to the pod's own when
// neither namespaces nor namespaceSelector is given. matchLabelKeys and
// mismatchLabelKeys are not read: the API server merged them into the
// labelSelector when the pod was created (MatchLabelKeysInPodAffinity), as
// upstream's scheduler relies on.
func newAffinityTerm(pod *v1.Pod, term *v1.PodAffinityTerm) (AffinityTerm, error) {
	sel, err := metav1.LabelSelectorAsSelector(term.LabelSelector)
	if err != nil {
		return AffinityTerm{}, fmt.Errorf("parsing pod affinity labelSelector: %w", err)
	}
	t := AffinityTerm{Selector: sel, TopologyKey: term.TopologyKey, Namespaces: sets.New(term.Namespaces...)}
	if term.NamespaceSelector != nil {
		ns, err := metav1.LabelSelectorAsSelector(term.NamespaceSelector)
		if err != nil {
			return AffinityTerm{}, fmt.Errorf("parsing pod affinity namespaceSelector: %w", err)
		}
		t.NamespaceSelector = ns
	}
	if len(term.Namespaces) == 0 && term.NamespaceSelector == nil {
		t.Namespaces.Insert(pod.Namespace)
	}
	return t, nil
}

// ImageNames yields each distinct name of the images in the node's
// status.images.
func ImageNames(node *v1.Node) iter.Seq[string] {
	return func(yield func(string) bool) {
		seen := make(map[string]bool)
		for _, img := range node.Status.Images {
			for _, name := range img.Names {
				if seen[name] {
					continue
				}
				seen[name] = true
				if !yield(name) {
					return
				}
			}
		}
	}
}

// NodeInfo is a node with the pods assigned to it (bound or assumed) and the
// aggregates the plugins need.
//
// Every pod's filter and score pass reads a few facts of several hundred
// nodes (the adaptive percentageOfNodesToScore), 10 ms apart at 100 pods/s,
// while the rest of the process evicts them from the caches in between: so
// the facts those passes read are kept here, first in the struct and
// computed once per node change (SetNode), instead of each pass following
// the pointer to the node's large, scattered v1.Node (its name at one end,
// its spec another cache line away, its taints and their effect strings
// further). The snapshot keeps its NodeInfos in one array (cache.Snapshot).
type NodeInfo struct {
	// The facts every pass reads: the node's name, its spec.unschedulable,
	// its taints split by effect (nil without taints), the pod count and
	// the resources.
	name          string
	unschedulable bool
	taints        *NodeTaints
	node          *v1.Node

	Pods []*PodInfo

	// Requested is the sum of the pods' requests; NonZeroRequested the same
	// with the scoring defaults; Allocatable the node's allocatable.
	Requested        Resource
	NonZeroRequested Resource
	Allocatable      Resource

	PodsWithAffinity             []*PodInfo
	PodsWithRequiredAntiAffinity []*PodInfo
	UsedPorts                    HostPortInfo

	// Generation increases on every change; snapshots copy only NodeInfos
	// whose generation is newer than theirs.
	Generation int64
}

// NodeTaints is a node's spec.taints split by effect, each list in the
// node's order: what TaintToleration's Filter (NoSchedule and NoExecute)
// and Score (PreferNoSchedule) look at. Never changed, only replaced.
type NodeTaints struct {
	NoScheduleOrNoExecute []v1.Taint
	PreferNoSchedule      []v1.Taint
}

// splitTaints returns the node's taints by effect, nil when it has none.
// Taints with another effect are in neither list, as the plugins skip them.
func splitTaints(taints []v1.Taint) *NodeTaints {
	if len(taints) == 0 {
		return nil
	}
	t := &NodeTaints{}
	for i := range taints {
		switch taints[i].Effect {
		case v1.TaintEffectNoSchedule, v1.TaintEffectNoExecute:
			t.NoScheduleOrNoExecute = append(t.NoScheduleOrNoExecute, taints[i])
		case v1.TaintEffectPreferNoSchedule:
			t.PreferNoSchedule = append(t.PreferNoSchedule, taints[i])
		}
	}
	return t
}

// NewNodeInfo builds a NodeInfo holding the given pods (tests, snapshots).
func NewNodeInfo(pods ...*v1.Pod) *NodeInfo {
	ni := &NodeInfo{}
	for _, p := range pods {
		ni.AddPodInfo(NewPodInfo(p))
	}
	return ni
}

// Node returns the node, nil if it was deleted while pods remain.
func (n *NodeInfo) Node() *v1.Node {
	if n == nil {
		return nil
	}
	return n.node
}

// SetNode sets the node and the facts the plugins read of it: its name,
// spec.unschedulable, taints by effect and allocatable. The node must not
// be changed afterwards (a new version is set anew), as informers' objects.
func (n *NodeInfo) SetNode(node *v1.Node) {
	n.node = node
	n.name = node.Name
	n.unschedulable = node.Spec.Unschedulable
	n.taints = splitTaints(node.Spec.Taints)
	n.Allocatable = NewResource(node.Status.Allocatable)
}

// RemoveNode clears the node, keeping its pods.
func (n *NodeInfo) RemoveNode() {
	n.node = nil
	n.name, n.unschedulable, n.taints = "", false, nil
}

// Name returns the node's name ("" without a node).
func (n *NodeInfo) Name() string {
	if n == nil {
		return ""
	}
	return n.name
}

// Unschedulable is the node's spec.unschedulable (false without a node).
func (n *NodeInfo) Unschedulable() bool { return n.unschedulable }

// Taints returns the node's taints by effect, nil if it has none (or no
// node). The lists must not be changed.
func (n *NodeInfo) Taints() *NodeTaints { return n.taints }

// AddPodInfo accounts for a pod on the node.
func (n *NodeInfo) AddPodInfo(pi *PodInfo) {
	n.Pods = append(n.Pods, pi)
	if len(pi.RequiredAffinityTerms) > 0 || len(pi.RequiredAntiAffinityTerms) > 0 ||
		len(pi.PreferredAffinityTerms) > 0 || len(pi.PreferredAntiAffinityTerms) > 0 {
		n.PodsWithAffinity = append(n.PodsWithAffinity, pi)
	}
	if len(pi.RequiredAntiAffinityTerms) > 0 {
		n.PodsWithRequiredAntiAffinity = append(n.PodsWithRequiredAntiAffinity, pi)
	}
	n.update(pi, 1)
}

// RemovePod removes the pod with pod's UID from the node.
func (n *NodeInfo) RemovePod(pod *v1.Pod) error {
	n.PodsWithAffinity = removeFromSlice(n.PodsWithAffinity, pod.UID)
	n.PodsWithRequiredAntiAffinity = removeFromSlice(n.PodsWithRequiredAntiAffinity, pod.UID)
	for i, pi := range n.Pods {
		if pi.Pod.UID == pod.UID {
			last := len(n.Pods) - 1
			n.Pods[i] = n.Pods[last]
			n.Pods[last] = nil
			n.Pods = n.Pods[:last]
			n.update(pi, -1)
			return nil
		}
	}
	return fmt.Errorf("no pod %s/%s (uid %s) on node %q", pod.Namespace, pod.Name, pod.UID, n.Name())
}

// RemovePodInfo removes pi, a PodInfo added to this NodeInfo (or to the
// one it was cloned from), found by pointer: the cache, which keeps each
// pod's PodInfo, removes a pod without reading the UID of every pod on the
// node (a cache miss each, tens per node).
func (n *NodeInfo) RemovePodInfo(pi *PodInfo) error {
	n.PodsWithAffinity = removeInfoFromSlice(n.PodsWithAffinity, pi)
	n.PodsWithRequiredAntiAffinity = removeInfoFromSlice(n.PodsWithRequiredAntiAffinity, pi)
	for i, p := range n.Pods {
		if p == pi {
			last := len(n.Pods) - 1
			n.Pods[i] = n.Pods[last]
			n.Pods[last] = nil
			n.Pods = n.Pods[:last]
			n.update(pi, -1)
			return nil
		}
	}
	return fmt.Errorf("no pod %s/%s (uid %s) on node %q", pi.Pod.Namespace, pi.Pod.Name, pi.Pod.UID, n.Name())
}

func removeInfoFromSlice(s []*PodInfo, pi *PodInfo) []*PodInfo {
	for i, p := range s {
		if p == pi {
			last := len(s) - 1
			s[i] = s[last]
			s[last] = nil
			return s[:last]
		}
	}
	return s
}

func removeFromSlice(s []*PodInfo, uid types.UID) []*PodInfo {
	for i, pi := range s {
		if pi.Pod.UID == uid {
			last := len(s) - 1
			s[i] = s[last]
			s[last] = nil
			return s[:last]
		}
	}
	return s
}

func (n *NodeInfo) update(pi *PodInfo, sign int64) {
	if sign > 0 {
		n.Requested.AddResource(&pi.Requests)
		n.NonZeroRequested.AddResource(&pi.NonZeroRequests)
	} else {
		n.Requested.SubResource(&pi.Requests)
		n.NonZeroRequested.SubResource(&pi.NonZeroRequests)
	}
	for i := range pi.Pod.Spec.Containers {
		for _, p := range pi.Pod.Spec.Containers[i].Ports {
			if p.HostPort <= 0 {
				continue
			}
			if sign > 0 {
				n.UsedPorts.Add(p.HostIP, string(p.Protocol), p.HostPort)
			} else {
				n.UsedPorts.Remove(p.HostIP, string(p.Protocol), p.HostPort)
			}
		}
	}
	n.Generation = NextGeneration()
}

// Clone returns a copy whose slices and maps can change independently; the
// node and PodInfos themselves are shared (they are immutable).
func (n *NodeInfo) Clone() *NodeInfo {
	c := &NodeInfo{
		name:             n.name,
		unschedulable:    n.unschedulable,
		taints:           n.taints,
		node:             n.node,
		Requested:        n.Requested.Clone(),
		NonZeroRequested: n.NonZeroRequested.Clone(),
		Allocatable:      n.Allocatable.Clone(),
		Generation:       n.Generation,
		UsedPorts:        n.UsedPorts.Clone(),
	}
	if len(n.Pods) > 0 {
		c.Pods = append(make([]*PodInfo, 0, len(n.Pods)+1), n.Pods...)
	}
	if len(n.PodsWithAffinity) > 0 {
		c.PodsWithAffinity = append([]*PodInfo(nil), n.PodsWithAffinity...)
	}
	if len(n.PodsWithRequiredAntiAffinity) > 0 {
		c.PodsWithRequiredAntiAffinity = append([]*PodInfo(nil), n.PodsWithRequiredAntiAffinity...)
	}
	return c
}

// HostPortInfo records the host ports in use: IP -> protocol/port.
type HostPortInfo map[string]map[ProtocolPort]struct{}

// ProtocolPort is a protocol and port.
type ProtocolPort struct {
	Protocol string
	Port     int32
}

// DefaultBindAllHostIP is the wildcard address.
const DefaultBindAllHostIP = "0.0.0.0"

func sanitize(ip, protocol string) (string, string) {
	if ip == "" {
		ip = DefaultBindAllHostIP
	}
	if protocol == "" {
		protocol = string(v1.ProtocolTCP)
	}
	return ip, protocol
}

// Add records a used port.
func (h *HostPortInfo) Add(ip, protocol string, port int32) {
	if port <= 0 {
		return
	}
	ip, protocol = sanitize(ip, protocol)
	if *h == nil {
		*h = HostPortInfo{}
	}
	if (*h)[ip] == nil {
		(*h)[ip] = map[ProtocolPort]struct{}{}
	}
	(*h)[ip][ProtocolPort{protocol, port}] = struct{}{}
}

// Remove forgets a used port.
func (h HostPortInfo) Remove(ip, protocol string, port int32) {
	if port <= 0 || h == nil {
		return
	}
	ip, protocol = sanitize(ip, protocol)
	if m, ok := h[ip]; ok {
		delete(m, ProtocolPort{protocol, port})
		if len(m) == 0 {
			delete(h, ip)
		}
	}
}

// CheckConflict reports whether the port is already used: the wildcard IP
// conflicts with every IP for the same protocol and port.
func (h HostPortInfo) CheckConflict(ip, protocol string, port int32) bool {
	if port <= 0 {
		return false
	}
	ip, protocol = sanitize(ip, protocol)
	pp := ProtocolPort{protocol, port}
	if ip == DefaultBindAllHostIP {
		for _, m := range h {
			if _, ok := m[pp]; ok {
				return true
			}
		}
		return false
	}
	for _, key := range []string{DefaultBindAllHostIP, ip} {
		if m, ok := h[key]; ok {
			if _, ok := m[pp]; ok {
				return true
			}
		}
	}
	return false
}

// Clone deep-copies the map.
func (h HostPortInfo) Clone() HostPortInfo {
	if h == nil {
		return nil
	}
	c := make(HostPortInfo, len(h))
	for ip, m := range h {
		cm := make(map[ProtocolPort]struct{}, len(m))
		for k := range m {
			cm[k] = struct{}{}
		}
		c[ip] = cm
	}
	return c
}

var generation atomic.Int64

// NextGeneration returns a new, larger generation number.
func NextGeneration() int64 { return generation.Add(1) }
