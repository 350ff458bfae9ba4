// Package model is the executable Go twin of the TLA+ specification
// spec/PodPipeline.tla: a State value with the same variables, actions with
// the same names (guard + effect, pure functions), and the invariants and
// properties of spec/README.md as predicates carrying their IDs (STORE-n,
// RS-n, DEP-n, GC-n, SCHED-n, KUBELET-n, LIVE-n).
//
// The explicit-state model checker that explores it is model/checker.
//
// Indexing follows the TLA+ module: nodes, deployments, versions and pod slots
// are numbered from 1; the value 0 means "none" (an unbound pod, a pod
// without a sandbox IP). Arrays are sized one larger and index 0 is unused,
// except the pod arrays, indexed by Pod(d, v, k).
package model

// Object lifecycles in the store (values of depState, rsState, podState).
const (
	Absent   uint8 = iota // no object under this key (never created, or removed)
	Live                  // exists, no deletionTimestamp
	Deleting              // deletionTimestamp set: graceful (pods) or foreground (owners)
	Gone                  // deployments only: deleted, never to be created again
)

// Pod phases (podPhase). Failed comes from kubelet admission rejection and
// node-pressure eviction; Succeeded from containers that ran to completion
// under restartPolicy OnFailure or Never (configuration RestartPolicy).
// Whether a Running pod is Ready is podReady.
const (
	Pending   uint8 = iota
	Running         // containers started (Ready is podReady)
	Failed          // terminal
	Succeeded       // terminal
)

// Terminal reports whether a phase is Failed or Succeeded.
func Terminal(phase uint8) bool { return phase == Failed || phase == Succeeded }

// Restart policies of the pod template (configuration RestartPolicy).
const (
	RestartAlways    = 0
	RestartOnFailure = 1
	RestartNever     = 2
)

// The ReplicaSet controller's cached view of a pod (rscView): the projection
// of the pod object it reads from its informer.
const (
	ViewAbsent   uint8 = iota // not in the cache
	ViewInactive              // terminating or Failed: not counted
	ViewActive                // counted toward the ReplicaSet's replicas
)

// The ReplicaSet controller's expectation for a pod (rscExpect).
const (
	ExpectNone   uint8 = iota
	ExpectAdd          // created, creation not yet observed
	ExpectDelete       // deleted, deletion not yet observed
)

// The scheduler's cached view of a pod (schedView): SchedNotCached, SchedUnbound,
// or SchedUnbound+n for a pod bound to node n.
const (
	SchedNotCached uint8 = 0
	SchedUnbound   uint8 = 1
)

// Controllers: the control-plane components with an informer cache fed by
// a queue of watch events and, for the ReplicaSet controller, expectations;
// for the scheduler, assumed pods. They crash, restart, and lose their
// watch. The kubelets, the deployment controller and taint-based eviction
// act on lagging views of their own (KubeletView, DCAvailable and
// DCDeployment, NLCTainted, with KubeletLag, DeploymentLag,
// NodeLifecycleLag): each view of an object catches up in one step at any
// later time, so it may be any number of changes behind, which covers their
// dropped watches and restarts too. The garbage collector deletes on
// current state (upstream it re-reads the object and looks its owners up
// with live GETs before it deletes); only its removal of the
// foregroundDeletion finalizer reads its lagging graph of the pods
// (GCGraph, GCLag).
const (
	ReplicaSetController = 1
	Scheduler            = 2
	NumControllers       = 2
)

// ControllerNames are the TLA+ names of the controllers (the set Controllers).
var ControllerNames = [NumControllers + 1]string{"", "ReplicaSetController", "Scheduler"}

