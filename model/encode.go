package model

import (
	"bytes"
	"slices"
)

// Encode appends the canonical binary encoding of s to buf: exactly the
// variables of the specification over the configuration's index sets, one
// byte per value. Two states are equal iff their encodings are.
func (m *Model) Encode(s *State, buf []byte) []byte {
	c := &m.cfg
	for d := 1; d <= c.NumDeployments; d++ {
		buf = append(buf, s.DepState[d], s.DepReplicas[d], s.DepVersion[d], b2u(s.DepObserved[d]))
		if c.DeploymentLag == 1 {
			dv := s.DCDeployment[d]
			buf = append(buf, dv.State, dv.Replicas, dv.Version)
		}
		for v := 1; v <= c.NumVersions; v++ {
			buf = append(buf, s.RSState[d][v], s.RSReplicas[d][v], s.DCAvailable[d][v])
		}
	}
	for _, p := range m.pods {
		buf = appendPod(buf, s, p)
	}
	for n := 1; n <= c.NumNodes; n++ {
		buf = append(buf, b2u(s.NodeTainted[n]), b2u(s.KubeletUp[n]), b2u(s.NodeUp[n]), b2u(s.NLCTainted[n]))
		if m.nodesChange() {
			buf = append(buf, s.NodeState[n])
		}
	}
	for ctl := 1; ctl <= NumControllers; ctl++ {
		buf = append(buf, b2u(s.Up[ctl]), b2u(s.WatchOK[ctl]))
		if c.TrackRevisions == 1 {
			buf = append(buf, s.CacheRev[ctl])
		}
		for i := 0; i < c.MaxLag; i++ {
			e := s.Pending[ctl][i]
			buf = append(buf, e.Pod, e.View)
			if c.TrackRevisions == 1 {
				buf = append(buf, e.Rev)
			}
		}
	}
	if c.TrackRevisions == 1 {
		buf = append(buf, s.Revision)
	}
	buf = append(buf, s.Crashes, s.WatchDrops, s.NodeFailures, s.Evictions, s.Scales, s.Deletes)
	if c.MaxNodeDeletes > 0 {
		buf = append(buf, s.NodeDeletes)
	}
	if c.MaxProbeFailures > 0 {
		buf = append(buf, s.ProbeFailures)
	}
	if c.MaxCompletions > 0 {
		buf = append(buf, s.Completions)
	}
	return buf
}

// nodesChange reports whether nodes join or leave in this configuration
// (otherwise every node is Live throughout and nodeState is not encoded).
func (m *Model) nodesChange() bool { return m.cfg.JoiningNodes > 0 || m.cfg.MaxNodeDeletes > 0 }

// podRecordLen is the length of appendPod's record.
const podRecordLen = 14

func appendPod(buf []byte, s *State, p int) []byte {
	return append(buf, s.PodState[p], s.PodNode[p], s.PodPhase[p], s.PodOwners[p],
		s.Sandboxes[p], s.SandboxNode[p], s.SandboxIP[p], b2u(s.KubeletKnows[p])|b2u(s.GCGraph[p])<<1,
		s.RSCView[p], s.RSCExpect[p], s.SchedView[p], s.SchedAssumed[p], b2u(s.PodReady[p]), s.KubeletView[p])
}

// appendPodKey is pod p's record followed by where it appears in the
// informer queues: what slot sorting compares.
func appendPodKey(buf []byte, s *State, p int) []byte {
	buf = appendPod(buf, s, p)
	for c := 1; c <= NumControllers; c++ {
		for _, e := range s.Pending[c] {
			buf = append(buf, b2u(int(e.Pod) == p+1))
		}
	}
	return buf
}

func b2u(b bool) uint8 {
	if b {
		return 1
	}
	return 0
}

