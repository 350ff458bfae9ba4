package model

// Property is one named property of the specification (spec/README.md).
// Exactly one of Invariant, Step and Goal is set:
//   - Invariant: a predicate every reachable state satisfies;
//   - Step: a predicate every step s -> t satisfies (TLA+ [][P]_vars);
//   - Goal: a liveness property <>[]Goal under the fairness assumptions.
type Property struct {
	ID        string // e.g. "SCHED-2"; the TLA+ operator is OperatorFromID(ID)
	Name      string // the TLA+ helper predicate it is written with
	Text      string // plain words
	Invariant func(m *Model, s *State) bool
	Step      func(m *Model, s, t *State) bool
	Goal      func(m *Model, s *State) bool
}

// Kind of the property, as the report prints it.
func (p Property) Kind() string {
	switch {
	case p.Invariant != nil:
		return "invariant"
	case p.Step != nil:
		return "step"
	default:
		return "liveness"
	}
}

// Properties lists every property, in the order of spec/README.md.
var Properties = []Property{
	{ID: "STORE-1", Name: "WatchDeliversEveryWrite", Text: "every write gets the next global revision (its resourceVersion), and an established watch delivers every write in revision order: a cache followed by its queued events is the current state", Step: storeWatchDeliversEveryWrite},
	{ID: "STORE-2", Name: "CreateOnlyAbsent", Text: "a create succeeds only on an absent key: an existing pod is never replaced by a fresh one", Step: storeCreateOnlyAbsent},
	{ID: "STORE-3", Name: "BindFromCurrentCopy", Text: "a compare-and-swap write (the binding) succeeds only if the writer's copy is current: a stale write fails", Step: storeBindFromCurrentCopy},
	{ID: "STORE-4", Name: "ListIsCurrent", Text: "a list (after a restart or a dropped watch) returns the current state", Step: storeListIsCurrent},
	{ID: "RS-1", Name: "CreateBelowReplicas", Text: "the ReplicaSet controller creates a pod only while the ReplicaSet really has fewer active pods than spec.replicas (expectations compensate its lagging cache)", Step: rsCreateBelowReplicas},
	{ID: "RS-2", Name: "OneControllerOwner", Text: "a pod has at most one controller owner", Invariant: rsOneControllerOwner},
	{ID: "DEP-1", Name: "SurgeBound", Text: "once the controller has observed the current generation, the ReplicaSets' replicas total at most replicas + maxSurge", Invariant: depSurgeBound},
	{ID: "DEP-2", Name: "ScaleDownKeepsAvailable", Text: "the controller scales a ReplicaSet down only as far as keeps replicas - maxUnavailable pods available", Step: depScaleDownKeepsAvailable},
	{ID: "GC-1", Name: "DeleteWithReason", Text: "a live pod is deleted only because its owners are gone, its node is tainted or deleted, or its ReplicaSet controller saw too many pods", Step: gcDeleteWithReason},
	{ID: "GC-2", Name: "ForegroundBlocks", Text: "an owner deleted in the foreground goes only after its blocking dependents are gone", Step: gcForegroundBlocks},
	{ID: "SCHED-1", Name: "BindOnce", Text: "a pod is bound at most once and never re-bound", Step: schedBindOnce},
	{ID: "SCHED-2", Name: "NodeCapacity", Text: "the non-terminal pods bound to a node never exceed its capacity", Invariant: schedNodeCapacity},
	{ID: "SCHED-3", Name: "BindUntainted", Text: "a pod is bound only to a node without a NoExecute taint", Step: schedBindUntainted},
	{ID: "SCHED-4", Name: "NodeSelectorMatches", Text: "a pod is bound only to a node whose labels match its nodeSelector", Invariant: schedNodeSelectorMatches},
	{ID: "SCHED-5", Name: "BindRegistered", Text: "a pod is bound only to a registered node (its Node object exists)", Step: schedBindRegistered},
	{ID: "KUBELET-1", Name: "RunsOnlyBoundPods", Text: "a kubelet runs only pods bound to its node", Invariant: kubeletRunsOnlyBoundPods},
	{ID: "KUBELET-2", Name: "OneSandbox", Text: "a pod has at most one live sandbox", Invariant: kubeletOneSandbox},
	{ID: "KUBELET-3", Name: "UniqueIPs", Text: "pod IPs are unique among a node's live sandboxes", Invariant: kubeletUniqueIPs},
	{ID: "KUBELET-4", Name: "IPReleased", Text: "an IP is held only by a live sandbox: removing a sandbox releases it", Invariant: kubeletIPReleased},
	{ID: "KUBELET-5", Name: "TerminalPhase", Text: "a pod's phase never leaves Failed or Succeeded", Step: kubeletTerminalPhase},
	{ID: "KUBELET-6", Name: "ReadyOnlyRunning", Text: "a pod is Ready only while Running", Invariant: kubeletReadyOnlyRunning},
	{ID: "KUBELET-7", Name: "SucceedOnlyWithoutAlways", Text: "a pod reaches Succeeded only under restartPolicy OnFailure or Never (under Always its completed containers restart)", Step: kubeletSucceedOnlyWithoutAlways},
	{ID: "KUBELET-8", Name: "TerminalAfterStop", Text: "the kubelet writes a terminal phase only for a pod none of whose sandboxes is live (its termination completed)", Step: kubeletTerminalAfterStop},
	{ID: "LIVE-1", Name: "DeploymentsConverged", Text: "every deployment eventually has exactly replicas Ready pods of its current template and none of older ones, observed", Goal: liveDeploymentsConverged},
	{ID: "LIVE-2", Name: "NoOrphans", Text: "every pod (and ReplicaSet) whose owner is gone is eventually deleted, and foreground deletions finish", Goal: liveNoOrphans},
	{ID: "LIVE-3", Name: "NoLeakedSandboxes", Text: "every sandbox of a deleted, terminal or foreign pod is eventually removed and its IP released", Goal: liveNoLeakedSandboxes},
	{ID: "LIVE-4", Name: "NoPodsOnDeletedNodes", Text: "every pod bound to a deleted node is eventually deleted", Goal: liveNoPodsOnDeletedNodes},
}

