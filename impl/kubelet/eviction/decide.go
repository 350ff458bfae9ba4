package eviction

import (
	"fmt"
	"sort"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Observation is one signal's reading: what is available and the
// capacity percentages refer to (bytes, inodes or process IDs).
type Observation struct {
	Available, Capacity int64
}

// Observations are the node's readings by signal; a signal missing here
// is not evaluated.
type Observations map[Signal]Observation

// PodStats is one pod's measured usage.
type PodStats struct {
	Pod *v1.Pod
	// Memory is the working set by container name.
	Memory map[string]int64
	// Disk is the pod's local storage use (container writable layers, logs,
	// local ephemeral volumes: localEphemeralVolume) in bytes, Inodes
	// likewise in inodes.
	Disk, Inodes int64
	// PIDs is the number of processes the pod runs.
	PIDs int64
	// Storage is the pod's local storage use by volume and container, for
	// the local storage limits (nil: not measured, not checked).
	Storage *LocalStorage
}

func (s PodStats) memory() int64 {
	var sum int64
	for _, m := range s.Memory {
		sum += m
	}
	return sum
}

// State is what the eviction manager remembers between intervals.
type State struct {
	// Met are the thresholds that were met (past their grace period) last
	// interval; while MinReclaim is unsatisfied they stay met.
	Met []Threshold
	// FirstObserved is when each currently met threshold was first seen
	// met (by Threshold.key), for soft grace periods.
	FirstObserved map[string]time.Time
	// ConditionLastObserved is when each pressure condition was last
	// observed, for the transition period.
	ConditionLastObserved map[v1.NodeConditionType]time.Time
}

// Input is everything Decide looks at.
type Input struct {
	Config       Config
	Observations Observations
	Pods         []PodStats
	State        State
	Now          time.Time
	// DedicatedImageFs: container writable layers are on a filesystem of
	// their own (a container's ephemeral-storage limit counts its logs
	// only).
	DedicatedImageFs bool
}

// Eviction is the pod to evict and how.
type Eviction struct {
	Pod *v1.Pod
	// Message is upstream's: "The node was low on resource: memory.
	// Threshold quantity: 100Mi, available: 50Mi. Container c was using
	// 80Mi, request is 10Mi, has larger consumption of memory. "
	Message string
	// GracePeriodSeconds: ImmediateGracePeriodSeconds for a hard threshold
	// or a local storage limit, for a soft threshold the pod's own capped
	// by MaxPodGracePeriodSeconds.
	GracePeriodSeconds int64
	// KillTimeout is how long the manager waits for the pod's kill (Wait):
	// KillTimeout of the grace period upstream's asks the pod workers for,
	// which for a soft threshold is MaxPodGracePeriodSeconds capped by the
	// pod's own: with MaxPodGracePeriodSeconds 0 (none asked for: the kill
	// is given the pod's own) 10 s.
	KillTimeout time.Duration
	Threshold   Threshold
	// Limit is the local storage limit the pod exceeded ("" for a
	// threshold's eviction; Threshold is then the zero value).
	Limit LimitSignal
	// OffendingContainers and their usage, for the Evicted event's
	// annotations.
	OffendingContainers, OffendingContainersUsage []string
}

// Decision is Decide's result.
type Decision struct {
	State State
	// Conditions are the pressure conditions to report as True, in the
	// order MemoryPressure, DiskPressure, PIDPressure.
	Conditions []v1.NodeConditionType
	// Met are the thresholds that are met and past their grace period.
	Met []Threshold
	// Threshold is the one acted on (memory first), nil if none is met.
	Threshold *Threshold
	// Reclaim is the node-level reclaim done for Threshold before
	// evicting (Manager; Decide leaves it nil).
	Reclaim *Reclaim
	Evict   *Eviction
	// LocalStorage are the pods over a local storage limit, all evicted
	// this interval; when there are any, Threshold and Evict are nil (no
	// pod is evicted for a threshold this interval).
	LocalStorage []Eviction
}

// ReasonEvicted is the reason of an evicted pod's status and event.
const ReasonEvicted = "Evicted"

// Decide is one eviction manager interval. Pure.
//
// 1. Thresholds met now are those whose signal's available amount is below
// the threshold; thresholds met last interval stay met until their
// minimum reclaim is satisfied too. 2. Every met threshold raises its
// node condition, which then stays for the pressure transition period. 3.
// Soft thresholds count only once met for their grace period. 4. If any
// threshold counts, the one to reclaim is picked (memory first) and the
// pods are ranked for its resource; the first one that is not critical
// is evicted. Before that (step 4 not taken), pods over a local storage
// limit are evicted (LocalStorageEvictions) unless the configuration
// turns that off.
func Decide(in Input) Decision {
	now := in.Now
	met := thresholdsMet(in.Config.Thresholds, in.Observations, false)
	if len(in.State.Met) > 0 {
		met = mergeThresholds(met, thresholdsMet(in.State.Met, in.Observations, true))
	}
	first := map[string]time.Time{}
	for _, t := range met {
		at, ok := in.State.FirstObserved[t.key()]
		if !ok {
			at = now
		}
		first[t.key()] = at
	}
	lastObserved := map[v1.NodeConditionType]time.Time{}
	for c, at := range in.State.ConditionLastObserved {
		lastObserved[c] = at
	}
	for _, t := range met {
		lastObserved[signalCondition[t.Signal]] = now
	}
	var conds []v1.NodeConditionType
	for _, c := range []v1.NodeConditionType{v1.NodeMemoryPressure, v1.NodeDiskPressure, v1.NodePIDPressure} {
		at, ok := lastObserved[c]
		if !ok {
			continue
		}
		if at.Equal(now) || now.Sub(at) < in.Config.PressureTransitionPeriod {
			conds = append(conds, c)
		} else {
			delete(lastObserved, c)
		}
	}
	var due []Threshold
	for _, t := range met {
		if now.Sub(first[t.key()]) >= t.GracePeriod {
			due = append(due, t)
		}
	}
	d := Decision{
		State:      State{Met: due, FirstObserved: first, ConditionLastObserved: lastObserved},
		Conditions: conds,
		Met:        due,
	}
	if !in.Config.DisableLocalStorageCapacityIsolation {
		if d.LocalStorage = LocalStorageEvictions(in.Pods, in.DedicatedImageFs); len(d.LocalStorage) > 0 {
			return d
		}
	}
	if len(due) == 0 {
		return d
	}
	// Memory first, otherwise the configured order.
	sort.SliceStable(due, func(i, j int) bool {
		return memorySignal(due[i].Signal) && !memorySignal(due[j].Signal)
	})
	t := due[0]
	d.Threshold = &t
	pods := append([]PodStats(nil), in.Pods...)
	rank(t.Signal, pods)
	for _, ps := range pods {
		if IsCritical(ps.Pod) {
			continue
		}
		requested := requestedGracePeriod(t, ps.Pod, in.Config.MaxPodGracePeriodSeconds)
		ev := &Eviction{Pod: ps.Pod, Threshold: t, GracePeriodSeconds: gracePeriod(requested, ps.Pod), KillTimeout: KillTimeout(requested)}
		ev.Message, ev.OffendingContainers, ev.OffendingContainersUsage = message(t, in.Observations[t.Signal], ps)
		d.Evict = ev
		break
	}
	return d
}

// thresholdsMet are the thresholds whose signal is below the threshold
// (plus its minimum reclaim, if enforceMinReclaim).
func thresholdsMet(ts []Threshold, obs Observations, enforceMinReclaim bool) []Threshold {
	var out []Threshold
	for _, t := range ts {
		o, ok := obs[t.Signal]
		if !ok {
			continue
		}
		want := t.Value.amount(o.Capacity)
		if enforceMinReclaim && t.MinReclaim != nil {
			want += t.MinReclaim.amount(o.Capacity)
		}
		if o.Available < want {
			out = append(out, t)
		}
	}
	return out
}

func mergeThresholds(a, b []Threshold) []Threshold {
	out := append([]Threshold(nil), a...)
	for _, t := range b {
		dup := false
		for _, u := range out {
			if u.key() == t.key() {
				dup = true
			}
		}
		if !dup {
			out = append(out, t)
		}
	}
	return out
}

// requestedGracePeriod is the grace period upstream's eviction manager
// asks the pod workers to kill pod with: ImmediateGracePeriodSeconds for
// a hard threshold, for a soft one maxGrace capped by the pod's own.
func requestedGracePeriod(t Threshold, pod *v1.Pod, maxGrace int64) int64 {
	if t.Hard() {
		return ImmediateGracePeriodSeconds
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return min(maxGrace, *pod.Spec.TerminationGracePeriodSeconds)
	}
	return maxGrace
}

// gracePeriod is the grace period the kill of an eviction asking for
// requested is given: requested, or the pod's own when it asks for none
// (0: a soft threshold without MaxPodGracePeriodSeconds), as upstream's
// pod workers.
func gracePeriod(requested int64, pod *v1.Pod) int64 {
	if requested > 0 {
		return requested
	}
	if pod.Spec.TerminationGracePeriodSeconds != nil {
		return *pod.Spec.TerminationGracePeriodSeconds
	}
	return v1.DefaultTerminationGracePeriodSeconds
}

// systemCriticalPriority is scheduling.SystemCriticalPriority.
const systemCriticalPriority = int32(2000000000)

// IsCritical: pods the eviction manager never evicts — static and
// mirror pods, and pods of priority system-cluster-critical or higher.
func IsCritical(pod *v1.Pod) bool {
	if pod.Annotations[v1.MirrorPodAnnotationKey] != "" {
		return true
	}
	if src := pod.Annotations["kubernetes.io/config.source"]; src != "" && src != "api" {
		return true
	}
	return pod.Spec.Priority != nil && *pod.Spec.Priority >= systemCriticalPriority
}

func priority(p *v1.Pod) int32 {
	if p.Spec.Priority != nil {
		return *p.Spec.Priority
	}
	return 0
}

// containerRequest is a container's request of a resource (0 if none).
func containerRequest(c *v1.Container, name v1.ResourceName) int64 {
	q, ok := c.Resources.Requests[name]
	if !ok {
		return 0
	}
	return q.Value()
}

// podRequest is the sum of the pod's app (and sidecar) containers'
// requests, larger of that and any single init container's, as upstream's
// eviction ranking counts it.
func podRequest(p *v1.Pod, name v1.ResourceName) int64 {
	var sum, initMax int64
	for i := range p.Spec.Containers {
		sum += containerRequest(&p.Spec.Containers[i], name)
	}
	for i := range p.Spec.InitContainers {
		c := &p.Spec.InitContainers[i]
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sum += containerRequest(c, name)
		} else {
			initMax = max(initMax, containerRequest(c, name))
		}
	}
	return max(sum, initMax)
}