// Symmetry reduction.
//
// Three kinds of values are interchangeable in the specification:
//   - nodes: every node has the same capacity and IP pool, and no action
//     prefers one node to another (the scheduler may pick any node that
//     fits; IPs are allocated per node);
//   - pod name slots within one ReplicaSet: a pod's slot is its generated
//     name, and nothing distinguishes names. The only action that picks a
//     slot, ReplicaSetCreatePod, takes the lowest free one — but free slots
//     are identical in every variable (SlotFree), so the states it can reach
//     from permuted states are permutations of each other;
//   - the IPs of one node's pool: KubeletStartPod takes the lowest free IP,
//     and free IPs are indistinguishable, by the same argument.
//
// Node labels (LabeledNodes) are fixed by node number, so only
// permutations that map labelled nodes to labelled nodes are used. Queued
// watch events name pods and (the scheduler's) nodes; permutations rename
// them with everything else.
//
// Permuting nodes, slots or IPs therefore maps behaviours to behaviours and
// preserves every property (they quantify over all nodes, pods and IPs),
// which is what makes checking one representative per orbit sound.
// Canonical picks the representative exactly: for every node permutation it
// sorts the slots of each ReplicaSet ignoring IPs, renumbers each node's IPs
// in the order the sorted pods hold them, and keeps the smallest encoding.
// (Mutants run without symmetry: a broken action may break the symmetry.)

// Canonical returns the representative of s's orbit and its encoding
// (appended to buf[:0]).
func (m *Model) Canonical(s *State, buf []byte) (State, []byte) {
	if m.cfg.TrackRevisions == 1 {
		r := compressRevisions(*s)
		s = &r
	}
	best := m.sortSlots(*s)
	buf = m.Encode(&best, buf[:0])
	perms := m.perms
	if len(perms) <= 1 {
		return best, buf
	}
	var scratch [512]byte
	for _, perm := range perms[1:] {
		cand := m.sortSlots(m.permuteNodes(s, perm))
		enc := m.Encode(&cand, scratch[:0])
		if bytes.Compare(enc, buf) < 0 {
			best = cand
			buf = append(buf[:0], enc...)
		}
	}
	return best, buf
}

// compressRevisions renames the revision values s holds (the store's
// revision, the revisions running caches reflect, the revisions of queued
// events) to 0, 1, 2, ... in their order. No guard reads a revision's
// value, only how revisions compare (STORE-1: the next write takes the
// revision after the current one, queued events are newer than the cache),
// so states equal up to such a renaming have the same behaviours up to it:
// the reduction is sound the way symmetry is, and it keeps the counter from
// multiplying the state space by the number of writes so far.
func compressRevisions(s State) State {
	var vals []uint8
	vals = append(vals, s.Revision)
	for c := 1; c <= NumControllers; c++ {
		if s.Up[c] {
			vals = append(vals, s.CacheRev[c])
		}
		for _, e := range s.Pending[c] {
			if e.Pod != 0 {
				vals = append(vals, e.Rev)
			}
		}
	}
	slices.Sort(vals)
	vals = slices.Compact(vals)
	rank := func(v uint8) uint8 { i, _ := slices.BinarySearch(vals, v); return uint8(i) }
	s.Revision = rank(s.Revision)
	for c := 1; c <= NumControllers; c++ {
		if s.Up[c] {
			s.CacheRev[c] = rank(s.CacheRev[c])
		}
		for i, e := range s.Pending[c] {
			if e.Pod != 0 {
				s.Pending[c][i].Rev = rank(e.Rev)
			}
		}
	}
	return s
}

// CanonicalSlots returns s with the slots of each ReplicaSet sorted and the
// nodes left alone (for comparing states whose node names matter).
func (m *Model) CanonicalSlots(s *State) State { return m.sortSlots(*s) }

var nodePerms = [MaxNodes + 1][][MaxNodes + 1]uint8{
	1: {{0, 1}},
	2: {{0, 1, 2}, {0, 2, 1}},
	3: {{0, 1, 2, 3}, {0, 1, 3, 2}, {0, 2, 1, 3}, {0, 2, 3, 1}, {0, 3, 1, 2}, {0, 3, 2, 1}},
}