var propertyByID = func() map[string]Property {
	mp := map[string]Property{}
	for _, p := range Properties {
		mp[p.ID] = p
	}
	return mp
}()

// LookupProperty returns the property with the given ID.
func LookupProperty(id string) (Property, bool) { p, ok := propertyByID[id]; return p, ok }

// ---- STORE ----

// storeChanged reports whether any store variable differs between s and t.
func storeChanged(s, t *State) bool {
	return s.DepState != t.DepState || s.DepReplicas != t.DepReplicas || s.DepVersion != t.DepVersion ||
		s.DepObserved != t.DepObserved || s.RSState != t.RSState || s.RSReplicas != t.RSReplicas ||
		s.PodState != t.PodState || s.PodNode != t.PodNode || s.PodPhase != t.PodPhase || s.PodOwners != t.PodOwners ||
		s.PodReady != t.PodReady || s.NodeTainted != t.NodeTainted || s.NodeState != t.NodeState
}

// storeWatchDeliversEveryWrite: (a) with TrackRevisions, a step that
// writes the store advances the revision by exactly one and any other step
// leaves it; (b) after a write, every component whose watch is established
// has the write in its cache or queue: the cache replayed with its queued
// events is the current state, and the queued events' revisions increase
// strictly, above the revision the cache reflects.
func storeWatchDeliversEveryWrite(m *Model, s, t *State) bool {
	changed := storeChanged(s, t)
	if m.cfg.TrackRevisions == 1 {
		// int arithmetic: a uint8 counter that wraps is reported, not hidden.
		if changed && int(t.Revision) != int(s.Revision)+1 || !changed && t.Revision != s.Revision {
			return false
		}
	}
	if !changed {
		return true
	}
	for c := 1; c <= NumControllers; c++ {
		if !t.Up[c] || !t.WatchOK[c] {
			continue
		}
		for _, p := range m.pods {
			if Replayed(t, c, p) != project(t, c, p) {
				return false
			}
		}
		if m.cfg.TrackRevisions == 1 {
			last := t.CacheRev[c]
			for i := 0; i < QueueLen(t, c); i++ {
				if t.Pending[c][i].Rev <= last {
					return false
				}
				last = t.Pending[c][i].Rev
			}
		}
	}
	return true
}

