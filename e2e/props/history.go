package props

import (
	"fmt"
	"sort"
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	v1 "k8s.io/api/core/v1"
	"k8s.io/klog/v2"
)

// History is what a Recorder keeps of every version it received, for the
// step properties that relate objects of several kinds (RS-1, DEP-2,
// SCHED-3 and the taint manager's part of GC-1). Every version carries its
// resourceVersion (the etcd revision of its write, comparable across
// objects) and the time the recorder received it.
//
// Components act on caches that lag behind the store, so a step property
// about "the state the component saw" is checked against every state the
// store held within LagWindow before the step: a component is allowed to
// have seen any of those.
type History struct {
	rs map[string][]rsVersion // ReplicaSet name -> versions, oldest first
	// rsLife is rs by ReplicaSet identity (name and uid): a ReplicaSet
	// deleted and created again under its name (a deployment controller
	// acting on a stale deployment does that) is another ReplicaSet.
	rsLife   map[string][]rsVersion
	rsOwner  map[string]string   // ReplicaSet name -> deployment name
	pods     map[string]*podLife // uid -> life
	deps     map[string]*appsv1.Deployment
	nodes    map[string][]nodeVersion
	dep2     []Candidate // DEP-2 suspects, filtered by the harness
	binds    []bindEvent
	evicted  []bindEvent
	rsStatus map[string]int32  // ReplicaSet name -> status.availableReplicas
	rsImage  map[string]string // ReplicaSet name -> template image
	// window is how stale a component's view may be: LagWindow, or more
	// when the run measured more (SetWindow).
	window time.Duration
}

// LagWindow is the least bound on how stale a component's view may be for
// the step checks that need to know what it could have seen. The harness
// widens it for a run whose measurements ask for more (see
// harness.historyWindow): the longest a watch event took to reach a
// component after it reached the recorder, plus the slowest write of a
// component, plus a second for the component's own decision.
const LagWindow = 6 * time.Second

// historySettle is how long after receiving a change the history waits
// before judging it. The recorder's watches (pods, ReplicaSets,
// deployments, nodes) are separate streams: the scale-up of a ReplicaSet
// or the taint of a node that caused a pod change can arrive a moment
// after the pod change (a campaign once judged an eviction before the
// taint behind it had arrived, and reported GC-1).
const historySettle = 2 * time.Second

type rsVersion struct {
	rv       int64
	at       time.Time
	replicas int32
}

type podLife struct {
	name, rs  string // controller owner at creation
	rsKey     string // its identity (rsKey)
	created   int64
	createdAt time.Time
	inactive  int64 // first revision with deletionTimestamp, terminal phase or deleted; 0 while active
	gone      int64 // first revision with a terminal phase or deleted: it no longer holds its node
	bound     int64 // revision of the binding
	node      string
	tols      []v1.Toleration
}

type nodeVersion struct {
	rv       int64
	at       time.Time
	taints   []v1.Taint
	capacity int64 // allocatable pods; 0 when not reported
}

// bindEvent is a pod seen bound to (or evicted from) a node.
type bindEvent struct {
	pod, node string
	rv        int64
	at        time.Time
	tols      []v1.Toleration
}

// Candidate is a DEP-2 suspect: an old ReplicaSet scaled down while the
// recorder's state says availability drops below replicas-maxUnavailable.
// Whether it is a violation depends on what else happened (the harness
// knows about user scaling and faults that take availability away).
type Candidate struct {
	Deployment string
	At         time.Time
	Detail     string
}

// rsKey is a ReplicaSet's identity: its name and uid.
func rsKey(name, uid string) string { return name + "/" + uid }

func newHistory() *History {
	return &History{rs: map[string][]rsVersion{}, rsLife: map[string][]rsVersion{}, rsOwner: map[string]string{}, pods: map[string]*podLife{},
		deps: map[string]*appsv1.Deployment{}, nodes: map[string][]nodeVersion{}, rsStatus: map[string]int32{}, rsImage: map[string]string{},
		window: LagWindow}
}

func revision(rv string) int64 {
	n, _ := strconv.ParseInt(rv, 10, 64)
	return n
}

func replicasOf(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}

// pod records one received pod version (deleted: its DELETED event).
func (h *History) pod(p *v1.Pod, deleted bool, now time.Time) {
	uid := string(p.UID)
	rv := revision(p.ResourceVersion)
	l := h.pods[uid]
	if l == nil {
		l = &podLife{name: p.Name, created: rv, createdAt: now, tols: p.Spec.Tolerations}
		if owners := ControllerOwners(p.OwnerReferences); len(owners) == 1 && owners[0].Kind == "ReplicaSet" {
			l.rs, l.rsKey = owners[0].Name, rsKey(owners[0].Name, string(owners[0].UID))
		}
		h.pods[uid] = l
	}
	if l.inactive == 0 && (deleted || p.DeletionTimestamp != nil || Terminal(p.Status.Phase)) {
		l.inactive = rv
	}
	if l.gone == 0 && (deleted || Terminal(p.Status.Phase)) {
		l.gone = rv
	}
	if l.node == "" && p.Spec.NodeName != "" {
		l.node, l.bound = p.Spec.NodeName, rv
		h.binds = append(h.binds, bindEvent{pod: p.Name, node: p.Spec.NodeName, rv: rv, at: now, tols: p.Spec.Tolerations})
	}
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Reason == "DeletionByTaintManager" && !h.wasEvicted(uid) {
			h.evicted = append(h.evicted, bindEvent{pod: uid, node: p.Spec.NodeName, rv: rv, at: now, tols: p.Spec.Tolerations})
		}
	}
}

