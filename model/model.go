package model

import "fmt"

// Model is the specification instantiated with one bounded configuration
// and, optionally, one deliberately broken action variant (a mutant, see
// Mutants). It is immutable and safe for concurrent use.
type Model struct {
	cfg    Config
	mutant string
	pods   []int                 // the pod indices in use, in TLA+ order of <<d, v, k>>
	perms  [][MaxNodes + 1]uint8 // node permutations that keep node labels (symmetry)
}

// New returns the model of configuration cfg. mutant is "" for the
// specification itself, or a name from Mutants.
func New(cfg Config, mutant string) (*Model, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if mutant != "" {
		if _, ok := mutantByName[mutant]; !ok {
			return nil, fmt.Errorf("unknown mutant %q", mutant)
		}
	}
	m := &Model{cfg: cfg, mutant: mutant}
	for d := 1; d <= cfg.NumDeployments; d++ {
		for v := 1; v <= cfg.NumVersions; v++ {
			for k := 1; k <= cfg.PodsPerRS; k++ {
				m.pods = append(m.pods, Pod(d, v, k))
			}
		}
	}
	for _, perm := range nodePerms[cfg.NumNodes] {
		keeps := true
		for n := 1; n <= cfg.NumNodes; n++ {
			keeps = keeps && m.NodeLabeled(n) == m.NodeLabeled(int(perm[n]))
		}
		if keeps {
			m.perms = append(m.perms, perm)
		}
	}
	return m, nil
}

// Config returns the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// Mutant returns the name of the broken variant the model runs, or "".
func (m *Model) Mutant() string { return m.mutant }

// Pods returns the pod indices in use.
func (m *Model) Pods() []int { return m.pods }

// Init returns the initial states (the specification has exactly one):
// no objects but the nodes that have registered (all but the last
// JoiningNodes), every component and registered node up, every watch
// established.
func (m *Model) Init() []State {
	var s State
	for c := 1; c <= NumControllers; c++ {
		s.Up[c] = true
		s.WatchOK[c] = true
	}
	for n := 1; n <= m.cfg.NumNodes-m.cfg.JoiningNodes; n++ {
		s.NodeState[n] = Live
		s.KubeletUp[n] = true
		s.NodeUp[n] = true
	}
	return []State{s}
}

// NodeLabeled reports whether node n carries the label deployments'
// nodeSelectors ask for (nodes 1..LabeledNodes).
func (m *Model) NodeLabeled(n int) bool { return n <= m.cfg.LabeledNodes }

// Selects reports whether deployment d's pod template has a nodeSelector
// (deployments 1..SelectorDeployments).
func (m *Model) Selects(d int) bool { return d <= m.cfg.SelectorDeployments }

// MatchesNode reports whether pod p's nodeSelector matches node n's labels.
func (m *Model) MatchesNode(p, n int) bool {
	d, _, _ := PodCoords(p)
	return !m.Selects(d) || m.NodeLabeled(n)
}

// ---- Derived quantities (the TLA+ module defines the same operators) ----

// ProjRS is what the ReplicaSet controller's informer would show for pod p now.
func ProjRS(s *State, p int) uint8 {
	switch {
	case s.PodState[p] == Absent:
		return ViewAbsent
	case s.PodState[p] == Deleting || Terminal(s.PodPhase[p]):
		return ViewInactive
	default:
		return ViewActive
	}
}

// ProjSched is what the scheduler's informer would show for pod p now:
// terminal and absent pods are not cached; terminating pods still are.
func ProjSched(s *State, p int) uint8 {
	if s.PodState[p] == Absent || Terminal(s.PodPhase[p]) {
		return SchedNotCached
	}
	return SchedUnbound + s.PodNode[p]
}

// ProjKubelet is what the kubelet of pod p's node would see of p now: p
// bound there, live or terminating; nothing for an absent or unbound pod.
func ProjKubelet(s *State, p int) uint8 {
	if s.PodState[p] == Absent || s.PodNode[p] == 0 {
		return KubeletSeenNothing
	}
	return KubeletSeen(int(s.PodNode[p]), s.PodState[p])
}

