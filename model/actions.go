package model

import (
	"fmt"
	"strings"
)

// Kind names an action of the specification; the String of a Kind is the
// name of its TLA+ operator.
type Kind uint8

const (
	// Environment: users.
	CreateDeployment Kind = iota + 1
	UpdateDeployment
	ScaleDeployment
	DeleteDeployment
	// Deployment controller.
	DeploymentCreateReplicaSet
	DeploymentScaleUp
	DeploymentScaleDown
	DeploymentObserve
	// ReplicaSet controller.
	ReplicaSetCreatePod
	ReplicaSetDeletePod
	// Garbage collector.
	GCDeleteReplicaSet
	GCDeletePod
	GCRemoveReplicaSet
	GCRemoveDeployment
	// Scheduler.
	SchedulerBindPod
	// Node lifecycle controller.
	NodeLifecycleTaintNode
	NodeLifecycleUntaintNode
	NodeLifecycleEvictPod
	// Kubelet of node n.
	KubeletStartPod
	KubeletRejectPod
	KubeletUpdatePodStatus
	KubeletStopPod
	KubeletFinalizePod
	KubeletEvictPod
	// Faults and recovery.
	ControllerCrash
	ControllerRestart
	KubeletCrash
	KubeletRestart
	WatchDrop
	Relist
	NodeFail
	NodeRecover
	// Informers: a queued watch event reaches the component's cache.
	DeliverWatchEvent
	// Nodes join and leave; the pod garbage collector.
	NodeJoin
	NodeDelete
	PodGCDeletePod
	// Readiness and completion.
	KubeletReportReady
	KubeletProbeFail
	KubeletCompletePod
	NodeLifecycleMarkPodNotReady
	// Kubelet informer: the kubelet's view of a pod catches up.
	KubeletObservePod
	DeploymentObserveReplicaSet
	NodeLifecycleObserveNode
	NodeReturn
	// Deployment controller informer: its view of a deployment catches up.
	DeploymentObserveDeployment
	// Garbage collector graph: its view of a pod catches up.
	GCObservePod
	// Only in mutants (not part of the specification).
	ReplicaSetAdoptPod
	numKinds
)

var kindNames = [numKinds]string{"", "CreateDeployment", "UpdateDeployment", "ScaleDeployment", "DeleteDeployment",
	"DeploymentCreateReplicaSet", "DeploymentScaleUp", "DeploymentScaleDown", "DeploymentObserve",
	"ReplicaSetCreatePod", "ReplicaSetDeletePod",
	"GCDeleteReplicaSet", "GCDeletePod", "GCRemoveReplicaSet", "GCRemoveDeployment",
	"SchedulerBindPod",
	"NodeLifecycleTaintNode", "NodeLifecycleUntaintNode", "NodeLifecycleEvictPod",
	"KubeletStartPod", "KubeletRejectPod", "KubeletUpdatePodStatus", "KubeletStopPod", "KubeletFinalizePod", "KubeletEvictPod",
	"ControllerCrash", "ControllerRestart", "KubeletCrash", "KubeletRestart", "WatchDrop", "Relist", "NodeFail", "NodeRecover",
	"DeliverWatchEvent", "NodeJoin", "NodeDelete", "PodGCDeletePod",
	"KubeletReportReady", "KubeletProbeFail", "KubeletCompletePod", "NodeLifecycleMarkPodNotReady",
	"KubeletObservePod", "DeploymentObserveReplicaSet", "NodeLifecycleObserveNode", "NodeReturn",
	"DeploymentObserveDeployment", "GCObservePod", "ReplicaSetAdoptPod"}

func (k Kind) String() string {
	if k < numKinds {
		return kindNames[k]
	}
	return fmt.Sprintf("Kind(%d)", k)
}

// Kinds lists every action of the specification (mutant-only actions excluded).
func Kinds() []Kind {
	var ks []Kind
	for k := CreateDeployment; k < ReplicaSetAdoptPod; k++ {
		ks = append(ks, k)
	}
	return ks
}

// Fair reports whether the specification assumes weak fairness for the
// action: every component action and every recovery is fair; user
// operations and faults are not (they may simply stop happening). A node
// being provisioned (NodeJoin) eventually joins.
func (k Kind) Fair() bool {
	switch k {
	case CreateDeployment, UpdateDeployment, ScaleDeployment, DeleteDeployment,
		KubeletEvictPod, ControllerCrash, KubeletCrash, WatchDrop, NodeFail, ReplicaSetAdoptPod,
		NodeDelete, KubeletProbeFail, KubeletCompletePod, NodeReturn:
		return false
	}
	return true
}

// Writes reports whether the action writes to the store.
func (k Kind) Writes() bool {
	switch k {
	case KubeletStartPod, KubeletStopPod, KubeletObservePod, DeploymentObserveReplicaSet, DeploymentObserveDeployment, GCObservePod, NodeLifecycleObserveNode,
		ControllerCrash, ControllerRestart, KubeletCrash, KubeletRestart, WatchDrop, Relist, NodeFail, NodeRecover,
		DeliverWatchEvent:
		return false
	}
	return true
}

// Action is one step: an action kind and its parameters. Pod parameters are
// pod indices (see Pod); everything else is numbered as in the TLA+ module.
type Action struct {
	Kind Kind
	Args [3]int8
	NArg int8
	Pods uint8 // bit i set: Args[i] is a pod index
}

func act(k Kind, args ...int) Action {
	a := Action{Kind: k, NArg: int8(len(args))}
	for i, x := range args {
		a.Args[i] = int8(x)
	}
	return a
}

func actPod(k Kind, podArg int, args ...int) Action {
	a := act(k, args...)
	a.Pods = 1 << podArg
	return a
}

// String renders the action as its TLA+ operator applied to its arguments,
// e.g. SchedulerBindPod(<<1, 2, 1>>, 2).
func (a Action) String() string {
	var b strings.Builder
	b.WriteString(a.Kind.String())
	b.WriteByte('(')
	for i := 0; i < int(a.NArg); i++ {
		if i > 0 {
			b.WriteString(", ")
		}
		switch {
		case a.Pods&(1<<i) != 0:
			b.WriteString(PodName(int(a.Args[i])))
		case (a.Kind == ControllerCrash || a.Kind == ControllerRestart || a.Kind == WatchDrop || a.Kind == Relist ||
			a.Kind == DeliverWatchEvent) && i == 0:
			fmt.Fprintf(&b, "%q", ControllerNames[a.Args[i]])
		case a.Kind == DeleteDeployment && i == 1:
			if a.Args[i] == 1 {
				b.WriteString(`"Foreground"`)
			} else {
				b.WriteString(`"Background"`)
			}
		default:
			fmt.Fprintf(&b, "%d", a.Args[i])
		}
	}
	b.WriteByte(')')
	return b.String()
}

// PodName renders a pod index as its TLA+ tuple <<d, v, k>>.
func PodName(p int) string {
	d, v, k := PodCoords(p)
	return fmt.Sprintf("<<%d, %d, %d>>", d, v, k)
}

