// Package intern shares equal values among the objects of an informer
// cache. Pods of one workload carry equal labels, resource requests,
// tolerations and many equal strings (namespace, node, image, condition
// types and reasons); a protobuf decode allocates each of them anew for
// every pod and every version of it. A Table maps each value to the first
// equal one it saw, so a cache of thousands of pods holds one copy.
//
// Sharing is safe because informer objects are read-only: every component
// copies an object (DeepCopy) before it changes it. Tables are bounded:
// once full, new values stay unshared, so a cluster whose objects all
// differ pays nothing for a table that grows with it.
package intern

import (
	"reflect"
	"slices"
	"strconv"
	"sync"
	"time"
	"unsafe"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Limits of a Table.
const (
	maxStrings = 16384
	maxValues  = 4096
)

// Table holds the shared values. Its methods are safe for concurrent use.
type Table struct {
	mu          sync.Mutex
	strings     map[string]string
	labels      map[string]map[string]string
	resources   map[string]v1.ResourceList
	tolerations map[string][]v1.Toleration
	conditions  map[string][]v1.PodCondition
	projected   map[string]*v1.ProjectedVolumeSource
	// Pod parts the API server defaults alike for every pod of a workload.
	podSecurity map[string]*v1.PodSecurityContext
	security    map[string]*v1.SecurityContext
	resize      map[string][]v1.ContainerResizePolicy
	ports       map[string][]v1.ContainerPort
	hostIPs     map[string][]v1.HostIP
	int64s      map[int64]*int64
	int32s      map[int32]*int32
	bools       map[bool]*bool
	preemption  map[string]*v1.PreemptionPolicy
	times       map[int64]*metav1.Time
	running     map[int64]*v1.ContainerStateRunning
	// requirements by their (shared) lists' maps (Requirements).
	requirements map[[2]unsafe.Pointer]*v1.ResourceRequirements
	// scratch is where byEncoding encodes (guarded by mu).
	scratch []byte
}

// New returns an empty table.
func New() *Table {
	return &Table{
		strings: map[string]string{}, labels: map[string]map[string]string{},
		resources: map[string]v1.ResourceList{}, tolerations: map[string][]v1.Toleration{},
		conditions: map[string][]v1.PodCondition{}, projected: map[string]*v1.ProjectedVolumeSource{},
		podSecurity: map[string]*v1.PodSecurityContext{}, security: map[string]*v1.SecurityContext{},
		resize: map[string][]v1.ContainerResizePolicy{}, ports: map[string][]v1.ContainerPort{}, hostIPs: map[string][]v1.HostIP{},
		int64s: map[int64]*int64{}, int32s: map[int32]*int32{}, bools: map[bool]*bool{}, preemption: map[string]*v1.PreemptionPolicy{},
		times: map[int64]*metav1.Time{}, running: map[int64]*v1.ContainerStateRunning{},
		requirements: map[[2]unsafe.Pointer]*v1.ResourceRequirements{},
	}
}

// Conditions returns the shared slice equal to cs. Conditions carry
// transition times in whole seconds, so pods that started together (a
// Deployment scaling up) have equal ones.
func (t *Table) Conditions(cs []v1.PodCondition) []v1.PodCondition {
	if len(cs) == 0 {
		return cs
	}
	var buf [keyBuffer]byte
	b := buf[:0]
	for i := range cs {
		c := &cs[i]
		b = append(b, c.Type...)
		b = append(b, 0)
		b = append(b, c.Status...)
		b = append(b, 0)
		b = append(b, c.Reason...)
		b = append(b, 0)
		b = append(b, c.Message...)
		b = append(b, 0)
		b = strconv.AppendInt(b, c.ObservedGeneration, 10)
		b = append(b, 0)
		b = strconv.AppendInt(b, c.LastProbeTime.UnixNano(), 10)
		b = append(b, 0)
		b = strconv.AppendInt(b, c.LastTransitionTime.UnixNano(), 10)
		b = append(b, 1)
	}
	return LookupBytes(&t.mu, t.conditions, maxValues, b, cs)
}

// Projected returns the shared projected volume source equal to p (every
// pod's kube-api-access volume projects the same token, CA bundle and
// namespace).
func (t *Table) Projected(p *v1.ProjectedVolumeSource) *v1.ProjectedVolumeSource {
	if p == nil {
		return nil
	}
	return byEncoding(&t.mu, t.projected, &t.scratch, p)
}

// PodSecurityContext returns the shared pod security context equal to sc
// (the API server defaults an absent one to an empty one on every pod).
func (t *Table) PodSecurityContext(sc *v1.PodSecurityContext) *v1.PodSecurityContext {
	if sc == nil {
		return nil
	}
	return byEncoding(&t.mu, t.podSecurity, &t.scratch, sc)
}

// SecurityContext returns the shared container security context equal to
// sc.
func (t *Table) SecurityContext(sc *v1.SecurityContext) *v1.SecurityContext {
	if sc == nil {
		return nil
	}
	return byEncoding(&t.mu, t.security, &t.scratch, sc)
}

// ResizePolicy returns the shared slice equal to ps (pods that set one
// mostly set the same few).
func (t *Table) ResizePolicy(ps []v1.ContainerResizePolicy) []v1.ContainerResizePolicy {
	if len(ps) == 0 {
		return ps
	}
	var buf [keyBuffer]byte
	b := buf[:0]
	for _, p := range ps {
		b = append(b, p.ResourceName...)
		b = append(b, 0)
		b = append(b, p.RestartPolicy...)
		b = append(b, 1)
	}
	return LookupBytes(&t.mu, t.resize, maxValues, b, ps)
}

// Ports returns the shared slice equal to ps.
func (t *Table) Ports(ps []v1.ContainerPort) []v1.ContainerPort {
	if len(ps) == 0 {
		return ps
	}
	var buf [keyBuffer]byte
	b := buf[:0]
	for _, p := range ps {
		b = append(b, p.Name...)
		b = append(b, 0)
		b = strconv.AppendInt(b, int64(p.HostPort), 10)
		b = append(b, 0)
		b = strconv.AppendInt(b, int64(p.ContainerPort), 10)
		b = append(b, 0)
		b = append(b, p.Protocol...)
		b = append(b, 0)
		b = append(b, p.HostIP...)
		b = append(b, 1)
	}
	return LookupBytes(&t.mu, t.ports, maxValues, b, ps)
}

// HostIPs returns the shared slice equal to ips (every pod of a node has
// the node's).
func (t *Table) HostIPs(ips []v1.HostIP) []v1.HostIP {
	if len(ips) == 0 {
		return ips
	}
	var buf [keyBuffer]byte
	b := buf[:0]
	for _, ip := range ips {
		b = append(b, ip.IP...)
		b = append(b, 0)
	}
	return LookupBytes(&t.mu, t.hostIPs, maxValues, b, ips)
}

// Int64 returns a shared pointer to *p's value (optional fields such as
// terminationGracePeriodSeconds, defaulted alike on every pod).
func (t *Table) Int64(p *int64) *int64 {
	if p == nil {
		return nil
	}
	return Lookup(&t.mu, t.int64s, maxValues, *p, p)
}

// Int32 returns a shared pointer to *p's value (priority).
func (t *Table) Int32(p *int32) *int32 {
	if p == nil {
		return nil
	}
	return Lookup(&t.mu, t.int32s, maxValues, *p, p)
}

// Bool returns a shared pointer to *p's value (enableServiceLinks).
func (t *Table) Bool(p *bool) *bool {
	if p == nil {
		return nil
	}
	return Lookup(&t.mu, t.bools, maxValues, *p, p)
}

// PreemptionPolicy returns a shared pointer to *p's value.
func (t *Table) PreemptionPolicy(p *v1.PreemptionPolicy) *v1.PreemptionPolicy {
	if p == nil {
		return nil
	}
	return Lookup(&t.mu, t.preemption, maxValues, string(*p), p)
}

// Time returns a shared pointer to *p's value. Status times are whole
// seconds, so the pods that started in one second (a Deployment scaling
// up) share their startTime. Only times in the local zone, as decoding
// makes them, are shared (an equal instant elsewhere is another value).
func (t *Table) Time(p *metav1.Time) *metav1.Time {
	if p == nil || p.Location() != time.Local {
		return p
	}
	return Lookup(&t.mu, t.times, maxValues, p.UnixNano(), p)
}

// Running returns a shared pointer to a running container state equal to
// *r (its start time, in whole seconds, local as Time's).
func (t *Table) Running(r *v1.ContainerStateRunning) *v1.ContainerStateRunning {
	if r == nil || r.StartedAt.Location() != time.Local {
		return r
	}
	return Lookup(&t.mu, t.running, maxValues, r.StartedAt.UnixNano(), r)
}

// Lookup returns the value stored under key in table, storing v there
// first if the table has fewer than limit entries; mu guards table. It is
// the bounded sharing every table here is built on, exported for caches
// of other types (the simulated runtime's records).
func Lookup[K comparable, T any](mu *sync.Mutex, table map[K]T, limit int, key K, v T) T {
	mu.Lock()
	defer mu.Unlock()
	if shared, ok := table[key]; ok {
		return shared
	}
	if len(table) < limit {
		table[key] = v
	}
	return v
}

// LookupBytes is Lookup for a key built in a byte slice (on the caller's
// stack): the lookup itself allocates nothing, only storing a new value
// makes the key a string. Every decoded pod version looks up a dozen
// values that are almost always there already.
func LookupBytes[T any](mu *sync.Mutex, table map[string]T, limit int, key []byte, v T) T {
	mu.Lock()
	defer mu.Unlock()
	return LookupBytesLocked(table, limit, key, v)
}

// LookupBytesLocked is LookupBytes for a caller that already holds the
// table's mutex (one that built the key in a scratch buffer the same
// mutex guards).
func LookupBytesLocked[T any](table map[string]T, limit int, key []byte, v T) T {
	if shared, ok := table[string(key)]; ok {
		return shared
	}
	if len(table) < limit {
		table[string(key)] = v
	}
	return v
}

// keyBuffer is the size of the stack buffers keys are built in (a longer
// key moves to the heap as append grows it): a Running pod's five
// conditions make ~500 bytes.
const keyBuffer = 1024

// sortedKeys appends m's keys to buf (which a caller's stack array backs
// for the usual handful) and sorts them.
func sortedKeys[K ~string, V any](m map[K]V, buf []K) []K {
	for k := range m {
		buf = append(buf, k)
	}
	slices.Sort(buf)
	return buf
}

// String returns the shared copy of s.
func (t *Table) String(s string) string {
	if s == "" {
		return s
	}
	return Lookup(&t.mu, t.strings, maxStrings, s, s)
}

// Labels returns the shared map equal to m (also for annotations and
// node selectors).
func (t *Table) Labels(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	var kb [16]string
	var buf [keyBuffer]byte
	b := buf[:0]
	for _, k := range sortedKeys(m, kb[:0]) {
		b = append(b, k...)
		b = append(b, 0)
		b = append(b, m[k]...)
		b = append(b, 0)
	}
	return LookupBytes(&t.mu, t.labels, maxValues, b, m)
}

// Resources returns the shared resource list equal to rl.
func (t *Table) Resources(rl v1.ResourceList) v1.ResourceList {
	if len(rl) == 0 {
		return rl
	}
	var kb [16]v1.ResourceName
	var buf [keyBuffer]byte
	b := buf[:0]
	for _, k := range sortedKeys(rl, kb[:0]) {
		q := rl[k]
		b = append(b, k...)
		b = append(b, 0)
		// The canonical form q.String() makes (and would keep in q, a
		// copy), written straight into the key.
		var qb [32]byte
		num, suffix := q.CanonicalizeBytes(qb[:0])
		b = append(b, num...)
		b = append(b, suffix...)
		b = append(b, 0)
	}
	return LookupBytes(&t.mu, t.resources, maxValues, b, rl)
}

// Requirements returns the shared requirements equal to r (a running
// container's status resources: the kubelet reports them for every one),
// with its lists shared first; r itself when it names claims. Equal
// shared lists are one map, so the lists' maps identify the requirements
// while the table of lists has room (its maps then are the table's, kept
// alive by it: no address is reused); once that is full, r's lists may be
// its own and r stays unshared.
func (t *Table) Requirements(r *v1.ResourceRequirements) *v1.ResourceRequirements {
	if r == nil || len(r.Claims) > 0 {
		return r
	}
	r.Requests, r.Limits = t.Resources(r.Requests), t.Resources(r.Limits)
	t.mu.Lock()
	defer t.mu.Unlock()
	if len(t.resources) >= maxValues {
		return r
	}
	k := [2]unsafe.Pointer{reflect.ValueOf(r.Requests).UnsafePointer(), reflect.ValueOf(r.Limits).UnsafePointer()}
	if shared, ok := t.requirements[k]; ok {
		return shared
	}
	if len(t.requirements) < maxValues {
		t.requirements[k] = r
	}
	return r
}

// Tolerations returns the shared slice equal to ts.
func (t *Table) Tolerations(ts []v1.Toleration) []v1.Toleration {
	if len(ts) == 0 {
		return ts
	}
	var buf [keyBuffer]byte
	b := buf[:0]
	for _, tol := range ts {
		b = append(b, tol.Key...)
		b = append(b, 0)
		b = append(b, tol.Operator...)
		b = append(b, 0)
		b = append(b, tol.Value...)
		b = append(b, 0)
		b = append(b, tol.Effect...)
		b = append(b, 0)
		if tol.TolerationSeconds != nil {
			b = strconv.AppendInt(b, *tol.TolerationSeconds, 10)
		} else {
			b = append(b, '-')
		}
		b = append(b, 1)
	}
	return LookupBytes(&t.mu, t.tolerations, maxValues, b, ts)
}

// Pod shares the repeated values of p in place: namespace, generateName,
// labels, node and scheduler names, service account, tolerations, node
// selector, overhead, restart and DNS policies, security context, priority,
// preemption policy, termination grace period, enableServiceLinks, and of
// every container its name, image, pull policy, termination message
// settings, resources, resize policy, ports and security context; of the
// status its phase, QoS class, host IPs, start time, the conditions'
// types, statuses and reasons and the container statuses' names, images,
// image IDs, started flags, running states (start times) and allocated
// and actual resources (the kubelet reports both for every running
// container, most often the spec's own values); a pod IP
// listed in podIPs is the same string as podIP, and a volume mount's name
// the same string as its volume's (each pod's generated
// kube-api-access-<suffix> name is its own, decoded twice).
func (t *Table) Pod(p *v1.Pod) {
	p.APIVersion, p.Kind = t.String(p.APIVersion), t.String(p.Kind)
	p.Namespace, p.GenerateName = t.String(p.Namespace), t.String(p.GenerateName)
	p.Labels = t.Labels(p.Labels)
	for i := range p.OwnerReferences {
		r := &p.OwnerReferences[i]
		r.APIVersion, r.Kind, r.Name, r.UID = t.String(r.APIVersion), t.String(r.Kind), t.String(r.Name), types.UID(t.String(string(r.UID)))
	}
	s := &p.Spec
	s.NodeName, s.SchedulerName = t.String(s.NodeName), t.String(s.SchedulerName)
	s.ServiceAccountName, s.DeprecatedServiceAccount = t.String(s.ServiceAccountName), t.String(s.DeprecatedServiceAccount)
	s.Tolerations = t.Tolerations(s.Tolerations)
	s.NodeSelector = t.Labels(s.NodeSelector)
	s.Overhead = t.Resources(s.Overhead)
	s.RestartPolicy = v1.RestartPolicy(t.String(string(s.RestartPolicy)))
	s.DNSPolicy = v1.DNSPolicy(t.String(string(s.DNSPolicy)))
	s.SecurityContext = t.PodSecurityContext(s.SecurityContext)
	s.Priority = t.Int32(s.Priority)
	s.PreemptionPolicy = t.PreemptionPolicy(s.PreemptionPolicy)
	s.TerminationGracePeriodSeconds = t.Int64(s.TerminationGracePeriodSeconds)
	s.EnableServiceLinks = t.Bool(s.EnableServiceLinks)
	for _, cs := range [][]v1.Container{s.InitContainers, s.Containers} {
		for i := range cs {
			c := &cs[i]
			c.Name, c.Image = t.String(c.Name), t.String(c.Image)
			c.ImagePullPolicy = v1.PullPolicy(t.String(string(c.ImagePullPolicy)))
			c.TerminationMessagePath = t.String(c.TerminationMessagePath)
			c.TerminationMessagePolicy = v1.TerminationMessagePolicy(t.String(string(c.TerminationMessagePolicy)))
			c.Resources.Requests = t.Resources(c.Resources.Requests)
			c.Resources.Limits = t.Resources(c.Resources.Limits)
			c.ResizePolicy = t.ResizePolicy(c.ResizePolicy)
			c.Ports = t.Ports(c.Ports)
			c.SecurityContext = t.SecurityContext(c.SecurityContext)
			for j := range c.VolumeMounts {
				m := &c.VolumeMounts[j]
				m.MountPath = t.String(m.MountPath)
				m.Name = volumeName(s.Volumes, m.Name)
			}
		}
	}
	for i := range s.Volumes {
		s.Volumes[i].Projected = t.Projected(s.Volumes[i].Projected)
	}
	st := &p.Status
	// The freshly decoded conditions get shared strings first; only then
	// may the slice itself be swapped for a shared one (which must never
	// be written to).
	for i := range st.Conditions {
		c := &st.Conditions[i]
		c.Type = v1.PodConditionType(t.String(string(c.Type)))
		c.Status = v1.ConditionStatus(t.String(string(c.Status)))
		c.Reason = t.String(c.Reason)
	}
	st.Conditions = t.Conditions(st.Conditions)
	st.Phase = v1.PodPhase(t.String(string(st.Phase)))
	st.QOSClass = v1.PodQOSClass(t.String(string(st.QOSClass)))
	st.HostIP = t.String(st.HostIP)
	for i := range st.HostIPs {
		st.HostIPs[i].IP = t.String(st.HostIPs[i].IP)
	}
	st.HostIPs = t.HostIPs(st.HostIPs)
	st.StartTime = t.Time(st.StartTime)
	for i := range st.PodIPs {
		if st.PodIPs[i].IP == st.PodIP {
			st.PodIPs[i].IP = st.PodIP // one copy of the pod's IP
		}
	}
	// The pod-level allocated and actual resources, which the kubelet
	// reports for every pod (most often its one container's lists).
	st.AllocatedResources = t.Resources(st.AllocatedResources)
	st.Resources = t.Requirements(st.Resources)
	for _, list := range [][]v1.ContainerStatus{st.InitContainerStatuses, st.ContainerStatuses} {
		for i := range list {
			c := &list[i]
			c.Name, c.Image, c.ImageID = t.String(c.Name), t.String(c.Image), t.String(c.ImageID)
			c.Started = t.Bool(c.Started)
			c.State.Running = t.Running(c.State.Running)
			c.AllocatedResources = t.Resources(c.AllocatedResources)
			c.Resources = t.Requirements(c.Resources)
		}
	}
}

// volumeName is the name string of the volume in vs called name, or name
// if there is none.
func volumeName(vs []v1.Volume, name string) string {
	for i := range vs {
		if vs[i].Name == name {
			return vs[i].Name
		}
	}
	return name
}

// SharePrior makes p, a newly decoded version of the pod old is an
// earlier version of, use old's copies of its UID and name when they are
// equal. Nothing else of a pod repeats across its versions the way these
// do: components key their per-pod maps by the UID (and name) of the
// version they first saw, so without it each component keeps the strings
// of another version alive next to the cache's.
func SharePrior(p, old *v1.Pod) {
	if old == nil || p == old {
		return
	}
	if p.UID == old.UID {
		p.UID = old.UID
	}
	if p.Name == old.Name {
		p.Name = old.Name
	}
}

// byEncoding returns the shared value whose protobuf encoding equals v's
// (v itself if it cannot be encoded). The encoding is made in *scratch,
// which mu guards with the table and which grows to the largest encoding
// seen, so that a lookup that finds the value allocates nothing.
func byEncoding[T interface {
	Size() int
	MarshalToSizedBuffer([]byte) (int, error)
}](mu *sync.Mutex, table map[string]T, scratch *[]byte, v T) T {
	mu.Lock()
	defer mu.Unlock()
	n := v.Size()
	if cap(*scratch) < n {
		*scratch = make([]byte, n)
	}
	raw := (*scratch)[:n]
	if _, err := v.MarshalToSizedBuffer(raw); err != nil {
		return v
	}
	return LookupBytesLocked(table, maxValues, raw, v)
}
