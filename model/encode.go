package model

import "bytes"

// Encode appends the canonical binary encoding of s to buf: exactly the
// variables of the specification over the configuration's index sets, one
// byte per value. Two states are equal iff their encodings are.
func (m *Model) Encode(s *State, buf []byte) []byte {
	c := &m.cfg
	for d := 1; d <= c.NumDeployments; d++ {
		buf = append(buf, s.DepState[d], s.DepReplicas[d], s.DepVersion[d], b2u(s.DepObserved[d]))
		for v := 1; v <= c.NumVersions; v++ {
			buf = append(buf, s.RSState[d][v], s.RSReplicas[d][v])
		}
	}
	for _, p := range m.pods {
		buf = appendPod(buf, s, p)
	}
	for n := 1; n <= c.NumNodes; n++ {
		buf = append(buf, b2u(s.NodeTainted[n]), b2u(s.KubeletUp[n]), b2u(s.NodeUp[n]))
	}
	for ctl := 1; ctl <= NumControllers; ctl++ {
		buf = append(buf, b2u(s.Up[ctl]), b2u(s.WatchOK[ctl]))
	}
	return append(buf, s.Crashes, s.WatchDrops, s.NodeFailures, s.Evictions, s.Scales, s.Deletes)
}

func appendPod(buf []byte, s *State, p int) []byte {
	return append(buf, s.PodState[p], s.PodNode[p], s.PodPhase[p], s.PodOwners[p],
		s.Sandboxes[p], s.SandboxNode[p], s.SandboxIP[p], b2u(s.KubeletKnows[p]),
		s.RSCView[p], s.RSCExpect[p], s.SchedView[p], s.SchedAssumed[p])
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
	best := m.sortSlots(*s)
	buf = m.Encode(&best, buf[:0])
	perms := nodePerms[m.cfg.NumNodes]
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
		t.KubeletUp[perm[n]] = s.KubeletUp[n]
		t.NodeUp[perm[n]] = s.NodeUp[n]
	}
	for _, p := range m.pods {
		t.PodNode[p] = perm[s.PodNode[p]]
		t.SandboxNode[p] = perm[s.SandboxNode[p]]
		t.SchedAssumed[p] = perm[s.SchedAssumed[p]]
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
	var a, b [12]byte
	x, y := appendPod(a[:0], s, p), appendPod(b[:0], s, q)
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
	s.RSCView[p], s.RSCView[q] = s.RSCView[q], s.RSCView[p]
	s.RSCExpect[p], s.RSCExpect[q] = s.RSCExpect[q], s.RSCExpect[p]
	s.SchedView[p], s.SchedView[q] = s.SchedView[q], s.SchedView[p]
	s.SchedAssumed[p], s.SchedAssumed[q] = s.SchedAssumed[q], s.SchedAssumed[p]
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
		for v := 1; v <= c.NumVersions; v++ {
			s.RSState[d][v], s.RSReplicas[d][v] = next(), next()
		}
	}
	for _, p := range m.pods {
		s.PodState[p], s.PodNode[p], s.PodPhase[p], s.PodOwners[p] = next(), next(), next(), next()
		s.Sandboxes[p], s.SandboxNode[p], s.SandboxIP[p], s.KubeletKnows[p] = next(), next(), next(), next() == 1
		s.RSCView[p], s.RSCExpect[p], s.SchedView[p], s.SchedAssumed[p] = next(), next(), next(), next()
	}
	for n := 1; n <= c.NumNodes; n++ {
		s.NodeTainted[n], s.KubeletUp[n], s.NodeUp[n] = next() == 1, next() == 1, next() == 1
	}
	for ctl := 1; ctl <= NumControllers; ctl++ {
		s.Up[ctl], s.WatchOK[ctl] = next() == 1, next() == 1
	}
	s.Crashes, s.WatchDrops, s.NodeFailures, s.Evictions, s.Scales, s.Deletes = next(), next(), next(), next(), next(), next()
	return s
}

// EncodedSize is the length of every encoding of the model's states.
func (m *Model) EncodedSize() int {
	var s State
	return len(m.Encode(&s, nil))
}
