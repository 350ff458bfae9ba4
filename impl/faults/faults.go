// Package faults holds the switches the property harness (e2e/props, issue
// 6) uses to prove it catches bugs, and the transport hooks it uses to
// inject stale and unobserved state.
//
// A mutation is a realistic implementation bug that a one- or two-line hook
// in the implementation re-introduces when its switch is on:
//
//	if faults.Enabled(faults.BindingOverwritesBinding) { ... }
//
// Switches are off unless a test turns them on with Enable, or the
// KUBEPROOF_MUTATIONS environment variable (a comma-separated list of
// mutation names, read once at start) names them. With every switch off,
// Enabled is one atomic load. Production code paths never turn a switch on.
package faults

import (
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
)

// The mutation catalog. Each name is the bug the hook re-introduces; the
// Catalog entry says where the hook is and which property catches it.
const (
	// BindingOverwritesBinding: pods/binding accepts a Binding for a pod
	// that already has spec.nodeName (SCHED-1).
	BindingOverwritesBinding = "binding-overwrites-binding"
	// CreateOverwritesExistingKey: the etcd3 store's create drops its
	// If(ModRevision(key)==0) precondition (STORE-2).
	CreateOverwritesExistingKey = "create-overwrites-existing-key"
	// KubeletReusesIP: the simulated runtime's IP pool hands out an address
	// still held by a live sandbox (KUBELET-3).
	KubeletReusesIP = "kubelet-reuses-ip"
	// DeploymentIgnoresMaxSurge: a rolling update scales the new
	// ReplicaSet to the full count at once (DEP-1).
	DeploymentIgnoresMaxSurge = "deployment-ignores-maxsurge"
	// DeploymentCountsUnavailable: a rolling update counts the new
	// ReplicaSet's unready pods as available when scaling old ones down
	// (DEP-2, a step property: caught by trace validation).
	DeploymentCountsUnavailable = "deployment-counts-unready-as-available"
	// SchedulerIgnoresPodCapacity: the NodeResourcesFit filter forgets the
	// node's allocatable pod count (SCHED-2).
	SchedulerIgnoresPodCapacity = "scheduler-ignores-pod-capacity"
	// ReplicaSetIgnoresExpectations: the ReplicaSet controller decides
	// from its pod cache without waiting for its own creations and
	// deletions to show up there (RS-1).
	ReplicaSetIgnoresExpectations = "replicaset-ignores-expectations"
	// SchedulerIgnoresAssumedPods: the scheduler cache drops its
	// assumption of a pod it has decided on, so the next decisions do not
	// count it until the binding comes back through the watch (SCHED-2).
	SchedulerIgnoresAssumedPods = "scheduler-ignores-assumed-pods"
	// SchedulerIgnoresTaints: the TaintToleration filter lets every pod
	// onto a node with NoSchedule or NoExecute taints (SCHED-3).
	SchedulerIgnoresTaints = "scheduler-ignores-taints"
	// GCDeletesWithLiveOwner: the garbage collector deletes a dependent
	// when any one of its owners is gone, although another still lives
	// (GC-1).
	GCDeletesWithLiveOwner = "gc-deletes-dependent-with-live-owner"
	// WatchResumeSkipsEvent: the watch cache, resuming a watch from a
	// resourceVersion, loses the first event after it (STORE-1).
	WatchResumeSkipsEvent = "watch-resume-skips-event"
	// QuorumListFromCache: a list with resourceVersion "" (a quorum read)
	// is served from the watch cache without waiting for it to catch up
	// (STORE-4).
	QuorumListFromCache = "quorum-list-served-from-cache"
	// NodeLifecycleEvictsTolerated: the NoExecute taint manager evicts
	// pods that tolerate the node's NoExecute taints (GC-1).
	NodeLifecycleEvictsTolerated = "nodelifecycle-evicts-tolerated-pods"
	// KubeletRestartsNeverPods: the kubelet restarts an exited container of
	// a pod with restartPolicy Never (KUBELET-7).
	KubeletRestartsNeverPods = "kubelet-restarts-never-pods"
)

// Mutation describes one catalog entry.
type Mutation struct {
	Name string
	// Where is the file holding the hook.
	Where string
	// Bug is the behaviour the switch re-introduces.
	Bug string
	// CaughtBy lists the property IDs (spec/README.md) whose check must fail.
	CaughtBy []string
}