func storeCreateOnlyAbsent(m *Model, s, t *State) bool {
	for _, p := range m.pods {
		fresh := t.PodState[p] == Live && t.PodNode[p] == 0 && t.PodPhase[p] == Pending
		wasOther := s.PodState[p] == Deleting || s.PodNode[p] != 0 || s.PodPhase[p] != Pending
		if s.PodState[p] != Absent && fresh && wasOther {
			return false
		}
	}
	return true
}

func storeBindFromCurrentCopy(m *Model, s, t *State) bool {
	for _, p := range m.pods {
		if t.PodNode[p] != s.PodNode[p] && t.PodNode[p] != 0 && s.SchedView[p] != ProjSched(s, p) {
			return false
		}
	}
	return true
}

func storeListIsCurrent(m *Model, s, t *State) bool {
	for _, c := range []int{ReplicaSetController, Scheduler} {
		if s.Up[c] && s.WatchOK[c] || !(t.Up[c] && t.WatchOK[c]) {
			continue // no list happened
		}
		for _, p := range m.pods {
			if c == ReplicaSetController && t.RSCView[p] != ProjRS(t, p) || c == Scheduler && t.SchedView[p] != ProjSched(t, p) {
				return false
			}
		}
	}
	return true
}

// ---- RS ----

func rsCreateBelowReplicas(m *Model, s, t *State) bool {
	for _, p := range m.pods {
		if s.PodState[p] == Absent && t.PodState[p] == Live || storeCreated(s, t, p) {
			d, v, _ := PodCoords(p)
			if m.ActivePods(t, d, v) > int(s.RSReplicas[d][v]) {
				return false
			}
		}
	}
	return true
}

// storeCreated reports a pod object replaced by a freshly created one.
func storeCreated(s, t *State, p int) bool {
	return s.PodState[p] != Absent && t.PodState[p] == Live && t.PodNode[p] == 0 && t.PodPhase[p] == Pending &&
		(s.PodState[p] == Deleting || s.PodNode[p] != 0 || s.PodPhase[p] != Pending)
}

func popcount(x uint8) int {
	n := 0
	for ; x != 0; x &= x - 1 {
		n++
	}
	return n
}

func rsOneControllerOwner(m *Model, s *State) bool {
	for _, p := range m.pods {
		if popcount(s.PodOwners[p]) > 1 {
			return false
		}
	}
	return true
}

// ---- DEP ----

func depSurgeBound(m *Model, s *State) bool {
	for d := 1; d <= m.cfg.NumDeployments; d++ {
		if s.DepState[d] == Live && s.DepObserved[d] && m.TotalReplicas(s, d) > int(s.DepReplicas[d])+m.cfg.MaxSurge {
			return false
		}
	}
	return true
}

// depScaleDownKeepsAvailable counts availability truthfully (Running pods),
// whatever a mutant's controller counts.
func depScaleDownKeepsAvailable(m *Model, s, t *State) bool {
	truth := m
	if m.mutant != "" {
		truth = &Model{cfg: m.cfg, pods: m.pods}
	}
	for d := 1; d <= m.cfg.NumDeployments; d++ {
		for v := 1; v <= m.cfg.NumVersions; v++ {
			if s.RSState[d][v] != Live || t.RSState[d][v] != Live || t.RSReplicas[d][v] >= s.RSReplicas[d][v] {
				continue
			}
			avail := truth.AvailablePods(s, d, v)
			if lost := avail - int(t.RSReplicas[d][v]); lost > 0 &&
				truth.AvailableTotal(s, d)-lost < int(m.DCSees(s, d).Replicas)-m.cfg.MaxUnavailable {
				return false
			}
		}
	}
	return true
}

// ---- GC ----