// rank orders pods for eviction under signal, as upstream:
//   - memory: pods using more than they request first, then lower
//     priority, then larger usage above request;
//   - disk signals: the same with local storage (ephemeral-storage
//     requests; inodes have no request);
//   - pid: lower priority first, then more processes.
func rank(signal Signal, pods []PodStats) {
	type key struct {
		exceeds bool
		prio    int32
		over    int64
	}
	keyOf := func(s PodStats) key {
		switch signal {
		case SignalMemoryAvailable, SignalAllocatableMemoryAvailable:
			u := s.memory()
			r := podRequest(s.Pod, v1.ResourceMemory)
			return key{u > r, priority(s.Pod), u - r}
		case SignalNodeFsInodesFree, SignalImageFsInodesFree:
			return key{s.Inodes > 0, priority(s.Pod), s.Inodes}
		case SignalPIDAvailable:
			return key{true, priority(s.Pod), s.PIDs}
		default:
			r := podRequest(s.Pod, v1.ResourceEphemeralStorage)
			return key{s.Disk > r, priority(s.Pod), s.Disk - r}
		}
	}
	keys := make(map[*v1.Pod]key, len(pods))
	for _, p := range pods {
		keys[p.Pod] = keyOf(p)
	}
	sort.SliceStable(pods, func(i, j int) bool {
		a, b := keys[pods[i].Pod], keys[pods[j].Pod]
		if a.exceeds != b.exceeds {
			return a.exceeds
		}
		if a.prio != b.prio {
			return a.prio < b.prio
		}
		return a.over > b.over
	})
}