// KubeletSees is the kubelet's view of pod p: its lagging view with
// KubeletLag = 1, the current pod otherwise.
func (m *Model) KubeletSees(s *State, p int) uint8 {
	if m.cfg.KubeletLag == 1 {
		return s.KubeletView[p]
	}
	return ProjKubelet(s, p)
}

// ActiveView reports whether a cached view counts as an active pod.
func ActiveView(view uint8) bool { return view == ViewActive }

// ActivePods counts the pods of ReplicaSet (d, v) that are live and not
// terminal (Failed or Succeeded).
func (m *Model) ActivePods(s *State, d, v int) int {
	n := 0
	for k := 1; k <= m.cfg.PodsPerRS; k++ {
		p := Pod(d, v, k)
		if s.PodState[p] == Live && !Terminal(s.PodPhase[p]) {
			n++
		}
	}
	return n
}

// AvailablePods is the number of available pods of ReplicaSet (d, v) the
// deployment controller acts on, and DEP-2 is stated over: with
// DeploymentLag = 1 the ReplicaSet's status.availableReplicas as the
// controller last saw it (DCAvailable), otherwise the pods as they are.
func (m *Model) AvailablePods(s *State, d, v int) int {
	if m.cfg.DeploymentLag == 1 {
		return int(s.DCAvailable[d][v])
	}
	return m.AvailablePodsNow(s, d, v)
}

// AvailablePodsNow counts the pods of ReplicaSet (d, v) that are live,
// Running and Ready now (minReadySeconds is 0; LIVE-1).
func (m *Model) AvailablePodsNow(s *State, d, v int) int {
	n := 0
	for k := 1; k <= m.cfg.PodsPerRS; k++ {
		p := Pod(d, v, k)
		if s.PodState[p] != Live {
			continue
		}
		ready := s.PodPhase[p] == Running && (s.PodReady[p] || m.mutant == MutantDeploymentIgnoresReadyCondition)
		if ready || (m.mutant == MutantDeploymentCountsUnreadyAsAvailable && s.PodPhase[p] == Pending) {
			n++
		}
	}
	return n
}

// NLCSeesTainted is whether the node lifecycle controller's taint-based
// eviction sees node n tainted: its lagging view with NodeLifecycleLag = 1,
// the Node object otherwise.
func (m *Model) NLCSeesTainted(s *State, n int) bool {
	if m.cfg.NodeLifecycleLag == 1 {
		return s.NLCTainted[n]
	}
	return s.NodeTainted[n]
}

// AvailableTotal counts the available pods of deployment d over all versions.
func (m *Model) AvailableTotal(s *State, d int) int {
	n := 0
	for v := 1; v <= m.cfg.NumVersions; v++ {
		n += m.AvailablePods(s, d, v)
	}
	return n
}

// TotalReplicas is the sum of spec.replicas over deployment d's live ReplicaSets.
func (m *Model) TotalReplicas(s *State, d int) int {
	n := 0
	for v := 1; v <= m.cfg.NumVersions; v++ {
		if s.RSState[d][v] == Live {
			n += int(s.RSReplicas[d][v])
		}
	}
	return n
}

// Believed is how many pods the ReplicaSet controller believes ReplicaSet
// (d, v) has: active pods in its cache not expected to be deleted, plus pods
// it created and has not yet observed (expectations).
func (m *Model) Believed(s *State, d, v int) int {
	n := 0
	for k := 1; k <= m.cfg.PodsPerRS; k++ {
		p := Pod(d, v, k)
		if m.mutant == MutantReplicaSetIgnoresExpectations {
			if ActiveView(s.RSCView[p]) {
				n++
			}
			continue
		}
		if (ActiveView(s.RSCView[p]) && s.RSCExpect[p] != ExpectDelete) || s.RSCExpect[p] == ExpectAdd {
			n++
		}
	}
	return n
}