// Successors calls emit for every enabled action of s and the state it
// leads to. The order is fixed (deterministic). emit must not keep t.
func (m *Model) Successors(s *State, emit func(a Action, t *State)) {
	c := &m.cfg
	var t State
	try := func(a Action, ok bool) {
		if ok {
			emit(a, &t)
		}
	}
	for d := 1; d <= c.NumDeployments; d++ {
		try(act(CreateDeployment, d), m.createDeployment(s, &t, d))
		try(act(UpdateDeployment, d), m.updateDeployment(s, &t, d))
		for r := 0; r <= c.Replicas; r++ {
			try(act(ScaleDeployment, d, r), m.scaleDeployment(s, &t, d, r))
		}
		for fg := 0; fg <= 1; fg++ {
			try(act(DeleteDeployment, d, fg), m.deleteDeployment(s, &t, d, fg == 1))
		}
		try(act(DeploymentCreateReplicaSet, d), m.deploymentCreateReplicaSet(s, &t, d))
		try(act(DeploymentScaleUp, d), m.deploymentScaleUp(s, &t, d))
		for v := 1; v <= c.NumVersions; v++ {
			try(act(DeploymentScaleDown, d, v), m.deploymentScaleDown(s, &t, d, v))
		}
		try(act(DeploymentObserve, d), m.deploymentObserve(s, &t, d))
		try(act(DeploymentObserveDeployment, d), m.deploymentObserveDeployment(s, &t, d))
		for v := 1; v <= c.NumVersions; v++ {
			try(act(ReplicaSetCreatePod, d, v), m.replicaSetCreatePod(s, &t, d, v))
			try(act(GCDeleteReplicaSet, d, v), m.gcDeleteReplicaSet(s, &t, d, v))
			try(act(GCRemoveReplicaSet, d, v), m.gcRemoveReplicaSet(s, &t, d, v))
			try(act(DeploymentObserveReplicaSet, d, v), m.deploymentObserveReplicaSet(s, &t, d, v))
		}
		try(act(GCRemoveDeployment, d), m.gcRemoveDeployment(s, &t, d))
	}
	for _, p := range m.pods {
		try(actPod(ReplicaSetDeletePod, 0, p), m.replicaSetDeletePod(s, &t, p))
		try(actPod(GCDeletePod, 0, p), m.gcDeletePod(s, &t, p))
		try(actPod(GCObservePod, 0, p), m.gcObservePod(s, &t, p))
		for n := 1; n <= c.NumNodes; n++ {
			try(actPod(SchedulerBindPod, 0, p, n), m.schedulerBindPod(s, &t, p, n))
		}
		try(actPod(NodeLifecycleEvictPod, 0, p), m.nodeLifecycleEvictPod(s, &t, p))
		try(actPod(NodeLifecycleMarkPodNotReady, 0, p), m.nodeLifecycleMarkPodNotReady(s, &t, p))
		try(actPod(PodGCDeletePod, 0, p), m.podGCDeletePod(s, &t, p))
		for n := 1; n <= c.NumNodes; n++ {
			if s.PodNode[p] != uint8(n) && s.SandboxNode[p] != uint8(n) && KubeletSeenNode(s.KubeletView[p]) != n &&
				m.mutant != MutantKubeletRunsPodBoundElsewhere {
				continue // every kubelet action of node n concerns a pod bound to n, with a sandbox on n, or in n's view
			}
			try(actPod(KubeletObservePod, 1, n, p), m.kubeletObservePod(s, &t, n, p))
			try(actPod(KubeletStartPod, 1, n, p), m.kubeletStartPod(s, &t, n, p))
			try(actPod(KubeletRejectPod, 1, n, p), m.kubeletRejectPod(s, &t, n, p))
			try(actPod(KubeletUpdatePodStatus, 1, n, p), m.kubeletUpdatePodStatus(s, &t, n, p))
			try(actPod(KubeletStopPod, 1, n, p), m.kubeletStopPod(s, &t, n, p))
			try(actPod(KubeletFinalizePod, 1, n, p), m.kubeletFinalizePod(s, &t, n, p))
			try(actPod(KubeletEvictPod, 1, n, p), m.kubeletEvictPod(s, &t, n, p))
			try(actPod(KubeletReportReady, 1, n, p), m.kubeletReportReady(s, &t, n, p))
			try(actPod(KubeletProbeFail, 1, n, p), m.kubeletProbeFail(s, &t, n, p))
			try(actPod(KubeletCompletePod, 1, n, p), m.kubeletCompletePod(s, &t, n, p))
		}
		if m.mutant == MutantReplicaSetAdoptsOtherTemplates {
			d, _, _ := PodCoords(p)
			for v := 1; v <= c.NumVersions; v++ {
				try(actPod(ReplicaSetAdoptPod, 2, d, v, p), m.replicaSetAdoptPod(s, &t, d, v, p))
			}
		}
	}
	for n := 1; n <= c.NumNodes; n++ {
		try(act(NodeLifecycleTaintNode, n), m.nodeLifecycleTaintNode(s, &t, n))
		try(act(NodeLifecycleUntaintNode, n), m.nodeLifecycleUntaintNode(s, &t, n))
		try(act(NodeLifecycleObserveNode, n), m.nodeLifecycleObserveNode(s, &t, n))
	}
	for ctl := 1; ctl <= NumControllers; ctl++ {
		try(act(ControllerCrash, ctl), m.controllerCrash(s, &t, ctl))
		try(act(ControllerRestart, ctl), m.controllerRestart(s, &t, ctl))
		try(act(WatchDrop, ctl), m.watchDrop(s, &t, ctl))
		try(act(Relist, ctl), m.relist(s, &t, ctl))
		try(act(DeliverWatchEvent, ctl), m.deliverWatchEvent(s, &t, ctl))
	}
	for n := 1; n <= c.NumNodes; n++ {
		try(act(KubeletCrash, n), m.kubeletCrash(s, &t, n))
		try(act(KubeletRestart, n), m.kubeletRestart(s, &t, n))
		try(act(NodeFail, n), m.nodeFail(s, &t, n))
		try(act(NodeRecover, n), m.nodeRecover(s, &t, n))
		try(act(NodeJoin, n), m.nodeJoin(s, &t, n))
		try(act(NodeReturn, n), m.nodeReturn(s, &t, n))
		try(act(NodeDelete, n), m.nodeDelete(s, &t, n))
	}
}

// Apply performs action a on s, reporting whether it is enabled.
func (m *Model) Apply(s *State, a Action) (State, bool) {
	var out State
	found := false
	m.Successors(s, func(b Action, t *State) {
		if !found && b == a {
			out, found = *t, true
		}
	})
	return out, found
}

// write is the effect every store write shares: the write gets the next
// revision of the store (TrackRevisions), and the change of each pod it
// writes is sent, as a watch event carrying that revision, to every
// component whose watch is established (see emit).
func (m *Model) write(s, t *State, k Kind) {
	if m.cfg.TrackRevisions == 1 && (m.mutant != MutantStatusWriteKeepsRevision || k != KubeletUpdatePodStatus) {
		t.Revision = s.Revision + 1
	}
	if m.mutant == MutantWatchSkipsDeleteEvents && k == KubeletFinalizePod {
		return
	}
	for _, p := range m.pods {
		if podChanged(s, t, p) {
			m.emit(t, p)
		}
	}
}