// permuteNodes renames node n to perm[n] everywhere.
func (m *Model) permuteNodes(s *State, perm [MaxNodes + 1]uint8) State {
	t := *s
	for n := 1; n <= m.cfg.NumNodes; n++ {
		t.NodeTainted[perm[n]] = s.NodeTainted[n]
		t.NLCTainted[perm[n]] = s.NLCTainted[n]
		t.KubeletUp[perm[n]] = s.KubeletUp[n]
		t.NodeUp[perm[n]] = s.NodeUp[n]
		t.NodeState[perm[n]] = s.NodeState[n]
	}
	if m.cfg.MaxLag > 0 {
		for i, e := range s.Pending[Scheduler] {
			if e.Pod != 0 && e.View > SchedUnbound {
				t.Pending[Scheduler][i].View = SchedUnbound + perm[e.View-SchedUnbound]
			}
		}
	}
	for _, p := range m.pods {
		t.PodNode[p] = perm[s.PodNode[p]]
		t.SandboxNode[p] = perm[s.SandboxNode[p]]
		t.SchedAssumed[p] = perm[s.SchedAssumed[p]]
		if v := s.KubeletView[p]; v != KubeletSeenNothing {
			t.KubeletView[p] = KubeletSeen(int(perm[KubeletSeenNode(v)]), KubeletSeenState(v))
		}
		if s.SchedView[p] > SchedUnbound {
			t.SchedView[p] = SchedUnbound + perm[s.SchedView[p]-SchedUnbound]
		}
	}
	return t
}

// sortSlots sorts the pod slots of every ReplicaSet by their records with
// IPs left out, renumbers IPs per node in order of use, and sorts again so
// that pods equal but for their IP come in IP order.
func (m *Model) sortSlots(s State) State {
	m.sortSlotsBy(&s, true)
	var next [MaxNodes + 1]uint8
	var rename [MaxNodes + 1][MaxIPs + 1]uint8
	for _, p := range m.pods {
		n, ip := s.SandboxNode[p], s.SandboxIP[p]
		if ip == 0 {
			continue
		}
		if rename[n][ip] == 0 {
			next[n]++
			rename[n][ip] = next[n]
		}
		s.SandboxIP[p] = rename[n][ip]
	}
	m.sortSlotsBy(&s, false)
	return s
}

func (m *Model) sortSlotsBy(s *State, maskIP bool) {
	K := m.cfg.PodsPerRS
	for d := 1; d <= m.cfg.NumDeployments; d++ {
		for v := 1; v <= m.cfg.NumVersions; v++ {
			base := Pod(d, v, 1)
			for i := 1; i < K; i++ { // insertion sort: K <= 4
				for j := i; j > 0 && podLess(s, base+j, base+j-1, maskIP); j-- {
					swapPods(s, base+j, base+j-1)
				}
			}
		}
	}
}

func podLess(s *State, p, q int, maskIP bool) bool {
	var a, b [podRecordLen + 2*MaxLagLimit]byte
	x, y := appendPodKey(a[:0], s, p), appendPodKey(b[:0], s, q)
	if maskIP {
		x[6], y[6] = 0, 0 // SandboxIP
	}
	return bytes.Compare(x, y) < 0
}

