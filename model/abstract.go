package model

import (
	"fmt"
	"slices"
)

// Snapshot is the abstract state of a concrete cluster, as an
// implementation harness fills it from API objects and runtime state: what
// the store holds and what the node runtimes run. Numbers are the model's
// (deployments, versions, nodes and IPs from 1); the harness maps its names
// to them. Component memory (caches, expectations, assumed pods) is not
// observable and is not part of a snapshot.
type Snapshot struct {
	Deployments []DeploymentSnapshot
	ReplicaSets []ReplicaSetSnapshot
	Pods        []PodSnapshot
	Nodes       []NodeSnapshot
}

// DeploymentSnapshot is one deployment object.
type DeploymentSnapshot struct {
	Number   int   // 1..NumDeployments
	State    uint8 // Live, Deleting (foreground) or Gone (deleted)
	Replicas int   // spec.replicas
	Version  int   // pod template version, 1..NumVersions
	Observed bool  // status.observedGeneration == metadata.generation
}

// ReplicaSetSnapshot is one ReplicaSet object of a deployment.
type ReplicaSetSnapshot struct {
	Deployment, Version int
	Deleting            bool // deletionTimestamp set (foreground deletion)
	Replicas            int
}

// PodSnapshot is one pod object (or a pod whose object is gone but whose
// sandbox still runs: Absent).
type PodSnapshot struct {
	Deployment, Version int   // of the ReplicaSet whose pod-template-hash the pod carries
	State               uint8 // Live, Deleting, or Absent (object gone, sandbox left)
	Node                int   // spec.nodeName as a node number, 0 = unbound
	Phase               uint8 // Pending, Running, Failed, Succeeded
	NotReady            bool  // Running but its Ready condition is false (the zero value: Running means Ready)
	OwnerVersions       []int // versions of its controller owner ReplicaSets
	Sandboxes           int   // live sandboxes the node runtime holds for it
	SandboxNode         int   // where they run, 0 = none
	SandboxIP           int   // their IP's index in the node's pool, 0 = none
}

// NodeSnapshot is one node.
type NodeSnapshot struct {
	Number    int
	Up        bool // reachable
	KubeletUp bool
	Tainted   bool // NotReady with the NoExecute unreachable taint
	Deleted   bool // the Node object was deleted (nodes listed are otherwise registered)
}

// FromSnapshot maps a snapshot to a model state. Pods of one ReplicaSet take
// its name slots in order (slots are interchangeable: compare states with
// SameObservable). The unobservable parts are set as after a fresh start:
// controllers up with current caches and nothing expected or assumed,
// kubelets knowing their sandboxes, no budget used.
func (m *Model) FromSnapshot(sn Snapshot) (State, error) {
	c := &m.cfg
	s := m.Init()[0]
	for _, d := range sn.Deployments {
		if d.Number < 1 || d.Number > c.NumDeployments || d.Version < 0 || d.Version > c.NumVersions ||
			d.Replicas < 0 || d.Replicas > c.Replicas || d.State > Gone {
			return s, fmt.Errorf("deployment %+v outside configuration %s", d, c.Name)
		}
		s.DepState[d.Number] = d.State
		if d.State != Gone {
			s.DepReplicas[d.Number] = uint8(d.Replicas)
			s.DepVersion[d.Number] = uint8(d.Version)
			s.DepObserved[d.Number] = d.Observed
		}
	}
	for _, r := range sn.ReplicaSets {
		if r.Deployment < 1 || r.Deployment > c.NumDeployments || r.Version < 1 || r.Version > c.NumVersions ||
			r.Replicas < 0 || r.Replicas > c.Replicas {
			return s, fmt.Errorf("replicaset %+v outside configuration %s", r, c.Name)
		}
		s.RSState[r.Deployment][r.Version] = Live
		if r.Deleting {
			s.RSState[r.Deployment][r.Version] = Deleting
		}
		s.RSReplicas[r.Deployment][r.Version] = uint8(r.Replicas)
	}
	var used [MaxDeployments + 1][MaxVersions + 1]int
	for _, p := range sn.Pods {
		if p.Deployment < 1 || p.Deployment > c.NumDeployments || p.Version < 1 || p.Version > c.NumVersions {
			return s, fmt.Errorf("pod %+v outside configuration %s", p, c.Name)
		}
		used[p.Deployment][p.Version]++
		k := used[p.Deployment][p.Version]
		if k > c.PodsPerRS {
			return s, fmt.Errorf("more than PodsPerRS=%d pods of replicaset <<%d, %d>>", c.PodsPerRS, p.Deployment, p.Version)
		}
		if p.Node < 0 || p.Node > c.NumNodes || p.SandboxNode < 0 || p.SandboxNode > c.NumNodes ||
			p.SandboxIP < 0 || p.SandboxIP > c.IPsPerNode || p.Phase > Succeeded || p.State > Deleting || p.Sandboxes < 0 || p.Sandboxes > 2 {
			return s, fmt.Errorf("pod %+v outside configuration %s", p, c.Name)
		}
		i := Pod(p.Deployment, p.Version, k)
		s.PodState[i] = p.State
		if p.State != Absent {
			s.PodNode[i] = uint8(p.Node)
			s.PodPhase[i] = p.Phase
			s.PodReady[i] = p.Phase == Running && !p.NotReady
			for _, v := range p.OwnerVersions {
				if v < 1 || v > c.NumVersions {
					return s, fmt.Errorf("pod %+v: owner version %d outside configuration", p, v)
				}
				s.PodOwners[i] |= 1 << v
			}
		}
		s.Sandboxes[i] = uint8(p.Sandboxes)
		s.SandboxNode[i] = uint8(p.SandboxNode)
		s.SandboxIP[i] = uint8(p.SandboxIP)
	}
	for _, n := range sn.Nodes {
		if n.Number < 1 || n.Number > c.NumNodes {
			return s, fmt.Errorf("node %d outside configuration %s", n.Number, c.Name)
		}
		s.NodeState[n.Number] = Live
		s.NodeUp[n.Number] = n.Up
		s.KubeletUp[n.Number] = n.KubeletUp
		s.NodeTainted[n.Number] = n.Tainted
		if n.Deleted {
			s.NodeState[n.Number] = Gone
			s.NodeUp[n.Number], s.KubeletUp[n.Number], s.NodeTainted[n.Number] = false, false, false
		}
	}
	for _, p := range m.pods {
		s.KubeletKnows[p] = s.Sandboxes[p] > 0 && s.KubeletUp[s.SandboxNode[p]]
	}
	m.kubeletViewsCurrent(&s)
	m.deliver(&s)
	return s, nil
}