func podChanged(s, t *State, p int) bool {
	return s.PodState[p] != t.PodState[p] || s.PodNode[p] != t.PodNode[p] || s.PodPhase[p] != t.PodPhase[p] ||
		s.PodOwners[p] != t.PodOwners[p] || s.PodReady[p] != t.PodReady[p]
}

// project is what controller c's cache shows for pod p in state t.
func project(t *State, c, p int) uint8 {
	if c == ReplicaSetController {
		return ProjRS(t, p)
	}
	return ProjSched(t, p)
}

// cached is what controller c's cache shows for pod p.
func cached(t *State, c, p int) uint8 {
	if c == ReplicaSetController {
		return t.RSCView[p]
	}
	return t.SchedView[p]
}

// QueueLen is the number of watch events controller c holds undelivered.
func QueueLen(t *State, c int) int {
	n := 0
	for n < MaxLagLimit && t.Pending[c][n].Pod != 0 {
		n++
	}
	return n
}

// Replayed is what controller c's cache will show for pod p once every
// queued event is delivered.
func Replayed(t *State, c, p int) uint8 {
	v := cached(t, c, p)
	for _, e := range t.Pending[c] {
		if int(e.Pod) == p+1 {
			v = e.View
		}
	}
	return v
}

// emit sends the watch event of pod p's write to every running component
// whose watch is established. An event that changes nothing the component
// caches is not queued (its informer filters it). With MaxLag 0 the event
// is applied at once; otherwise it joins the component's queue, and a full
// queue first delivers its oldest event: a cache lags by at most MaxLag
// events, and may do so at any time.
func (m *Model) emit(t *State, p int) {
	for c := 1; c <= NumControllers; c++ {
		if !t.Up[c] || !t.WatchOK[c] {
			continue
		}
		e := Event{Pod: uint8(p + 1), View: project(t, c, p), Rev: t.Revision}
		if e.View == Replayed(t, c, p) {
			continue
		}
		if m.cfg.MaxLag == 0 {
			applyEvent(t, c, e)
			continue
		}
		n := QueueLen(t, c)
		if n == m.cfg.MaxLag {
			popEvent(t, c, 0)
			n--
		}
		t.Pending[c][n] = e
	}
}

// popEvent removes the i-th queued event of controller c and applies it.
func popEvent(t *State, c, i int) {
	e := t.Pending[c][i]
	copy(t.Pending[c][i:], t.Pending[c][i+1:])
	t.Pending[c][MaxLagLimit-1] = Event{}
	applyEvent(t, c, e)
}

// applyEvent updates controller c's cache with one watch event. The
// ReplicaSet controller observes a creation it expected when the pod shows
// up, a deletion when it shows terminating or gone; the scheduler confirms
// an assumed pod when the pod shows bound to that node (or is gone).
func applyEvent(t *State, c int, e Event) {
	p := int(e.Pod) - 1
	switch c {
	case ReplicaSetController:
		t.RSCView[p] = e.View
		if t.RSCExpect[p] == ExpectAdd && e.View != ViewAbsent || t.RSCExpect[p] == ExpectDelete && e.View != ViewActive {
			t.RSCExpect[p] = ExpectNone
		}
	case Scheduler:
		t.SchedView[p] = e.View
		if a := t.SchedAssumed[p]; a != 0 && (e.View == SchedUnbound+a || e.View == SchedNotCached) {
			t.SchedAssumed[p] = 0
		}
	}
	t.CacheRev[c] = e.Rev
}

// deliver brings the cache of every running controller whose watch is
// established up to date with the store (used where the harness builds a
// state from a snapshot).
func (m *Model) deliver(t *State) {
	for c := 1; c <= NumControllers; c++ {
		if t.Up[c] && t.WatchOK[c] {
			m.syncCache(t, c)
		}
	}
}

// syncCache replaces controller c's cache by the store's current state (a
// consistent list at the current revision): what it expected is observed,
// its assumed pods are confirmed, its queue is dropped.
func (m *Model) syncCache(t *State, c int) {
	for _, p := range m.pods {
		switch c {
		case ReplicaSetController:
			t.RSCView[p] = ProjRS(t, p)
			t.RSCExpect[p] = ExpectNone
		case Scheduler:
			t.SchedView[p] = ProjSched(t, p)
			t.SchedAssumed[p] = 0
		}
	}
	t.Pending[c] = [MaxLagLimit]Event{}
	t.CacheRev[c] = t.Revision
}

// DeliverWatchEvent(c): the oldest event in controller c's queue reaches
// its cache.
func (m *Model) deliverWatchEvent(s, t *State, c int) bool {
	if !s.Up[c] || s.Pending[c][0].Pod == 0 {
		return false
	}
	*t = *s
	i := 0
	if m.mutant == MutantInformerDeliversNewestFirst {
		i = QueueLen(s, c) - 1
	}
	popEvent(t, c, i)
	return true
}

// ===================== Environment: users =====================

// CreateDeployment(d): a user creates deployment d (once).
func (m *Model) createDeployment(s, t *State, d int) bool {
	if s.DepState[d] != Absent {
		return false
	}
	*t = *s
	t.DepState[d] = Live
	t.DepReplicas[d] = uint8(m.cfg.Replicas)
	t.DepVersion[d] = 1
	t.DepObserved[d] = false
	m.write(s, t, CreateDeployment)
	return true
}

// UpdateDeployment(d): a user changes the pod template (a rolling update).
func (m *Model) updateDeployment(s, t *State, d int) bool {
	if s.DepState[d] != Live || int(s.DepVersion[d]) >= m.cfg.NumVersions {
		return false
	}
	*t = *s
	t.DepVersion[d]++
	t.DepObserved[d] = false
	m.write(s, t, UpdateDeployment)
	return true
}

// ScaleDeployment(d, r): a user sets spec.replicas to r.
func (m *Model) scaleDeployment(s, t *State, d, r int) bool {
	if s.DepState[d] != Live || int(s.Scales) >= m.cfg.MaxScales || int(s.DepReplicas[d]) == r {
		return false
	}
	*t = *s
	t.DepReplicas[d] = uint8(r)
	t.DepObserved[d] = false
	t.Scales++
	m.write(s, t, ScaleDeployment)
	return true
}

// DeleteDeployment(d, policy): a user deletes deployment d with propagation
// policy Background (the object goes at once, the garbage collector deletes
// the dependents) or Foreground (the object stays, with the
// foregroundDeletion finalizer, until its dependents are gone).
func (m *Model) deleteDeployment(s, t *State, d int, foreground bool) bool {
	if s.DepState[d] != Live || int(s.Deletes) >= m.cfg.MaxDeletes {
		return false
	}
	*t = *s
	if foreground {
		// Setting the deletionTimestamp of an object with finalizers
		// bumps metadata.generation, so the new generation is not
		// observed yet.
		t.DepState[d] = Deleting
		t.DepObserved[d] = false
	} else {
		removeDeployment(t, d)
	}
	t.Deletes++
	m.write(s, t, DeleteDeployment)
	return true
}