func swapPods(s *State, p, q int) {
	s.PodState[p], s.PodState[q] = s.PodState[q], s.PodState[p]
	s.PodNode[p], s.PodNode[q] = s.PodNode[q], s.PodNode[p]
	s.PodPhase[p], s.PodPhase[q] = s.PodPhase[q], s.PodPhase[p]
	s.PodOwners[p], s.PodOwners[q] = s.PodOwners[q], s.PodOwners[p]
	s.Sandboxes[p], s.Sandboxes[q] = s.Sandboxes[q], s.Sandboxes[p]
	s.SandboxNode[p], s.SandboxNode[q] = s.SandboxNode[q], s.SandboxNode[p]
	s.SandboxIP[p], s.SandboxIP[q] = s.SandboxIP[q], s.SandboxIP[p]
	s.KubeletKnows[p], s.KubeletKnows[q] = s.KubeletKnows[q], s.KubeletKnows[p]
	s.GCGraph[p], s.GCGraph[q] = s.GCGraph[q], s.GCGraph[p]
	s.RSCView[p], s.RSCView[q] = s.RSCView[q], s.RSCView[p]
	s.RSCExpect[p], s.RSCExpect[q] = s.RSCExpect[q], s.RSCExpect[p]
	s.SchedView[p], s.SchedView[q] = s.SchedView[q], s.SchedView[p]
	s.SchedAssumed[p], s.SchedAssumed[q] = s.SchedAssumed[q], s.SchedAssumed[p]
	s.PodReady[p], s.PodReady[q] = s.PodReady[q], s.PodReady[p]
	s.KubeletView[p], s.KubeletView[q] = s.KubeletView[q], s.KubeletView[p]
	for c := 1; c <= NumControllers; c++ {
		for i, e := range s.Pending[c] {
			switch int(e.Pod) {
			case p + 1:
				s.Pending[c][i].Pod = uint8(q + 1)
			case q + 1:
				s.Pending[c][i].Pod = uint8(p + 1)
			}
		}
	}
}

// Decode is the inverse of Encode: it reads the state s was encoded from
// (the encoding has a fixed length for a configuration, EncodedSize).
func (m *Model) Decode(b []byte) State {
	c := &m.cfg
	var s State
	i := 0
	next := func() uint8 { i++; return b[i-1] }
	for d := 1; d <= c.NumDeployments; d++ {
		s.DepState[d], s.DepReplicas[d], s.DepVersion[d], s.DepObserved[d] = next(), next(), next(), next() == 1
		if c.DeploymentLag == 1 {
			dv := &s.DCDeployment[d]
			dv.State, dv.Replicas, dv.Version = next(), next(), next()
		}
		for v := 1; v <= c.NumVersions; v++ {
			s.RSState[d][v], s.RSReplicas[d][v], s.DCAvailable[d][v] = next(), next(), next()
		}
	}
	for _, p := range m.pods {
		s.PodState[p], s.PodNode[p], s.PodPhase[p], s.PodOwners[p] = next(), next(), next(), next()
		s.Sandboxes[p], s.SandboxNode[p], s.SandboxIP[p] = next(), next(), next()
		known := next()
		s.KubeletKnows[p], s.GCGraph[p] = known&1 != 0, known&2 != 0
		s.RSCView[p], s.RSCExpect[p], s.SchedView[p], s.SchedAssumed[p] = next(), next(), next(), next()
		s.PodReady[p] = next() == 1
		s.KubeletView[p] = next()
	}
	for n := 1; n <= c.NumNodes; n++ {
		s.NodeTainted[n], s.KubeletUp[n], s.NodeUp[n], s.NLCTainted[n] = next() == 1, next() == 1, next() == 1, next() == 1
		s.NodeState[n] = Live
		if m.nodesChange() {
			s.NodeState[n] = next()
		}
	}
	for ctl := 1; ctl <= NumControllers; ctl++ {
		s.Up[ctl], s.WatchOK[ctl] = next() == 1, next() == 1
		if c.TrackRevisions == 1 {
			s.CacheRev[ctl] = next()
		}
		for i := 0; i < c.MaxLag; i++ {
			e := &s.Pending[ctl][i]
			e.Pod, e.View = next(), next()
			if c.TrackRevisions == 1 {
				e.Rev = next()
			}
		}
	}
	if c.TrackRevisions == 1 {
		s.Revision = next()
	}
	s.Crashes, s.WatchDrops, s.NodeFailures, s.Evictions, s.Scales, s.Deletes = next(), next(), next(), next(), next(), next()
	if c.MaxNodeDeletes > 0 {
		s.NodeDeletes = next()
	}
	if c.MaxProbeFailures > 0 {
		s.ProbeFailures = next()
	}
	if c.MaxCompletions > 0 {
		s.Completions = next()
	}
	return s
}

// EncodedSize is the length of every encoding of the model's states.
func (m *Model) EncodedSize() int {
	var s State
	return len(m.Encode(&s, nil))
}