// Catalog lists every mutation with a hook in the implementation.
var Catalog = []Mutation{
	{BindingOverwritesBinding, "impl/apiserver/endpoints/binding.go",
		"pods/binding re-binds a pod that is already assigned to a node", []string{"SCHED-1"}},
	{CreateOverwritesExistingKey, "impl/storage/etcd3/store.go",
		"create without the ModRevision==0 precondition overwrites an existing object", []string{"STORE-2"}},
	{KubeletReusesIP, "impl/kubelet/runtime/sim/ippool.go",
		"the pod IP pool allocates an address a live sandbox still holds", []string{"KUBELET-3"}},
	{DeploymentIgnoresMaxSurge, "impl/controller/deployment/decide.go",
		"a rolling update scales the new ReplicaSet up without the maxSurge bound", []string{"DEP-1"}},
	{DeploymentCountsUnavailable, "impl/controller/deployment/decide.go",
		"a rolling update scales old ReplicaSets down counting unready new pods as available", []string{"DEP-2"}},
	{SchedulerIgnoresPodCapacity, "impl/scheduler/plugins/noderesources/fit.go",
		"the scheduler binds a pod to a node already holding its allocatable pod count", []string{"SCHED-2"}},
	{ReplicaSetIgnoresExpectations, "impl/controller/replicaset/controller.go",
		"the ReplicaSet controller creates pods again before its cache shows the ones it just created", []string{"RS-1"}},
	{SchedulerIgnoresAssumedPods, "impl/scheduler/cache/cache.go",
		"the scheduler forgets pods it has decided on until their binding is observed, overfilling nodes", []string{"SCHED-2"}},
	{SchedulerIgnoresTaints, "impl/scheduler/plugins/tainttoleration/taint_toleration.go",
		"the scheduler binds pods to nodes with NoExecute taints they do not tolerate", []string{"SCHED-3"}},
	{GCDeletesWithLiveOwner, "impl/controller/garbagecollector/decide.go",
		"the garbage collector deletes a dependent one of whose owners still lives", []string{"GC-1"}},
	{WatchResumeSkipsEvent, "impl/storage/cacher/watcher.go",
		"a watch resumed from a resourceVersion misses the first event after it", []string{"STORE-1"}},
	{QuorumListFromCache, "impl/storage/cacher/reads.go",
		"a list with resourceVersion \"\" is answered from a watch cache that has not caught up", []string{"STORE-4"}},
	{NodeLifecycleEvictsTolerated, "impl/controller/nodelifecycle/eviction.go",
		"the taint manager evicts pods that tolerate every NoExecute taint of their node", []string{"GC-1"}},
	{KubeletRestartsNeverPods, "impl/kubelet/podsync/actions.go",
		"the kubelet restarts an exited container of a restartPolicy Never pod", []string{"KUBELET-7"}},
}

// EnvVar names the environment variable read at start.
const EnvVar = "KUBEPROOF_MUTATIONS"

var (
	any_    atomic.Bool
	mu      sync.Mutex
	enabled atomic.Pointer[map[string]bool]
)

func init() {
	if v := os.Getenv(EnvVar); v != "" {
		set(strings.Split(v, ","), true)
	}
}

func set(names []string, on bool) {
	mu.Lock()
	defer mu.Unlock()
	next := map[string]bool{}
	if cur := enabled.Load(); cur != nil {
		for k, v := range *cur {
			next[k] = v
		}
	}
	for _, n := range names {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		if on {
			next[n] = true
		} else {
			delete(next, n)
		}
	}
	enabled.Store(&next)
	any_.Store(len(next) > 0)
}

// Enabled reports whether mutation name is switched on.
func Enabled(name string) bool {
	if !any_.Load() {
		return false
	}
	return (*enabled.Load())[name]
}

// Enable switches the named mutations on and returns a function switching
// them off again. Tests call it; the switches are process-wide.
func Enable(names ...string) (disable func()) {
	set(names, true)
	return func() { set(names, false) }
}

// Active lists the mutations switched on, sorted.
func Active() []string {
	cur := enabled.Load()
	if cur == nil {
		return nil
	}
	out := make([]string, 0, len(*cur))
	for n := range *cur {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Lookup returns the catalog entry of name.
func Lookup(name string) (Mutation, bool) {
	for _, m := range Catalog {
		if m.Name == name {
			return m, true
		}
	}
	return Mutation{}, false
}