func removeDeployment(t *State, d int) {
	t.DepState[d] = Gone
	t.DepReplicas[d] = 0
	t.DepVersion[d] = 0
	t.DepObserved[d] = false
}

// ===================== Deployment controller =====================

// DCSees is deployment d as the deployment controller sees it: its lagging
// view with DeploymentLag = 1 (DCDeployment), the object as it is
// otherwise. Every decision of the controller reads the deployment through
// it; its writes to ReplicaSets are compare-and-swaps on the ReplicaSets,
// which it reads current.
func (m *Model) DCSees(s *State, d int) DeploymentView {
	if m.cfg.DeploymentLag == 1 {
		return s.DCDeployment[d]
	}
	return DeploymentNow(s, d)
}

// DeploymentNow is deployment d as the store holds it.
func DeploymentNow(s *State, d int) DeploymentView {
	return DeploymentView{State: s.DepState[d], Replicas: s.DepReplicas[d], Version: s.DepVersion[d]}
}

// surgeRoom is how many more replicas the deployment's ReplicaSets may have
// in total without exceeding replicas + maxSurge (replicas as the
// controller sees them).
func (m *Model) surgeRoom(s *State, d int, dep DeploymentView) int {
	return max(0, int(dep.Replicas)+m.cfg.MaxSurge-m.TotalReplicas(s, d))
}

// DeploymentCreateReplicaSet(d): the controller sees d live and no
// ReplicaSet of its template: create it, as large as maxSurge allows.
func (m *Model) deploymentCreateReplicaSet(s, t *State, d int) bool {
	dep := m.DCSees(s, d)
	cur := dep.Version
	if dep.State != Live || s.RSState[d][cur] != Absent {
		return false
	}
	*t = *s
	t.RSState[d][cur] = Live
	t.RSReplicas[d][cur] = uint8(min(int(dep.Replicas), m.surgeRoom(s, d, dep)))
	m.write(s, t, DeploymentCreateReplicaSet)
	return true
}

// DeploymentScaleUp(d): scale the ReplicaSet of the template the controller
// sees up toward replicas, keeping the total within replicas + maxSurge.
func (m *Model) deploymentScaleUp(s, t *State, d int) bool {
	dep := m.DCSees(s, d)
	cur := dep.Version
	if dep.State != Live || s.RSState[d][cur] != Live {
		return false
	}
	target := min(int(dep.Replicas), int(s.RSReplicas[d][cur])+m.surgeRoom(s, d, dep))
	if m.mutant == MutantDeploymentIgnoresMaxSurge {
		target = int(dep.Replicas)
	}
	if target <= int(s.RSReplicas[d][cur]) {
		return false
	}
	*t = *s
	t.RSReplicas[d][cur] = uint8(target)
	m.write(s, t, DeploymentScaleUp)
	return true
}

// ScaleDownTarget is the replicas the deployment controller scales
// ReplicaSet (d, v) down to, with d as it sees it: the current one down to
// replicas; an old one drops its unavailable pods and as many available
// ones as keep replicas - maxUnavailable pods of the deployment available.
func (m *Model) ScaleDownTarget(s *State, d, v int) int {
	dep := m.DCSees(s, d)
	spec := int(s.RSReplicas[d][v])
	if v == int(dep.Version) {
		if m.mutant == MutantDeploymentFlapsReplicas && spec > 0 && spec == int(dep.Replicas) && m.AvailablePods(s, d, v) == spec {
			return spec - 1
		}
		return min(spec, int(dep.Replicas))
	}
	excess := m.AvailableTotal(s, d) - (int(dep.Replicas) - m.cfg.MaxUnavailable)
	return min(spec, max(0, m.AvailablePods(s, d, v)-max(0, excess)))
}

// DeploymentScaleDown(d, v): scale ReplicaSet (d, v) down (see ScaleDownTarget).
func (m *Model) deploymentScaleDown(s, t *State, d, v int) bool {
	dep := m.DCSees(s, d)
	if dep.State != Live || s.RSState[d][v] != Live {
		return false
	}
	if m.mutant == MutantDeploymentNeverRemovesOldReplicas && v != int(dep.Version) {
		return false
	}
	target := m.ScaleDownTarget(s, d, v)
	if target >= int(s.RSReplicas[d][v]) {
		return false
	}
	*t = *s
	t.RSReplicas[d][v] = uint8(target)
	m.write(s, t, DeploymentScaleDown)
	return true
}

// DeploymentObserve(d): write status.observedGeneration. The status write
// carries the resourceVersion of the object the controller read, so it
// succeeds only when its view is current. A live deployment is observed
// once its ReplicaSets are within replicas + maxSurge; one being deleted
// (deletionTimestamp set) gets only its status synced, whatever its
// ReplicaSets hold (upstream's syncStatusOnly).
func (m *Model) deploymentObserve(s, t *State, d int) bool {
	dep := m.DCSees(s, d)
	if s.DepObserved[d] || (dep != DeploymentNow(s, d) && m.mutant != MutantDeploymentObservesStaleGeneration) {
		return false
	}
	switch dep.State {
	case Live:
		if m.TotalReplicas(s, d) > int(dep.Replicas)+m.cfg.MaxSurge {
			return false
		}
	case Deleting:
	default:
		return false
	}
	*t = *s
	t.DepObserved[d] = true
	m.write(s, t, DeploymentObserve)
	return true
}

// DeploymentObserveDeployment(d): the deployment controller sees
// deployment d as it is now (DeploymentLag = 1): created, its spec changed,
// marked for deletion, or gone. Its informer and work queue coalesce
// updates, so the view jumps to the current object; until then the
// controller acts on the old one (any number of changes behind, which also
// covers its dropped watches and restarts).
func (m *Model) deploymentObserveDeployment(s, t *State, d int) bool {
	now := DeploymentNow(s, d)
	if m.cfg.DeploymentLag == 0 || s.DCDeployment[d] == now {
		return false
	}
	*t = *s
	t.DCDeployment[d] = now
	return true
}

// ===================== ReplicaSet controller =====================

// ReplicaSetCreatePod(d, v): the controller believes ReplicaSet (d, v) has
// fewer pods than spec.replicas; it creates one under the lowest free name
// slot and expects to observe it.
func (m *Model) replicaSetCreatePod(s, t *State, d, v int) bool {
	if !s.Up[ReplicaSetController] || s.RSState[d][v] != Live || m.Believed(s, d, v) >= int(s.RSReplicas[d][v]) {
		return false
	}
	p := -1
	for k := 1; k <= m.cfg.PodsPerRS; k++ {
		if q := Pod(d, v, k); SlotFree(s, q) {
			p = q
			break
		}
	}
	if m.mutant == MutantCreateOverwritesExistingKey {
		p = Pod(d, v, 1) // the name generator always returns the first name; the store does not check it is taken
	}
	if p < 0 {
		return false
	}
	*t = *s
	t.PodState[p] = Live
	t.PodNode[p] = 0
	t.PodPhase[p] = Pending
	t.PodOwners[p] = 1 << v
	t.RSCExpect[p] = ExpectAdd
	m.write(s, t, ReplicaSetCreatePod)
	return true
}