// message is upstream's eviction message, and the containers it names.
func message(t Threshold, o Observation, s PodStats) (string, []string, []string) {
	res := signalResource[t.Signal]
	var b strings.Builder
	fmt.Fprintf(&b, "The node was low on resource: %s. ", res)
	format := func(n int64) string {
		if res == v1.ResourceMemory || res == v1.ResourceEphemeralStorage {
			return resource.NewQuantity(n, resource.BinarySI).String()
		}
		return resource.NewQuantity(n, resource.DecimalSI).String()
	}
	threshold := t.Value.String()
	if t.Value.Quantity == nil {
		threshold = format(t.Value.amount(o.Capacity))
	}
	fmt.Fprintf(&b, "Threshold quantity: %s, available: %s. ", threshold, format(o.Available))
	var names, usages []string
	if res == v1.ResourceMemory {
		for _, c := range append(append([]v1.Container(nil), s.Pod.Spec.InitContainers...), s.Pod.Spec.Containers...) {
			used, ok := s.Memory[c.Name]
			if !ok {
				continue
			}
			req := containerRequest(&c, v1.ResourceMemory)
			if used > req {
				u, r := format(used), "0"
				if q, ok := c.Resources.Requests[v1.ResourceMemory]; ok {
					r = q.String()
				}
				fmt.Fprintf(&b, "Container %s was using %s, request is %s, has larger consumption of %s. ", c.Name, u, r, res)
				names, usages = append(names, c.Name), append(usages, u)
			}
		}
	}
	return b.String(), names, usages
}