// State is one state of the specification. Field names are the TLA+
// variable names, capitalised. It is a plain comparable value.
type State struct {
	// ---- Store: the API objects (etcd behind the API server) ----
	DepState    [MaxDeployments + 1]uint8 // Absent, Live, Deleting (foreground), Gone
	DepReplicas [MaxDeployments + 1]uint8 // spec.replicas
	DepVersion  [MaxDeployments + 1]uint8 // the pod template's version (1..NumVersions)
	DepObserved [MaxDeployments + 1]bool  // status.observedGeneration == metadata.generation

	RSState    [MaxDeployments + 1][MaxVersions + 1]uint8 // the ReplicaSet of template version v: Absent, Live, Deleting
	RSReplicas [MaxDeployments + 1][MaxVersions + 1]uint8 // its spec.replicas
	// The deployment controller's view of ReplicaSet (d, v)'s available pods
	// (status.availableReplicas as it last saw it; DeploymentLag).
	DCAvailable [MaxDeployments + 1][MaxVersions + 1]uint8
	// The deployment controller's view of deployment d itself: the object
	// as its informer last delivered it (DeploymentLag).
	DCDeployment [MaxDeployments + 1]DeploymentView

	PodState  [MaxPods]uint8 // Absent, Live, Deleting
	PodNode   [MaxPods]uint8 // spec.nodeName: 0 = unbound
	PodPhase  [MaxPods]uint8 // Pending, Running, Failed
	PodOwners [MaxPods]uint8 // controller ownerReferences: bit v = ReplicaSet of version v

	PodReady [MaxPods]bool // status.conditions[Ready]: the readiness probe passed (always, without probes) while Running

	NodeTainted [MaxNodes + 1]bool  // NotReady + NoExecute unreachable taint
	NodeState   [MaxNodes + 1]uint8 // the Node object: Absent (not yet joined), Live, Gone (deleted)

	Revision uint8 // the store's global revision: the resourceVersion of the latest write (TrackRevisions)

	// ---- Node runtime (CRI, CNI): survives component crashes ----
	Sandboxes   [MaxPods]uint8 // live sandboxes (with the pod's containers) of the pod: at most 1, KUBELET-2
	SandboxNode [MaxPods]uint8 // node whose runtime holds them: 0 = none
	SandboxIP   [MaxPods]uint8 // IP from that node's pool: 0 = none

	// ---- Component memory: lost on a crash ----
	KubeletKnows [MaxPods]bool      // the kubelet of SandboxNode has the pod's sandbox in its pod manager
	RSCView      [MaxPods]uint8     // the ReplicaSet controller's informer cache (View*)
	RSCExpect    [MaxPods]uint8     // the ReplicaSet controller's expectations (Expect*)
	SchedView    [MaxPods]uint8     // the scheduler's informer cache (Sched*)
	SchedAssumed [MaxPods]uint8     // node the scheduler assumed the pod onto, not yet observed bound: 0 = none
	KubeletView  [MaxPods]uint8     // what the kubelet of the pod's node has seen of it (KubeletLag): see KubeletSeen
	NLCTainted   [MaxNodes + 1]bool // the node lifecycle controller's view of node n's NoExecute taint (NodeLifecycleLag)
	GCGraph      [MaxPods]bool      // the garbage collector's dependency graph has the pod (GCLag)

	// Informer queues: watch events received but not yet applied to the
	// cache, oldest first (at most MaxLag), and the revision the cache
	// reflects (the last event applied, or the list it was filled from).
	Pending  [NumControllers + 1][MaxLagLimit]Event
	CacheRev [NumControllers + 1]uint8

	// ---- Environment: components and nodes up or down ----
	Up        [NumControllers + 1]bool // controller c is running
	WatchOK   [NumControllers + 1]bool // its pod watch is established: events reach its cache
	KubeletUp [MaxNodes + 1]bool
	NodeUp    [MaxNodes + 1]bool // the node (machine, network) is reachable

	// ---- Fault and user-operation budgets used so far ----
	Crashes, WatchDrops, NodeFailures, Evictions, Scales, Deletes uint8
	NodeDeletes, ProbeFailures, Completions                       uint8
}

// The kubelet's view of a pod (kubeletView, with KubeletLag = 1): the pod as
// the kubelet of its node last saw it through its watch of the pods bound to
// that node. KubeletSeen(n, Deleting) is <<"Deleting", n>> in the TLA+
// module; KubeletSeenNothing is <<"Absent", 0>>.
const KubeletSeenNothing uint8 = 0

// KubeletSeen encodes "the kubelet of node n sees the pod in lifecycle
// state (Live or Deleting)".
func KubeletSeen(n int, state uint8) uint8 {
	if state == Deleting {
		return uint8(2 * n)
	}
	return uint8(2*n - 1)
}

// KubeletSeenNode is the node whose kubelet holds view v (0 for nothing).
func KubeletSeenNode(v uint8) int { return (int(v) + 1) / 2 }

// KubeletSeenState is the lifecycle state view v shows (Absent for nothing).
func KubeletSeenState(v uint8) uint8 {
	switch {
	case v == KubeletSeenNothing:
		return Absent
	case v%2 == 0:
		return Deleting
	default:
		return Live
	}
}

// DeploymentView is a Deployment as the deployment controller sees it
// (dcDeployment in the TLA+ module, a record [state, replicas, version]):
// its lifecycle (Absent, Live, Deleting: deletionTimestamp set, Gone),
// spec.replicas and pod template version. With DeploymentLag = 0 the
// controller reads the store and the view stays at its zero value.
type DeploymentView struct{ State, Replicas, Version uint8 }

// Event is one watch event of a pod in an informer queue: the pod (index+1;
// 0 = an empty queue entry), what the component's cache will show for it
// (ProjRS or ProjSched of the pod as written) and the revision of the write.
type Event struct{ Pod, View, Rev uint8 }

// MaxLagLimit is the largest MaxLag the state layout holds.
const MaxLagLimit = 2

// Pod returns the index of pod slot k of the ReplicaSet of version v of
// deployment d (all numbered from 1).
func Pod(d, v, k int) int { return ((d-1)*MaxVersions+(v-1))*MaxPodsPerRS + (k - 1) }

// PodCoords is the inverse of Pod.
func PodCoords(p int) (d, v, k int) {
	k = p%MaxPodsPerRS + 1
	v = (p/MaxPodsPerRS)%MaxVersions + 1
	d = p/(MaxPodsPerRS*MaxVersions) + 1
	return
}