// ReplicaSetDeletePod(p): the controller believes p's ReplicaSet has more
// pods than spec.replicas; it deletes p, one of its cached active pods, and
// expects to observe the deletion. (Upstream ranks the candidates —
// unscheduled before scheduled before running; the model lets it pick any,
// which includes that choice. Deleting a pod that is already gone is a no-op
// and is not a step.)
func (m *Model) replicaSetDeletePod(s, t *State, p int) bool {
	d, v, _ := PodCoords(p)
	if !s.Up[ReplicaSetController] || s.RSState[d][v] != Live || m.Believed(s, d, v) <= int(s.RSReplicas[d][v]) ||
		!ActiveView(s.RSCView[p]) || s.RSCExpect[p] != ExpectNone || s.PodState[p] != Live {
		return false
	}
	*t = *s
	t.RSCExpect[p] = ExpectDelete
	deletePod(t, p)
	m.write(s, t, ReplicaSetDeletePod)
	return true
}

// ReplicaSetAdoptPod(d, v, p) exists only in mutant
// ReplicaSetAdoptsOtherTemplates: the ReplicaSet's selector ignores the
// pod-template-hash, so it adopts pods of its sibling ReplicaSets.
func (m *Model) replicaSetAdoptPod(s, t *State, d, v, p int) bool {
	if !s.Up[ReplicaSetController] || s.RSState[d][v] != Live || s.PodState[p] != Live || s.PodOwners[p]&(1<<v) != 0 {
		return false
	}
	*t = *s
	t.PodOwners[p] |= 1 << v
	m.write(s, t, ReplicaSetAdoptPod)
	return true
}

// ===================== Garbage collector =====================

// GCDeleteReplicaSet(d, v): the owner of ReplicaSet (d, v) is gone (deleted
// in the background) or being deleted in the foreground: delete the
// ReplicaSet, in the background or in the foreground respectively.
func (m *Model) gcDeleteReplicaSet(s, t *State, d, v int) bool {
	if s.RSState[d][v] != Live || (s.DepState[d] != Deleting && s.DepState[d] != Gone) {
		return false
	}
	*t = *s
	if s.DepState[d] == Deleting {
		t.RSState[d][v] = Deleting
	} else {
		t.RSState[d][v] = Absent
		t.RSReplicas[d][v] = 0
	}
	m.write(s, t, GCDeleteReplicaSet)
	return true
}

// GCDeletePod(p): every controller owner of pod p is gone or being deleted
// in the foreground: delete p.
func (m *Model) gcDeletePod(s, t *State, p int) bool {
	if s.PodState[p] != Live {
		return false
	}
	d, _, _ := PodCoords(p)
	gone := OwnersGone(s, p)
	if m.mutant == MutantGCDeletesPodsOfLiveOwner && (s.DepState[d] == Deleting || s.DepState[d] == Gone) {
		gone = true // looks at the owner's owner instead of the owner
	}
	if !gone || m.mutant == MutantGCNeverDeletesOrphans {
		return false
	}
	*t = *s
	deletePod(t, p)
	m.write(s, t, GCDeletePod)
	return true
}

// GCSees is whether the garbage collector's dependency graph has pod p:
// its lagging graph with GCLag = 1 (GCGraph), the store otherwise.
func (m *Model) GCSees(s *State, p int) bool {
	if m.cfg.GCLag == 1 {
		return s.GCGraph[p]
	}
	return s.PodState[p] != Absent
}

// GCRemoveReplicaSet(d, v): ReplicaSet (d, v) is being deleted in the
// foreground and its graph shows none of its pods (all have
// blockOwnerDeletion): remove the foregroundDeletion finalizer, so the
// object goes. The patch carries the ReplicaSet's resourceVersion (read
// live), but the blocking dependents come from the graph, which may not
// have a new pod yet (GCLag).
func (m *Model) gcRemoveReplicaSet(s, t *State, d, v int) bool {
	if s.RSState[d][v] != Deleting {
		return false
	}
	if m.mutant != MutantGCIgnoresBlockOwnerDeletion {
		for k := 1; k <= m.cfg.PodsPerRS; k++ {
			if m.GCSees(s, Pod(d, v, k)) {
				return false
			}
		}
	}
	*t = *s
	t.RSState[d][v] = Absent
	t.RSReplicas[d][v] = 0
	m.write(s, t, GCRemoveReplicaSet)
	return true
}

// GCRemoveDeployment(d): deployment d is being deleted in the foreground and
// none of its ReplicaSets remain: remove the finalizer, so it goes.
func (m *Model) gcRemoveDeployment(s, t *State, d int) bool {
	if s.DepState[d] != Deleting {
		return false
	}
	if m.mutant != MutantGCIgnoresBlockOwnerDeletion {
		for v := 1; v <= m.cfg.NumVersions; v++ {
			if s.RSState[d][v] != Absent {
				return false
			}
		}
	}
	*t = *s
	removeDeployment(t, d)
	m.write(s, t, GCRemoveDeployment)
	return true
}

// ===================== Scheduler =====================

// SchedulerBindPod(p, n): the scheduler's cache shows p pending and not
// assumed; node n is registered, untainted, matches p's nodeSelector and has
// room for p counting assumed pods;
// the binding is a compare-and-swap on p (it must still be unbound, live
// and not terminal), and p is assumed onto n until the binding is observed.
func (m *Model) schedulerBindPod(s, t *State, p, n int) bool {
	if !s.Up[Scheduler] || s.SchedAssumed[p] != 0 {
		return false
	}
	view := s.SchedView[p] == SchedUnbound
	store := s.PodState[p] == Live && s.PodNode[p] == 0 && !Terminal(s.PodPhase[p])
	switch m.mutant {
	case MutantBindingOverwritesBinding:
		// Re-schedules pods its cache shows on a tainted node, and the store
		// lets the binding replace the old one.
		if old := int(s.SchedView[p]) - int(SchedUnbound); old > 0 && s.NodeTainted[old] && old != n {
			view = true
			store = s.PodState[p] == Live && s.PodNode[p] == uint8(old)
		}
	case MutantStoreAcceptsStaleBinding:
		store = s.PodState[p] == Live // no resourceVersion precondition
	}
	if !view || !store || s.NodeTainted[n] && m.mutant != MutantSchedulerIgnoresTaints {
		return false
	}
	if s.NodeState[n] != Live && m.mutant != MutantSchedulerBindsToDeletedNode ||
		!m.MatchesNode(p, n) && m.mutant != MutantSchedulerIgnoresNodeSelector {
		return false
	}
	if m.SchedulerCount(s, n) >= m.cfg.Capacity && m.mutant != MutantSchedulerIgnoresCapacity {
		return false
	}
	*t = *s
	t.PodNode[p] = uint8(n)
	if m.mutant != MutantStoreAcceptsStaleBinding { // that mutant's binding call "times out": the assumption is forgotten
		t.SchedAssumed[p] = uint8(n)
	}
	m.write(s, t, SchedulerBindPod)
	return true
}

// ===================== Node lifecycle controller =====================