func (h *History) wasEvicted(uid string) bool {
	for _, e := range h.evicted {
		if e.pod == uid {
			return true
		}
	}
	return false
}

// replicaSet records one received ReplicaSet version and looks for a DEP-2
// suspect.
func (h *History) replicaSet(rs *appsv1.ReplicaSet, now time.Time) {
	vs := h.rs[rs.Name]
	prev := int32(-1)
	if len(vs) > 0 {
		prev = vs[len(vs)-1].replicas
	}
	cur := replicasOf(rs.Spec.Replicas)
	h.rs[rs.Name] = append(vs, rsVersion{rv: revision(rs.ResourceVersion), at: now, replicas: cur})
	key := rsKey(rs.Name, string(rs.UID))
	h.rsLife[key] = append(h.rsLife[key], rsVersion{rv: revision(rs.ResourceVersion), at: now, replicas: cur})
	owner := ControllerOwners(rs.OwnerReferences)
	if len(owner) == 1 {
		h.rsOwner[rs.Name] = owner[0].Name
	}
	h.rsStatus[rs.Name] = rs.Status.AvailableReplicas
	h.rsImage[rs.Name] = image(&rs.Spec.Template.Spec)
	if prev < 0 || cur >= prev || len(owner) != 1 {
		return
	}
	d := h.deps[owner[0].Name]
	if d == nil || d.DeletionTimestamp != nil || d.Spec.Paused || d.Spec.Strategy.RollingUpdate == nil ||
		d.Spec.Strategy.RollingUpdate.MaxUnavailable == nil || h.rsImage[rs.Name] == image(&d.Spec.Template.Spec) {
		return // only a rolling update scaling an old ReplicaSet down is judged
	}
	minAvailable := replicasOf(d.Spec.Replicas) - int32(d.Spec.Strategy.RollingUpdate.MaxUnavailable.IntValue())
	oldTotal, newAvailable := int32(0), int32(0)
	for name, dep := range h.rsOwner {
		if dep != d.Name || len(h.rs[name]) == 0 {
			continue
		}
		if h.rsImage[name] == image(&d.Spec.Template.Spec) {
			newAvailable += h.rsStatus[name]
		} else {
			oldTotal += h.rs[name][len(h.rs[name])-1].replicas
		}
	}
	if oldTotal+newAvailable < minAvailable {
		h.dep2 = append(h.dep2, Candidate{Deployment: d.Name, At: now, Detail: fmt.Sprintf(
			"replicaset %s of deployment %s scaled from %d to %d at resourceVersion %s: old replicasets then total %d, the new one has %d available, below replicas-maxUnavailable = %d",
			rs.Name, d.Name, prev, cur, rs.ResourceVersion, oldTotal, newAvailable, minAvailable)})
	}
}

// node records one received node version.
func (h *History) node(n *v1.Node, now time.Time) {
	nv := nodeVersion{rv: revision(n.ResourceVersion), at: now, taints: append([]v1.Taint(nil), n.Spec.Taints...)}
	if q, ok := n.Status.Allocatable[v1.ResourcePods]; ok {
		nv.capacity = q.Value()
	}
	h.nodes[n.Name] = append(h.nodes[n.Name], nv)
}

// nodeVersionsAround returns the versions of node a component acting at
// revision rv (received by the recorder at at) may have seen: those written
// before rv that were still current at some time in [at-window, at]. The
// revision, not the arrival time, bounds them from above: nodes and pods
// come through separate watches, so a node version written before a pod
// change may reach the recorder after it.
func (h *History) nodeVersionsAround(node string, rv int64, at time.Time) []nodeVersion {
	vs := h.nodes[node]
	start := at.Add(-h.window)
	var out []nodeVersion
	for i, v := range vs {
		if v.rv > rv {
			break
		}
		if i+1 < len(vs) && vs[i+1].rv <= rv && !vs[i+1].at.After(start) {
			continue // superseded before the window
		}
		out = append(out, v)
	}
	return out
}

// untolerated returns a NoExecute taint of taints that tols do not tolerate
// forever (a toleration with tolerationSeconds tolerates only for a while),
// or nil.
func untolerated(taints []v1.Taint, tols []v1.Toleration, forever bool) *v1.Taint {
	for i := range taints {
		t := &taints[i]
		if t.Effect != v1.TaintEffectNoExecute {
			continue
		}
		ok := false
		for _, tol := range tols {
			if tol.ToleratesTaint(klog.Background(), t, false) && (!forever || tol.TolerationSeconds == nil) {
				ok = true
				break
			}
		}
		if !ok {
			return t
		}
	}
	return nil
}

