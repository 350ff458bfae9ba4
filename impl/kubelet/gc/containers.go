package gc

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// Container garbage collection, as upstream's kubelet: every
// ContainerPeriod, and when the eviction manager reclaims disk, dead
// containers (exited, or in the unknown state, stopped first) beyond the
// policy's limits are removed, then the sandboxes
// that are neither ready nor hold containers any more, and, for pods
// gone from the node, their log directories.

// ContainerPolicy is the dead container garbage collection policy
// (upstream's deprecated but existing kubelet flags).
type ContainerPolicy struct {
	// MinAge is how long after its creation a container may be removed
	// (--minimum-container-ttl-duration; 0).
	MinAge time.Duration
	// MaxPerPodContainer is how many dead instances of each container of
	// a pod are kept (--maximum-dead-containers-per-container; 1); < 0: no
	// limit.
	MaxPerPodContainer int
	// MaxContainers is how many dead containers the node keeps in all
	// (--maximum-dead-containers; -1, no limit).
	MaxContainers int
}

// DefaultContainerPolicy is upstream's default.
var DefaultContainerPolicy = ContainerPolicy{MinAge: 0, MaxPerPodContainer: 1, MaxContainers: -1}

// ContainerPeriod is how often containers are collected (upstream's
// kubelet has no flag for it).
const ContainerPeriod = time.Minute

// MaxPerPodContainer is the default MaxPerPodContainer: the newest dead
// instance stays, whose exit code and restart count the pod's status
// reports, whose log `kubectl logs --previous` reads, and whose
// completion marks an init container done.
const MaxPerPodContainer = 1

// Validate checks the policy as the kubelet does.
func (p ContainerPolicy) Validate() error {
	if p.MinAge < 0 {
		return fmt.Errorf("invalid minimum garbage collection age (--minimum-container-ttl-duration): %v", p.MinAge)
	}
	return nil
}

// PodGCState is what the kubelet knows of a pod, for container GC.
type PodGCState uint8

const (
	// PodActive: the pod may still run containers (or the kubelet is
	// tearing it down itself): its newest dead instances stay.
	PodActive PodGCState = iota
	// PodTerminated: the pod has finished; all its dead containers go
	// when the eviction manager reclaims disk.
	PodTerminated
	// PodRemovable: the pod is unknown to the kubelet once its pod source
	// has delivered every pod, or was evicted and has finished: all its
	// dead containers, its sandboxes and its logs go.
	PodRemovable
)

// ContainerGCInput is what the container collection decides from.
type ContainerGCInput struct {
	Containers []*runtimeapi.Container
	Policy     ContainerPolicy
	// PodState tells each pod's state by UID.
	PodState func(uid string) PodGCState
	// EvictTerminated: terminated pods' dead containers go too (the
	// eviction manager's reclaim).
	EvictTerminated bool
	Now             time.Time
}

// newerFirst orders instances of one container newest first: higher
// attempt, then later created, as upstream.
func newerFirst(a, b *runtimeapi.Container) bool {
	if a.GetMetadata().GetAttempt() != b.GetMetadata().GetAttempt() {
		return a.GetMetadata().GetAttempt() > b.GetMetadata().GetAttempt()
	}
	if a.CreatedAt != b.CreatedAt {
		return a.CreatedAt > b.CreatedAt
	}
	return a.Id > b.Id
}

// removes reports whether a pod's content all goes.
func (in ContainerGCInput) removes(uid string) bool {
	if in.PodState == nil {
		return false
	}
	switch in.PodState(uid) {
	case PodRemovable:
		return true
	case PodTerminated:
		return in.EvictTerminated
	}
	return false
}

// DeadContainers are the ids of the containers to remove, sorted. Only
// containers of the kubelet's pods (with a pod UID label) created at
// least MinAge ago are candidates, and of them only those that have
// exited, those in the unknown state (upstream's evictableContainers
// takes every container not running; the collector stops an unknown one
// before removing it: StopsFirst), or were created and never started
// while a newer instance of the same container exists (the kubelet moved
// on from them). Running containers and a container's newest instance
// while it is only created (a pod worker may be about to start it) are
// never chosen.
//
//  1. Of a pod that is removable (or terminated, with EvictTerminated)
//     every candidate goes.
//  2. Of each other pod's container (pod UID, container name) the
//     MaxPerPodContainer newest exited or unknown instances stay.
//  3. If more than MaxContainers such instances stay in all, each
//     container keeps MaxContainers / containers of them (at least 1),
//     and if that is still too many the oldest go.
//
// Pure.
func DeadContainers(in ContainerGCInput) []string {
	type unitKey struct{ uid, name string }
	newest := map[unitKey]*runtimeapi.Container{}
	units := map[unitKey][]*runtimeapi.Container{} // exited and unknown candidates
	var out []string
	for _, c := range in.Containers {
		uid := c.Labels[runtime.LabelPodUID]
		if uid == "" {
			continue
		}
		k := unitKey{uid, c.GetMetadata().GetName()}
		if n := newest[k]; n == nil || newerFirst(c, n) {
			newest[k] = c
		}
	}
	minCreated := in.Now.Add(-in.Policy.MinAge).UnixNano()
	for _, c := range in.Containers {
		uid := c.Labels[runtime.LabelPodUID]
		if uid == "" || c.CreatedAt > minCreated {
			continue
		}
		k := unitKey{uid, c.GetMetadata().GetName()}
		switch c.State {
		case runtimeapi.ContainerState_CONTAINER_EXITED, runtimeapi.ContainerState_CONTAINER_UNKNOWN:
			if in.removes(uid) {
				out = append(out, c.Id)
			} else {
				units[k] = append(units[k], c)
			}
		case runtimeapi.ContainerState_CONTAINER_CREATED:
			if in.removes(uid) || newest[k] != c {
				out = append(out, c.Id)
			}
		}
	}
	keep := func(list []*runtimeapi.Container, n int) []*runtimeapi.Container {
		if n < 0 || len(list) <= n {
			return list
		}
		sort.Slice(list, func(i, j int) bool { return newerFirst(list[i], list[j]) })
		for _, c := range list[n:] {
			out = append(out, c.Id)
		}
		return list[:n]
	}
	total := 0
	for k, list := range units {
		units[k] = keep(list, in.Policy.MaxPerPodContainer)
		total += len(units[k])
	}
	if limit := in.Policy.MaxContainers; limit >= 0 && total > limit {
		perUnit := 1
		if limit/len(units) > 1 {
			perUnit = limit / len(units)
		}
		var all []*runtimeapi.Container
		for k, list := range units {
			units[k] = keep(list, perUnit)
			all = append(all, units[k]...)
		}
		keep(all, limit)
	}
	sort.Strings(out)
	return out
}