// NodeLifecycleTaintNode(n): node n stopped reporting: mark it NotReady and
// taint it NoExecute (node.kubernetes.io/unreachable).
func (m *Model) nodeLifecycleTaintNode(s, t *State, n int) bool {
	if s.NodeState[n] != Live || s.NodeUp[n] || s.NodeTainted[n] {
		return false
	}
	*t = *s
	t.NodeTainted[n] = true
	m.write(s, t, NodeLifecycleTaintNode)
	return true
}

// NodeLifecycleUntaintNode(n): node n reports Ready again: remove the taint.
func (m *Model) nodeLifecycleUntaintNode(s, t *State, n int) bool {
	if !s.NodeUp[n] || !s.NodeTainted[n] {
		return false
	}
	*t = *s
	t.NodeTainted[n] = false
	m.write(s, t, NodeLifecycleUntaintNode)
	return true
}

// NodeLifecycleEvictPod(p): p is bound to a node the controller sees
// NoExecute-tainted (NLCSeesTainted) and does not tolerate it: delete it
// (taint-based eviction; deleting a pod already terminating is no step).
func (m *Model) nodeLifecycleEvictPod(s, t *State, p int) bool {
	if s.PodState[p] != Live || s.PodNode[p] == 0 || !m.NLCSeesTainted(s, int(s.PodNode[p])) {
		return false
	}
	*t = *s
	t.PodState[p] = Deleting
	m.write(s, t, NodeLifecycleEvictPod)
	return true
}

// ===================== Kubelet of node n =====================

func (m *Model) kubeletReady(s *State, n int) bool { return s.NodeUp[n] && s.KubeletUp[n] }

// kubeletAdmissible: the kubelet sees p live and bound to n (its view, see
// KubeletSees), p's status is Pending (the kubelet's own status manager
// knows) — or Running with no sandbox anywhere, which only a node that was
// deleted and registered again finds (NodesReturn) — and the kubelet has no
// sandbox for it in its pod manager.
func (m *Model) kubeletAdmissible(s *State, n, p int) bool {
	bound := m.KubeletSees(s, p) == KubeletSeen(n, Live)
	if m.mutant == MutantKubeletRunsPodBoundElsewhere {
		bound = s.PodNode[p] != 0 && s.PodState[p] == Live // runs every scheduled pod it hears of
	}
	phaseOK := s.PodPhase[p] == Pending || s.PodPhase[p] == Running && s.Sandboxes[p] == 0 ||
		m.mutant == MutantKubeletRestartsFailedPod && s.PodPhase[p] == Failed
	return m.kubeletReady(s, n) && bound && phaseOK && !s.KubeletKnows[p] &&
		(s.Sandboxes[p] == 0 || s.SandboxNode[p] == uint8(n))
}

// KubeletStartPod(n, p): admit p (it fits among the node's admitted pods),
// run its sandbox with the lowest free IP of n's pool, and start its
// containers in it.
func (m *Model) kubeletStartPod(s, t *State, n, p int) bool {
	if !m.kubeletAdmissible(s, n, p) || m.Admitted(s, n) >= m.cfg.Capacity || !m.MatchesNode(p, n) {
		return false
	}
	ip := m.FreeIP(s, n)
	if m.mutant == MutantKubeletReusesIP {
		ip = 1
	}
	if ip == 0 {
		return false
	}
	*t = *s
	t.Sandboxes[p]++
	t.SandboxNode[p] = uint8(n)
	t.SandboxIP[p] = ip
	t.KubeletKnows[p] = true
	return true
}

// KubeletRejectPod(n, p): admission fails (the node is full, or its labels
// do not match p's nodeSelector: reason NodeAffinity): p Failed.
func (m *Model) kubeletRejectPod(s, t *State, n, p int) bool {
	if !m.kubeletAdmissible(s, n, p) || s.PodState[p] == Absent || s.PodNode[p] != uint8(n) ||
		m.Admitted(s, n) < m.cfg.Capacity && m.MatchesNode(p, n) {
		return false
	}
	*t = *s
	t.PodPhase[p] = Failed
	m.write(s, t, KubeletRejectPod)
	return true
}

// KubeletUpdatePodStatus(n, p): report p Running; Ready too when its
// containers have no readiness probe (ReadinessProbes = 0).
func (m *Model) kubeletUpdatePodStatus(s, t *State, n, p int) bool {
	phaseOK := s.PodPhase[p] == Pending || (m.mutant == MutantKubeletRestartsFailedPod && s.PodPhase[p] == Failed)
	if !m.kubeletReady(s, n) || s.Sandboxes[p] == 0 || s.SandboxNode[p] != uint8(n) || s.PodState[p] != Live || !phaseOK {
		return false
	}
	*t = *s
	t.PodPhase[p] = Running
	t.PodReady[p] = m.cfg.ReadinessProbes == 0
	m.write(s, t, KubeletUpdatePodStatus)
	return true
}

// KubeletStopPod(n, p): the kubelet sees p terminating, gone or not bound
// here, or p is terminal: stop its containers (gracefully), remove its
// sandbox and release its IP.
func (m *Model) kubeletStopPod(s, t *State, n, p int) bool {
	if m.mutant == MutantKubeletNeverStopsDeletedPods && m.KubeletSees(s, p) == KubeletSeen(n, Deleting) {
		return false
	}
	if !m.kubeletReady(s, n) || s.Sandboxes[p] == 0 || s.SandboxNode[p] != uint8(n) ||
		(m.KubeletSees(s, p) == KubeletSeen(n, Live) && !Terminal(s.PodPhase[p])) {
		return false
	}
	*t = *s
	m.stopSandbox(t, p)
	return true
}

// StopSandbox(p): the kubelet stops p's containers and sandbox, releases its
// IP and drops the sandbox from its pod manager.
func (m *Model) stopSandbox(t *State, p int) {
	t.Sandboxes[p] = 0
	t.SandboxNode[p] = 0
	if m.mutant != MutantKubeletLeaksIPOnStop {
		t.SandboxIP[p] = 0
	}
	t.KubeletKnows[p] = false
}

// writeTerminal is WriteTerminal(p): the kubelet's write of p's terminal
// phase (set in t by the caller), p's sandbox stopped in the same step —
// its status manager holds the phase back until the termination completed
// (KUBELET-8; upstream mergePodStatus with the pod worker's
// CouldHaveRunningContainers).
func (m *Model) writeTerminal(s, t *State, p int, k Kind) {
	m.stopSandbox(t, p)
	m.write(s, t, k)
}

// KubeletFinalizePod(n, p): the kubelet sees p terminating on n and nothing
// of it runs any more: delete the object for good (grace period 0, with a
// UID precondition: the pod must still be terminating on n).
func (m *Model) kubeletFinalizePod(s, t *State, n, p int) bool {
	if m.mutant == MutantKubeletNeverFinalizesDeletion {
		return false
	}
	if !m.kubeletReady(s, n) || m.KubeletSees(s, p) != KubeletSeen(n, Deleting) ||
		s.PodState[p] != Deleting || s.PodNode[p] != uint8(n) || s.Sandboxes[p] != 0 {
		return false
	}
	*t = *s
	removePod(t, p)
	m.write(s, t, KubeletFinalizePod)
	return true
}