// violations returns the history's step violations: SCHED-3 (a pod bound
// to a node that, in every version the scheduler may have seen, had a
// NoExecute taint the pod does not tolerate), GC-1 (the taint manager
// evicted a pod that, in every version of its node it may have seen,
// tolerated every NoExecute taint forever) and, unless disabled, RS-1.
//
// A change is judged only once it was received historySettle before now:
// the versions it is judged against come through other watches, which may
// deliver a version written before it a moment after it.
func (h *History) violations(checkRS1, checkSched2 bool, now time.Time) []Violation {
	var vs []Violation
	if checkSched2 {
		vs = append(vs, h.sched2()...)
	}
	settled := now.Add(-historySettle)
	for _, b := range h.binds {
		if b.at.After(settled) {
			continue
		}
		around := h.nodeVersionsAround(b.node, b.rv, b.at)
		all := len(around) > 0
		var taint *v1.Taint
		for _, nv := range around {
			if taint = untolerated(nv.taints, b.tols, false); taint == nil {
				all = false
				break
			}
		}
		if all {
			vs = append(vs, Violation{"SCHED-3", fmt.Sprintf("pod %s bound to %s at resourceVersion %d, which had the NoExecute taint %s=%s it does not tolerate for all of the %s before",
				b.pod, b.node, b.rv, taint.Key, taint.Value, h.window)})
		}
	}
	for _, e := range h.evicted {
		if e.at.After(settled) {
			continue
		}
		around := h.nodeVersionsAround(e.node, e.rv, e.at)
		tolerated := len(around) > 0
		for _, nv := range around {
			if untolerated(nv.taints, e.tols, true) != nil {
				tolerated = false
				break
			}
		}
		if tolerated {
			name := e.pod
			if l := h.pods[e.pod]; l != nil {
				name = l.name
			}
			vs = append(vs, Violation{"GC-1", fmt.Sprintf("the taint manager evicted pod %s from %s at resourceVersion %d although it tolerates every NoExecute taint %s had for the %s before",
				name, e.node, e.rv, e.node, h.window)})
		}
	}
	if checkRS1 {
		vs = append(vs, h.rs1(settled)...)
	}
	return vs
}

// sched2 checks SCHED-2 at every recorded binding: counting it, the pods
// of the namespace holding the node at that revision (bound, neither
// terminal nor deleted) do not exceed the node's allocatable pods. Pods of
// other namespaces are not counted, and a scheduler's cache only lags
// toward more pods (it learns of terminations and deletions late), so a
// correct scheduler never trips it; a scheduler that forgets pods it has
// just bound does, even when the kubelet then rejects the extra pods.
func (h *History) sched2() []Violation {
	var vs []Violation
	for _, b := range h.binds {
		capacity := int64(0)
		if nv := h.nodes[b.node]; len(nv) > 0 {
			capacity = nv[len(nv)-1].capacity
		}
		if capacity == 0 {
			continue
		}
		held := int64(0)
		for _, l := range h.pods {
			if l.node == b.node && l.bound <= b.rv && (l.gone == 0 || l.gone > b.rv) {
				held++
			}
		}
		if held > capacity {
			vs = append(vs, Violation{"SCHED-2", fmt.Sprintf("binding pod %s to %s at resourceVersion %d made %d pods of the namespace hold the node, allocatable pods %d",
				b.pod, b.node, b.rv, held, capacity)})
		}
	}
	return vs
}

// rs1 checks RS-1 on every pod creation recorded by settled: counting the
// creation, the ReplicaSet's active pods at that revision must not exceed
// the largest spec.replicas the ReplicaSet had within the window before it.
func (h *History) rs1(settled time.Time) []Violation {
	byRS := map[string][]*podLife{}
	for _, l := range h.pods {
		if l.rsKey != "" {
			byRS[l.rsKey] = append(byRS[l.rsKey], l)
		}
	}
	var vs []Violation
	for key, lives := range byRS {
		sort.Slice(lives, func(i, j int) bool { return lives[i].created < lives[j].created })
		rs := lives[0].rs
		versions := h.rsLife[key]
		for _, p := range lives {
			if p.createdAt.After(settled) {
				continue
			}
			active := 0
			for _, q := range lives {
				if q.created <= p.created && (q.inactive == 0 || q.inactive > p.created) {
					active++
				}
			}
			allowed, known := int32(-1), false
			start := p.createdAt.Add(-h.window)
			for i, v := range versions {
				if v.rv > p.created {
					break
				}
				if i+1 < len(versions) && versions[i+1].rv <= p.created && !versions[i+1].at.After(start) {
					continue // superseded before the window
				}
				known = true
				allowed = max(allowed, v.replicas)
			}
			if known && int32(active) > allowed {
				vs = append(vs, Violation{"RS-1", fmt.Sprintf("pod %s created at resourceVersion %d made replicaset %s's active pods %d, above its replicas (%d at most within the %s before)",
					p.name, p.created, rs, active, allowed, h.window)})
			}
		}
	}
	sort.Slice(vs, func(i, j int) bool { return vs[i].Detail < vs[j].Detail })
	return vs
}