func gcDeleteWithReason(m *Model, s, t *State) bool {
	for _, p := range m.pods {
		if s.PodState[p] != Live || t.PodState[p] == Live {
			continue
		}
		d, v, _ := PodCoords(p)
		tainted := s.PodNode[p] != 0 && (s.NodeTainted[s.PodNode[p]] || m.NLCSeesTainted(s, int(s.PodNode[p])) ||
			s.NodeState[s.PodNode[p]] != Live)
		excess := m.Believed(s, d, v) > int(s.RSReplicas[d][v])
		if !OwnersGone(s, p) && !tainted && !excess {
			return false
		}
	}
	return true
}

func gcForegroundBlocks(m *Model, s, t *State) bool {
	for d := 1; d <= m.cfg.NumDeployments; d++ {
		for v := 1; v <= m.cfg.NumVersions; v++ {
			if s.RSState[d][v] == Deleting && t.RSState[d][v] == Absent {
				for k := 1; k <= m.cfg.PodsPerRS; k++ {
					if m.GCSees(s, Pod(d, v, k)) {
						return false
					}
				}
			}
			if s.DepState[d] == Deleting && t.DepState[d] == Gone && s.RSState[d][v] != Absent {
				return false
			}
		}
	}
	return true
}

// ---- SCHED ----

func schedBindOnce(m *Model, s, t *State) bool {
	for _, p := range m.pods {
		if s.PodNode[p] != 0 && t.PodState[p] != Absent && t.PodNode[p] != s.PodNode[p] {
			return false
		}
	}
	return true
}

func schedNodeCapacity(m *Model, s *State) bool {
	for n := 1; n <= m.cfg.NumNodes; n++ {
		if m.BoundPods(s, n) > m.cfg.Capacity {
			return false
		}
	}
	return true
}

func schedNodeSelectorMatches(m *Model, s *State) bool {
	for _, p := range m.pods {
		if s.PodState[p] != Absent && s.PodNode[p] != 0 && !m.MatchesNode(p, int(s.PodNode[p])) {
			return false
		}
	}
	return true
}

func schedBindRegistered(m *Model, s, t *State) bool {
	for _, p := range m.pods {
		if s.PodNode[p] != t.PodNode[p] && t.PodNode[p] != 0 && s.NodeState[t.PodNode[p]] != Live {
			return false
		}
	}
	return true
}

func schedBindUntainted(m *Model, s, t *State) bool {
	for _, p := range m.pods {
		if s.PodNode[p] != t.PodNode[p] && t.PodNode[p] != 0 && s.NodeTainted[t.PodNode[p]] {
			return false
		}
	}
	return true
}

// ---- KUBELET ----

func kubeletRunsOnlyBoundPods(m *Model, s *State) bool {
	for _, p := range m.pods {
		if s.Sandboxes[p] > 0 && s.SandboxNode[p] != s.PodNode[p] {
			return false
		}
	}
	return true
}

func kubeletOneSandbox(m *Model, s *State) bool {
	for _, p := range m.pods {
		if s.Sandboxes[p] > 1 {
			return false
		}
	}
	return true
}

func kubeletUniqueIPs(m *Model, s *State) bool {
	for i, p := range m.pods {
		for _, q := range m.pods[i+1:] {
			if s.Sandboxes[p] > 0 && s.Sandboxes[q] > 0 && s.SandboxNode[p] == s.SandboxNode[q] && s.SandboxIP[p] == s.SandboxIP[q] {
				return false
			}
		}
	}
	return true
}

func kubeletIPReleased(m *Model, s *State) bool {
	for _, p := range m.pods {
		if s.Sandboxes[p] == 0 && (s.SandboxIP[p] != 0 || s.SandboxNode[p] != 0) {
			return false
		}
	}
	return true
}

func kubeletTerminalPhase(m *Model, s, t *State) bool {
	for _, p := range m.pods {
		if Terminal(s.PodPhase[p]) && t.PodState[p] != Absent && t.PodPhase[p] != s.PodPhase[p] {
			return false
		}
	}
	return true
}