// KubeletEvictPod(n, p) (fault): node-pressure eviction of running pod p:
// the kubelet kills it and, its sandbox stopped, reports it Failed
// (WriteTerminal).
func (m *Model) kubeletEvictPod(s, t *State, n, p int) bool {
	if !m.kubeletReady(s, n) || int(s.Evictions) >= m.cfg.MaxEvictions || s.PodNode[p] != uint8(n) ||
		s.PodState[p] != Live || s.PodPhase[p] != Running {
		return false
	}
	*t = *s
	t.PodPhase[p] = Failed
	t.PodReady[p] = false
	t.Evictions++
	if m.mutant == MutantKubeletFailsPodBeforeStop {
		m.write(s, t, KubeletEvictPod) // the sandbox runs on; KubeletStopPod stops it later
		return true
	}
	m.writeTerminal(s, t, p, KubeletEvictPod)
	return true
}

// ===================== Faults and recovery =====================

// ControllerCrash(c): controller c crashes and loses its memory.
func (m *Model) controllerCrash(s, t *State, c int) bool {
	if !s.Up[c] || int(s.Crashes) >= m.cfg.MaxCrashes {
		return false
	}
	*t = *s
	t.Up[c] = false
	t.WatchOK[c] = true // meaningless while down; a restart establishes the watch
	t.Crashes++
	t.Pending[c] = [MaxLagLimit]Event{}
	t.CacheRev[c] = 0
	switch c {
	case ReplicaSetController:
		t.RSCView = [MaxPods]uint8{}
		t.RSCExpect = [MaxPods]uint8{}
	case Scheduler:
		t.SchedView = [MaxPods]uint8{}
		t.SchedAssumed = [MaxPods]uint8{}
	}
	return true
}

// ControllerRestart(c): controller c starts again: it lists (its cache is
// the current state) and watches.
func (m *Model) controllerRestart(s, t *State, c int) bool {
	if s.Up[c] {
		return false
	}
	*t = *s
	t.Up[c] = true
	m.relistCache(t, c)
	return true
}

// WatchDrop(c): the pod watch of controller c breaks: its cache stops
// receiving events.
func (m *Model) watchDrop(s, t *State, c int) bool {
	if !s.Up[c] || !s.WatchOK[c] || int(s.WatchDrops) >= m.cfg.MaxWatchDrops {
		return false
	}
	*t = *s
	t.WatchOK[c] = false
	t.WatchDrops++
	return true
}

// Relist(c): controller c re-lists after its watch broke (the resume
// revision may have been compacted) and watches again.
func (m *Model) relist(s, t *State, c int) bool {
	if !s.Up[c] || s.WatchOK[c] {
		return false
	}
	*t = *s
	m.relistCache(t, c)
	return true
}

// relistCache replaces controller c's cache by a consistent list of the
// store; what it expected is now observed.
func (m *Model) relistCache(t *State, c int) {
	t.WatchOK[c] = true
	if m.mutant == MutantRelistServedFromStaleCache && c == ReplicaSetController {
		t.RSCExpect = [MaxPods]uint8{} // the list came from a lagging cache: expectations cleared, views stale
		t.Pending[c] = [MaxLagLimit]Event{}
		return
	}
	m.syncCache(t, c)
}

// KubeletCrash(n): the kubelet of node n crashes; its pod manager is lost,
// the runtime's sandboxes and containers stay.
func (m *Model) kubeletCrash(s, t *State, n int) bool {
	if !s.KubeletUp[n] || int(s.Crashes) >= m.cfg.MaxCrashes {
		return false
	}
	*t = *s
	t.KubeletUp[n] = false
	for _, p := range m.pods {
		if s.SandboxNode[p] == uint8(n) {
			t.KubeletKnows[p] = false
		}
		if KubeletSeenNode(s.KubeletView[p]) == n {
			t.KubeletView[p] = KubeletSeenNothing
		}
	}
	t.Crashes++
	return true
}

// KubeletRestart(n): the kubelet of node n starts again, rebuilds its pod
// manager from the runtime's sandboxes and lists the pods bound to n.
func (m *Model) kubeletRestart(s, t *State, n int) bool {
	if s.KubeletUp[n] || s.NodeState[n] != Live {
		return false
	}
	*t = *s
	t.KubeletUp[n] = true
	if m.mutant != MutantKubeletForgetsSandboxesOnRestart {
		for _, p := range m.pods {
			if s.SandboxNode[p] == uint8(n) && s.Sandboxes[p] > 0 {
				t.KubeletKnows[p] = true
			}
		}
	}
	if m.cfg.KubeletLag == 1 {
		for _, p := range m.pods {
			if int(s.PodNode[p]) == n {
				t.KubeletView[p] = ProjKubelet(s, p)
			}
		}
	}
	return true
}

// NodeFail(n): node n becomes unreachable (its kubelet stops reporting; its
// runtime is frozen).
func (m *Model) nodeFail(s, t *State, n int) bool {
	if !s.NodeUp[n] || int(s.NodeFailures) >= m.cfg.MaxNodeFailures {
		return false
	}
	*t = *s
	t.NodeUp[n] = false
	t.NodeFailures++
	return true
}

// NodeRecover(n): node n is reachable again.
func (m *Model) nodeRecover(s, t *State, n int) bool {
	if s.NodeUp[n] || s.NodeState[n] != Live {
		return false
	}
	*t = *s
	t.NodeUp[n] = true
	return true
}

// NodeJoin(n): node n, not yet registered, joins: its kubelet registers the
// Node object and starts.
func (m *Model) nodeJoin(s, t *State, n int) bool {
	if s.NodeState[n] != Absent {
		return false
	}
	m.registerNode(s, t, n)
	m.write(s, t, NodeJoin)
	return true
}

// NodeReturn(n) (environment, NodesReturn = 1): deleted node n comes back
// under the same name — a machine provisioned again with the name of one
// that went away. Its kubelet registers the Node object, starts with an
// empty runtime and lists the pods still bound to n (those the pod garbage
// collector has not deleted yet), and runs them again.
func (m *Model) nodeReturn(s, t *State, n int) bool {
	if m.cfg.NodesReturn == 0 || s.NodeState[n] != Gone {
		return false
	}
	m.registerNode(s, t, n)
	m.write(s, t, NodeReturn)
	return true
}

// registerNode is the effect NodeJoin and NodeReturn share.
func (m *Model) registerNode(s, t *State, n int) {
	*t = *s
	t.NodeState[n] = Live
	t.NodeUp[n] = true
	t.KubeletUp[n] = true
	if m.cfg.KubeletLag == 1 {
		for _, p := range m.pods {
			if int(s.PodNode[p]) == n {
				t.KubeletView[p] = ProjKubelet(s, p)
			}
		}
	}
}