// OwnersGone reports whether pod p has controller owners and every one of
// them is absent or being deleted in the foreground.
func OwnersGone(s *State, p int) bool {
	d, _, _ := PodCoords(p)
	if s.PodOwners[p] == 0 {
		return false
	}
	for v := 1; v <= MaxVersions; v++ {
		if s.PodOwners[p]&(1<<v) != 0 && s.RSState[d][v] == Live {
			return false
		}
	}
	return true
}

// SlotFree reports whether pod name slot p is unused everywhere: no object,
// no sandbox, nothing cached, queued or expected. Only free slots are
// reused, so a reused name never meets leftovers of its previous pod.
func SlotFree(s *State, p int) bool {
	if !(s.PodState[p] == Absent && s.Sandboxes[p] == 0 && s.SandboxNode[p] == 0 && s.SandboxIP[p] == 0 &&
		!s.KubeletKnows[p] && s.RSCView[p] == ViewAbsent && s.RSCExpect[p] == ExpectNone &&
		s.SchedView[p] == SchedNotCached && s.SchedAssumed[p] == 0 && s.KubeletView[p] == KubeletSeenNothing && !s.GCGraph[p]) {
		return false
	}
	for c := 1; c <= NumControllers; c++ {
		for _, e := range s.Pending[c] {
			if int(e.Pod) == p+1 {
				return false
			}
		}
	}
	return true
}

// SchedulerCount is the number of pods the scheduler counts on node n: pods
// its cache shows bound there plus pods it assumed there and has not yet
// seen bound.
func (m *Model) SchedulerCount(s *State, n int) int {
	c := 0
	for _, p := range m.pods {
		if s.SchedView[p] == SchedUnbound+uint8(n) {
			c++
		} else if s.SchedAssumed[p] == uint8(n) && m.mutant != MutantSchedulerIgnoresAssumedPods {
			c++
		}
	}
	return c
}

// Admitted is the number of non-terminal pods with a sandbox on node n (what
// kubelet admission counts).
func (m *Model) Admitted(s *State, n int) int {
	c := 0
	for _, p := range m.pods {
		if s.Sandboxes[p] > 0 && s.SandboxNode[p] == uint8(n) && s.PodState[p] != Absent && !Terminal(s.PodPhase[p]) {
			c++
		}
	}
	return c
}

// FreeIP is the lowest IP of node n's pool that no sandbox on n holds, or 0.
func (m *Model) FreeIP(s *State, n int) uint8 {
	var used uint16
	for _, p := range m.pods {
		if s.SandboxNode[p] == uint8(n) && s.SandboxIP[p] != 0 {
			used |= 1 << s.SandboxIP[p]
		}
	}
	for ip := 1; ip <= m.cfg.IPsPerNode; ip++ {
		if used&(1<<ip) == 0 {
			return uint8(ip)
		}
	}
	return 0
}

// BoundPods counts the non-terminal pods bound to node n (SCHED-2).
func (m *Model) BoundPods(s *State, n int) int {
	c := 0
	for _, p := range m.pods {
		if s.PodState[p] != Absent && s.PodNode[p] == uint8(n) && !Terminal(s.PodPhase[p]) {
			c++
		}
	}
	return c
}

// removePod removes pod p's object from the store (its fields return to
// their defaults).
func removePod(t *State, p int) {
	t.PodState[p] = Absent
	t.PodNode[p] = 0
	t.PodPhase[p] = Pending
	t.PodOwners[p] = 0
	t.PodReady[p] = false
}

// deletePod is a graceful delete: an unscheduled pod is removed at once, a
// scheduled one becomes Deleting until its kubelet has stopped it.
func deletePod(t *State, p int) {
	if t.PodNode[p] == 0 {
		removePod(t, p)
	} else {
		t.PodState[p] = Deleting
	}
}