func kubeletReadyOnlyRunning(m *Model, s *State) bool {
	for _, p := range m.pods {
		if s.PodReady[p] && s.PodPhase[p] != Running {
			return false
		}
	}
	return true
}

func kubeletSucceedOnlyWithoutAlways(m *Model, s, t *State) bool {
	if m.cfg.RestartPolicy != RestartAlways {
		return true
	}
	for _, p := range m.pods {
		if t.PodPhase[p] == Succeeded && s.PodPhase[p] != Succeeded {
			return false
		}
	}
	return true
}

// kubeletTerminalAfterStop: a step that makes p's phase terminal while the
// kubelet of p's node runs and is reachable (KubeletReady: the step is that
// kubelet's; other writers act only on pods of nodes that are gone or not
// ready, where a dead node's sandbox may linger) leaves p no live sandbox.
func kubeletTerminalAfterStop(m *Model, s, t *State) bool {
	for _, p := range m.pods {
		if n := int(s.PodNode[p]); n != 0 && !Terminal(s.PodPhase[p]) && Terminal(t.PodPhase[p]) &&
			m.kubeletReady(s, n) && t.Sandboxes[p] > 0 {
			return false
		}
	}
	return true
}

// ---- LIVE: the goals of <>[]Goal ----

func liveDeploymentsConverged(m *Model, s *State) bool {
	for d := 1; d <= m.cfg.NumDeployments; d++ {
		if s.DepState[d] != Live {
			continue
		}
		cur := int(s.DepVersion[d])
		r := int(s.DepReplicas[d])
		if !s.DepObserved[d] || s.RSState[d][cur] != Live || int(s.RSReplicas[d][cur]) != r ||
			m.ActivePods(s, d, cur) != r || m.AvailablePodsNow(s, d, cur) != r {
			return false
		}
		for v := 1; v <= m.cfg.NumVersions; v++ {
			if v != cur && (s.RSReplicas[d][v] != 0 || m.ActivePods(s, d, v) != 0) {
				return false
			}
		}
	}
	return true
}

func liveNoOrphans(m *Model, s *State) bool {
	for _, p := range m.pods {
		if s.PodState[p] != Absent && OwnersGone(s, p) {
			return false
		}
	}
	for d := 1; d <= m.cfg.NumDeployments; d++ {
		if s.DepState[d] == Deleting {
			return false
		}
		for v := 1; v <= m.cfg.NumVersions; v++ {
			if s.RSState[d][v] != Absent && s.DepState[d] != Live {
				return false
			}
		}
	}
	return true
}

func liveNoLeakedSandboxes(m *Model, s *State) bool {
	for _, p := range m.pods {
		if s.Sandboxes[p] > 0 && (s.PodState[p] != Live || Terminal(s.PodPhase[p]) || s.PodNode[p] != s.SandboxNode[p]) {
			return false
		}
	}
	return true
}

func liveNoPodsOnDeletedNodes(m *Model, s *State) bool {
	for _, p := range m.pods {
		if s.PodState[p] != Absent && s.PodNode[p] != 0 && s.NodeState[s.PodNode[p]] == Gone {
			return false
		}
	}
	return true
}

// ViolatedInvariants returns the IDs of the invariants s breaks (all of
// them, whatever a configuration lists).
func (m *Model) ViolatedInvariants(s *State) []string {
	var ids []string
	for _, p := range Properties {
		if p.Invariant != nil && !p.Invariant(m, s) {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// ViolatedStepProperties returns the IDs of the step properties the step
// s -> t breaks.
func (m *Model) ViolatedStepProperties(s, t *State) []string {
	var ids []string
	for _, p := range Properties {
		if p.Step != nil && !p.Step(m, s, t) {
			ids = append(ids, p.ID)
		}
	}
	return ids
}

// UnmetGoals returns the IDs of the liveness goals s does not meet (a
// converged, fault-free cluster meets them all).
func (m *Model) UnmetGoals(s *State) []string {
	var ids []string
	for _, p := range Properties {
		if p.Goal != nil && !p.Goal(m, s) {
			ids = append(ids, p.ID)
		}
	}
	return ids
}