// NodeDelete(n): node n's machine is removed and its Node object deleted
// (the cloud node controller's deletion of a vanished instance): its
// runtime is gone with it. The pods bound to it are left to the pod garbage
// collector.
func (m *Model) nodeDelete(s, t *State, n int) bool {
	if s.NodeState[n] != Live || int(s.NodeDeletes) >= m.cfg.MaxNodeDeletes {
		return false
	}
	*t = *s
	t.NodeState[n] = Gone
	t.NodeUp[n] = false
	t.KubeletUp[n] = false
	t.NodeTainted[n] = false
	for _, p := range m.pods {
		if s.SandboxNode[p] == uint8(n) {
			t.Sandboxes[p], t.SandboxNode[p], t.SandboxIP[p], t.KubeletKnows[p] = 0, 0, 0, false
		}
		if KubeletSeenNode(s.KubeletView[p]) == n {
			t.KubeletView[p] = KubeletSeenNothing
		}
	}
	t.NodeDeletes++
	m.write(s, t, NodeDelete)
	return true
}

// PodGCDeletePod(p): p is bound to a node whose Node object is gone: the
// pod garbage collector force-deletes it (grace period 0).
func (m *Model) podGCDeletePod(s, t *State, p int) bool {
	if m.mutant == MutantPodGCIgnoresDeletedNodes {
		return false
	}
	if s.PodState[p] == Absent || s.PodNode[p] == 0 || s.NodeState[s.PodNode[p]] == Live {
		return false
	}
	*t = *s
	removePod(t, p)
	m.write(s, t, PodGCDeletePod)
	return true
}

// KubeletReportReady(n, p): p runs on n and its readiness probe passes (or
// it has none): report the Ready condition true.
func (m *Model) kubeletReportReady(s, t *State, n, p int) bool {
	if !m.kubeletReady(s, n) || s.Sandboxes[p] == 0 || s.SandboxNode[p] != uint8(n) || s.PodState[p] != Live ||
		s.PodPhase[p] != Running || s.PodReady[p] {
		return false
	}
	*t = *s
	t.PodReady[p] = true
	m.write(s, t, KubeletReportReady)
	return true
}

// KubeletProbeFail(n, p) (fault): the readiness probe of Ready pod p fails:
// the kubelet reports Ready false (the container keeps running).
func (m *Model) kubeletProbeFail(s, t *State, n, p int) bool {
	if m.cfg.ReadinessProbes == 0 || int(s.ProbeFailures) >= m.cfg.MaxProbeFailures || !m.kubeletReady(s, n) ||
		s.SandboxNode[p] != uint8(n) || s.Sandboxes[p] == 0 || s.PodState[p] != Live || s.PodPhase[p] != Running || !s.PodReady[p] {
		return false
	}
	*t = *s
	t.PodReady[p] = false
	t.ProbeFailures++
	m.write(s, t, KubeletProbeFail)
	return true
}

// KubeletCompletePod(n, p) (environment): the containers of running pod p
// exit 0. Under restartPolicy Always the kubelet restarts them and p is not
// Ready until its probe passes again; under OnFailure or Never the kubelet
// stops p's sandbox and, that done, reports p Succeeded (terminal, not
// Ready; WriteTerminal).
func (m *Model) kubeletCompletePod(s, t *State, n, p int) bool {
	if int(s.Completions) >= m.cfg.MaxCompletions || !m.kubeletReady(s, n) || s.SandboxNode[p] != uint8(n) ||
		s.Sandboxes[p] == 0 || s.PodState[p] != Live || s.PodPhase[p] != Running {
		return false
	}
	always := m.cfg.RestartPolicy == RestartAlways
	if m.mutant == MutantKubeletCompletesAlwaysPods {
		always = false
	}
	if always && (m.cfg.ReadinessProbes == 0 || !s.PodReady[p]) {
		return false // restarted at once: nothing observable changes
	}
	*t = *s
	t.PodReady[p] = m.mutant == MutantKubeletKeepsReadyOnExit && s.PodReady[p]
	t.Completions++
	if always {
		m.write(s, t, KubeletCompletePod)
		return true
	}
	t.PodPhase[p] = Succeeded
	m.writeTerminal(s, t, p, KubeletCompletePod)
	return true
}

// NodeLifecycleMarkPodNotReady(p): p is Ready on a node that stopped
// reporting (its kubelet is down or the node unreachable) or is tainted:
// the node lifecycle controller sets its Ready condition false. Upstream
// marks the pods when the node's Ready condition turns Unknown, which can
// be before the rate-limited NoExecute taint lands.
func (m *Model) nodeLifecycleMarkPodNotReady(s, t *State, p int) bool {
	if !s.PodReady[p] || s.PodState[p] == Absent || s.PodNode[p] == 0 {
		return false
	}
	if n := int(s.PodNode[p]); !s.NodeTainted[n] && m.kubeletReady(s, n) {
		return false
	}
	*t = *s
	t.PodReady[p] = false
	m.write(s, t, NodeLifecycleMarkPodNotReady)
	return true
}

// KubeletObservePod(n, p): the kubelet of node n sees pod p as it is now
// (KubeletLag = 1): p bound to n, terminating, or gone. The kubelet's pod
// watch and its pod workers coalesce updates, so the view of each pod
// jumps to the current object; until then the kubelet acts on the old one.
// Without this step for a while the view may be any number of changes
// behind, which also covers a dropped kubelet watch.
func (m *Model) kubeletObservePod(s, t *State, n, p int) bool {
	if m.cfg.KubeletLag == 0 || !m.kubeletReady(s, n) {
		return false
	}
	now := ProjKubelet(s, p)
	if now == s.KubeletView[p] || KubeletSeenNode(now) != n && KubeletSeenNode(s.KubeletView[p]) != n {
		return false
	}
	*t = *s
	t.KubeletView[p] = now
	return true
}

// DeploymentObserveReplicaSet(d, v): the deployment controller sees
// ReplicaSet (d, v)'s status.availableReplicas as the pods are now
// (DeploymentLag = 1). Upstream the ReplicaSet controller writes that status
// from its own pod cache and the deployment controller reads it from its
// ReplicaSet cache; until then it acts on the old count (any number of
// changes behind, which also covers its dropped watches and restarts).
func (m *Model) deploymentObserveReplicaSet(s, t *State, d, v int) bool {
	now := uint8(m.AvailablePodsNow(s, d, v))
	if m.cfg.DeploymentLag == 0 || s.DCAvailable[d][v] == now {
		return false
	}
	*t = *s
	t.DCAvailable[d][v] = now
	return true
}

// GCObservePod(p): the garbage collector's graph catches up with pod p
// (GCLag = 1): it gets the pod's node once the pod informer delivers its
// creation, and loses it once it delivers its removal.
func (m *Model) gcObservePod(s, t *State, p int) bool {
	now := s.PodState[p] != Absent
	if m.cfg.GCLag == 0 || s.GCGraph[p] == now {
		return false
	}
	*t = *s
	t.GCGraph[p] = now
	return true
}

// NodeLifecycleObserveNode(n): taint-based eviction sees node n's taint as
// it is now (NodeLifecycleLag = 1); until then it may evict the pods of a
// node whose taint was just removed, or not yet evict those of a node just
// tainted.
func (m *Model) nodeLifecycleObserveNode(s, t *State, n int) bool {
	if m.cfg.NodeLifecycleLag == 0 || s.NLCTainted[n] == s.NodeTainted[n] {
		return false
	}
	*t = *s
	t.NLCTainted[n] = s.NodeTainted[n]
	return true
}