// StopsFirst reports whether the collector stops container c before
// removing it: a container in the unknown state may still run, as
// upstream's removeOldestN kills one ("Container is in unknown state, try
// killing it before removal") and does not remove it when that fails.
func StopsFirst(c *runtimeapi.Container) bool {
	return c.State == runtimeapi.ContainerState_CONTAINER_UNKNOWN
}

// UnknownStopTimeout is upstream's minimum grace period in seconds
// (minimumGracePeriodInSeconds): the least StopTimeout gives, and what it
// gives a container whose annotations name no grace period.
const UnknownStopTimeout = 2

// StopTimeout is the grace period, in seconds, the collector stops
// container c with (StopsFirst): its pod's deletion grace period, else
// its termination grace period, from c's annotations (the kubelet writes
// them at creation), never below UnknownStopTimeout, as upstream's
// killContainer of a container it has no pod for restores the pod's
// grace periods from the container's annotations
// (restoreSpecsFromContainerLabels, setTerminationGracePeriod). An
// annotation that is not a number is passed over, as upstream's. This is
// the stop of a collector without SetUnknownKill (the kubelet sets one
// that runs the preStop hook first, within the unfloored grace period).
func StopTimeout(c *runtimeapi.Container) int64 {
	grace := int64(UnknownStopTimeout)
	for _, key := range []string{runtime.AnnotationPodDeletionGracePeriod, runtime.AnnotationPodTerminationGracePeriod} {
		if v, err := strconv.ParseInt(c.GetAnnotations()[key], 10, 64); err == nil {
			grace = v
			break
		}
	}
	return max(grace, UnknownStopTimeout)
}

// DeadSandboxes are the ids of the sandboxes to remove, sorted: of the
// kubelet's pods' sandboxes (with a pod UID) those that are not ready and
// hold none of containers (the node's containers after the collection)
// — all such of a removable pod (or a terminated one with
// evictTerminated), and of any other pod all such but its newest sandbox
// (highest attempt, then latest created), which stays whatever its
// state. A ready sandbox is never chosen, so the collection never changes
// which sandbox of a pod is live (KUBELET-2). Pure.
func DeadSandboxes(sandboxes []*runtimeapi.PodSandbox, containers []*runtimeapi.Container, podState func(string) PodGCState, evictTerminated bool) []string {
	holding := map[string]bool{}
	for _, c := range containers {
		holding[c.PodSandboxId] = true
	}
	in := ContainerGCInput{PodState: podState, EvictTerminated: evictTerminated}
	byPod := map[string][]*runtimeapi.PodSandbox{}
	for _, s := range sandboxes {
		if uid := s.GetMetadata().GetUid(); uid != "" {
			byPod[uid] = append(byPod[uid], s)
		}
	}
	var out []string
	for uid, list := range byPod {
		sort.Slice(list, func(i, j int) bool {
			a, b := list[i], list[j]
			if a.GetMetadata().GetAttempt() != b.GetMetadata().GetAttempt() {
				return a.GetMetadata().GetAttempt() > b.GetMetadata().GetAttempt()
			}
			if a.CreatedAt != b.CreatedAt {
				return a.CreatedAt > b.CreatedAt
			}
			return a.Id > b.Id
		})
		if !in.removes(uid) {
			list = list[1:]
		}
		for _, s := range list {
			if s.State != runtimeapi.PodSandboxState_SANDBOX_READY && !holding[s.Id] {
				out = append(out, s.Id)
			}
		}
	}
	sort.Strings(out)
	return out
}

// PodLogDirsToRemove are the pod log directories (entries of the pod logs
// directory, "<namespace>_<name>_<uid>") of removable pods. Pure.
func PodLogDirsToRemove(names []string, podState func(string) PodGCState) []string {
	var out []string
	for _, name := range names {
		i := strings.LastIndexByte(name, '_')
		if i < 0 || i == len(name)-1 {
			continue
		}
		if podState(name[i+1:]) == PodRemovable {
			out = append(out, name)
		}
	}
	sort.Strings(out)
	return out
}