// Observable is s without what a snapshot cannot see: component memory
// (caches, queues), the revision counter (a harness's resourceVersions are
// not the model's) and budgets are reset as FromSnapshot sets them.
func (m *Model) Observable(s *State) State {
	o := *s
	o.Crashes, o.WatchDrops, o.NodeFailures, o.Evictions, o.Scales, o.Deletes = 0, 0, 0, 0, 0, 0
	o.NodeDeletes, o.ProbeFailures, o.Completions = 0, 0, 0
	o.Revision = 0
	for c := 1; c <= NumControllers; c++ {
		o.Up[c], o.WatchOK[c] = true, true
	}
	for _, p := range m.pods {
		o.KubeletKnows[p] = o.Sandboxes[p] > 0 && o.KubeletUp[o.SandboxNode[p]]
	}
	m.kubeletViewsCurrent(&o)
	m.syncCache(&o, ReplicaSetController)
	m.syncCache(&o, Scheduler)
	return m.sortSlots(o)
}

// SameObservable reports whether a and b agree on everything a snapshot
// shows, up to the naming of pods within a ReplicaSet and of IPs within a
// node's pool (node numbers must agree).
func (m *Model) SameObservable(a, b *State) bool {
	return m.Observable(a) == m.Observable(b)
}

// kubeletViewsCurrent sets the lagging views (KubeletLag, DeploymentLag,
// NodeLifecycleLag) to the objects as they are, as after a fresh start.
func (m *Model) kubeletViewsCurrent(s *State) {
	for d := 1; d <= m.cfg.NumDeployments; d++ {
		s.DCDeployment[d] = DeploymentView{}
		if m.cfg.DeploymentLag == 1 {
			s.DCDeployment[d] = DeploymentNow(s, d)
		}
		for v := 1; v <= m.cfg.NumVersions; v++ {
			s.DCAvailable[d][v] = 0
			if m.cfg.DeploymentLag == 1 {
				s.DCAvailable[d][v] = uint8(m.AvailablePodsNow(s, d, v))
			}
		}
	}
	for n := 1; n <= m.cfg.NumNodes; n++ {
		s.NLCTainted[n] = m.cfg.NodeLifecycleLag == 1 && s.NodeTainted[n]
	}
	for _, p := range m.pods {
		s.GCGraph[p] = m.cfg.GCLag == 1 && s.PodState[p] != Absent
	}
	if m.cfg.KubeletLag == 0 {
		return
	}
	for _, p := range m.pods {
		s.KubeletView[p] = KubeletSeenNothing
		if n := s.PodNode[p]; n != 0 && s.KubeletUp[n] {
			s.KubeletView[p] = ProjKubelet(s, p)
		}
	}
}

// StaleDeploymentViews returns s followed by the states that differ from it
// only in the deployment controller's view of its deployments
// (DeploymentLag = 1): each view is the deployment as s holds it or as one
// of the earlier states held it, in every combination (duplicates
// dropped). A snapshot cannot show that view, and the controller may still
// act on any earlier version of a deployment (its informer lags), so a
// trace validator searches from all of these rather than from s alone (see
// checker.CanReachAny). With DeploymentLag = 0 it returns just s.
func (m *Model) StaleDeploymentViews(s State, earlier []State) []State {
	out := []State{s}
	if m.cfg.DeploymentLag == 0 {
		return out
	}
	for d := 1; d <= m.cfg.NumDeployments; d++ {
		views := []DeploymentView{DeploymentNow(&s, d)}
		for i := range earlier {
			if v := DeploymentNow(&earlier[i], d); !slices.Contains(views, v) {
				views = append(views, v)
			}
		}
		n := len(out)
		for _, v := range views[1:] {
			for i := 0; i < n; i++ {
				t := out[i]
				t.DCDeployment[d] = v
				out = append(out, t)
			}
		}
	}
	return out
}
