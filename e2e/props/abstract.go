package props

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/model"
)

// Abstraction maps observations of one run to model states. It numbers
// deployments in the order it first sees them and, per deployment, template
// versions in the order it first sees their images, and remembers which
// deployment and version every pod it has seen belongs to (so that a
// sandbox outliving its pod object maps to an Absent pod). The model is
// bounded (model.MaxDeployments, model.MaxVersions, model.MaxPodsPerRS,
// model.MaxIPs); an observation outside the bounds is reported as
// unrepresentable and only the implementation-level checks apply to it.
type Abstraction struct {
	Model *model.Model

	deps     map[string]int            // deployment name -> number
	versions map[string]map[string]int // deployment name -> image -> version
	pods     map[string][2]int         // pod uid -> deployment, version
	rsNames  map[string][2]int         // ReplicaSet name -> deployment, version (every one listed in the run)
	// phases holds, per pod uid, the last phase (and readiness) the map
	// gave the pod: non-terminal, or terminal written before the pod was
	// deleted (see modelPhase); before a snapshot mapped the pod, the one
	// of the first version the recorder showed (Remember).
	phases map[string]podPhase
	// Orphaned names the deployments deleted with propagationPolicy Orphan:
	// the model has no such policy, so their ReplicaSets, pods and sandboxes
	// (left running without an owner, as the user asked) are not mapped.
	Orphaned map[string]bool
}

// NewModel returns the model configuration the harness maps clusters to:
// three nodes of the given capacity (pods per node), up to two deployments
// of up to four replicas with one rolling update each (maxSurge 1,
// maxUnavailable 1), and every safety invariant and liveness goal.
func NewModel(capacity int) (*model.Model, error) {
	cfg := model.Config{
		Name:           "props",
		NumNodes:       model.MaxNodes,
		NumDeployments: model.MaxDeployments,
		Replicas:       model.MaxPodsPerRS,
		NumVersions:    model.MaxVersions,
		MaxSurge:       1,
		MaxUnavailable: 1,
		PodsPerRS:      model.MaxPodsPerRS,
		Capacity:       capacity,
		IPsPerNode:     model.MaxIPs,
		MaxScales:      9, MaxDeletes: 9, MaxCrashes: 9, MaxWatchDrops: 9, MaxNodeFailures: 9, MaxEvictions: 9,
		// The kubelet reports Running before the Ready condition, as the
		// model's readiness does.
		ReadinessProbes: 1, MaxProbeFailures: 9,
		// The kubelets, the deployment controller, taint-based eviction
		// and the garbage collector's foreground finalizer removal act on
		// lagging views, as the implementation's do.
		KubeletLag: 1, DeploymentLag: 1, NodeLifecycleLag: 1, GCLag: 1,
	}
	for _, p := range model.Properties {
		if p.Invariant != nil {
			cfg.Invariants = append(cfg.Invariants, p.ID)
		} else {
			cfg.Properties = append(cfg.Properties, p.ID)
		}
	}
	return model.New(cfg, "")
}

// NewAbstraction starts a fresh numbering for one run.
func NewAbstraction(m *model.Model) *Abstraction {
	return &Abstraction{Model: m, deps: map[string]int{}, versions: map[string]map[string]int{},
		pods: map[string][2]int{}, rsNames: map[string][2]int{}, phases: map[string]podPhase{}, Orphaned: map[string]bool{}}
}

func (a *Abstraction) deployment(name string) (int, error) {
	if d, ok := a.deps[name]; ok {
		return d, nil
	}
	if len(a.deps) >= model.MaxDeployments {
		return 0, fmt.Errorf("deployment %s: the model holds %d deployments", name, model.MaxDeployments)
	}
	a.deps[name] = len(a.deps) + 1
	a.versions[name] = map[string]int{}
	return a.deps[name], nil
}

func (a *Abstraction) version(dep, img string) (int, error) {
	if _, err := a.deployment(dep); err != nil {
		return 0, err
	}
	vs := a.versions[dep]
	if v, ok := vs[img]; ok {
		return v, nil
	}
	if len(vs) >= model.MaxVersions {
		return 0, fmt.Errorf("deployment %s image %s: the model holds %d versions", dep, img, model.MaxVersions)
	}
	vs[img] = len(vs) + 1
	return vs[img], nil
}

// NodeNumber maps "node-N" to N.
func NodeNumber(name string) (int, error) {
	n, err := strconv.Atoi(strings.TrimPrefix(name, "node-"))
	if err != nil || !strings.HasPrefix(name, "node-") || n < 1 || n > model.MaxNodes {
		return 0, fmt.Errorf("node %q outside the model's nodes 1..%d", name, model.MaxNodes)
	}
	return n, nil
}

// Snapshot maps an observation to a model snapshot. down names the nodes
// whose kubelet the harness has failed.
func (a *Abstraction) Snapshot(ob *Observation, down map[string]bool) (model.Snapshot, error) {
	var sn model.Snapshot
	for _, d := range ob.Deployments {
		num, err := a.deployment(d.Name)
		if err != nil {
			return sn, err
		}
		v, err := a.version(d.Name, image(&d.Spec.Template.Spec))
		if err != nil {
			return sn, err
		}
		state := model.Live
		if d.DeletionTimestamp != nil {
			state = model.Deleting
		}
		replicas := 1
		if d.Spec.Replicas != nil {
			replicas = int(*d.Spec.Replicas)
		}
		sn.Deployments = append(sn.Deployments, model.DeploymentSnapshot{Number: num, State: state, Replicas: replicas,
			Version: v, Observed: ob.DeploymentStable[d.Name] && d.Status.ObservedGeneration == d.Generation})
	}
	present := map[string]bool{}
	for _, d := range ob.Deployments {
		present[d.Name] = true
	}
	for name, num := range a.deps {
		if !present[name] {
			sn.Deployments = append(sn.Deployments, model.DeploymentSnapshot{Number: num, State: model.Gone})
		}
	}
	rsVersion := map[string][2]int{} // replicaset name -> deployment, version
	for _, r := range ob.ReplicaSets {
		dep := r.Spec.Selector.MatchLabels[AppLabel]
		if a.Orphaned[dep] {
			continue
		}
		d, err := a.deployment(dep)
		if err != nil {
			return sn, err
		}
		v, err := a.version(dep, image(&r.Spec.Template.Spec))
		if err != nil {
			return sn, err
		}
		rsVersion[r.Name] = [2]int{d, v}
		a.rsNames[r.Name] = [2]int{d, v}
		replicas := 1
		if r.Spec.Replicas != nil {
			replicas = int(*r.Spec.Replicas)
		}
		sn.ReplicaSets = append(sn.ReplicaSets, model.ReplicaSetSnapshot{Deployment: d, Version: v,
			Deleting: r.DeletionTimestamp != nil, Replicas: replicas})
	}
	live := map[string]*Sandbox{}
	for i := range ob.Sandboxes {
		s := &ob.Sandboxes[i]
		if s.Ready && !a.orphanedUID(s.PodUID) {
			if live[s.PodUID] != nil {
				return sn, fmt.Errorf("pod %s has two live sandboxes (KUBELET-2, checked directly)", s.PodUID)
			}
			live[s.PodUID] = s
		}
	}
	nodeIPs := map[string][]string{}
	for _, s := range live {
		nodeIPs[s.Node] = append(nodeIPs[s.Node], s.IP)
	}
	ipRank := map[string]map[string]int{}
	for node, ips := range nodeIPs {
		sort.Strings(ips)
		ipRank[node] = map[string]int{}
		for _, ip := range ips {
			if _, dup := ipRank[node][ip]; !dup {
				ipRank[node][ip] = len(ipRank[node]) + 1
			}
		}
	}
	podSnap := func(uid string, dv [2]int) (model.PodSnapshot, error) {
		ps := model.PodSnapshot{Deployment: dv[0], Version: dv[1], State: model.Absent}
		if s := live[uid]; s != nil {
			n, err := NodeNumber(s.Node)
			if err != nil {
				return ps, err
			}
			ps.Sandboxes, ps.SandboxNode, ps.SandboxIP = 1, n, ipRank[s.Node][s.IP]
		}
		return ps, nil
	}
	inAPI := map[string]bool{}
	for i := range ob.Pods {
		p := &ob.Pods[i]
		if beingRemoved(p) {
			continue
		}
		inAPI[string(p.UID)] = true
		dep := p.Labels[AppLabel]
		if a.Orphaned[dep] {
			continue
		}
		d, err := a.deployment(dep)
		if err != nil {
			return sn, err
		}
		v, err := a.version(dep, image(&p.Spec))
		if err != nil {
			return sn, err
		}
		a.pods[string(p.UID)] = [2]int{d, v}
		ps, err := podSnap(string(p.UID), [2]int{d, v})
		if err != nil {
			return sn, err
		}
		ps.State = model.Live
		if p.DeletionTimestamp != nil {
			ps.State = model.Deleting
		}
		if p.Spec.NodeName != "" {
			if ps.Node, err = NodeNumber(p.Spec.NodeName); err != nil {
				return sn, err
			}
		}
		pp := a.modelPhase(p, live[string(p.UID)] != nil, true)
		ps.Phase, ps.NotReady = pp.phase, pp.notReady
		// An owner reference stays on the pod after its ReplicaSet is
		// gone (background deletion: the garbage collector deletes the
		// pod later), as the model's podOwners does. A ReplicaSet the
		// observation does not list has the template version it had
		// when listed, or else the pod's own (a ReplicaSet creates pods
		// of its template).
		for _, o := range ControllerOwners(p.OwnerReferences) {
			if o.Kind != "ReplicaSet" {
				continue
			}
			if dv, ok := rsVersion[o.Name]; ok {
				ps.OwnerVersions = append(ps.OwnerVersions, dv[1])
			} else if dv, ok := a.rsNames[o.Name]; ok && dv[0] == d {
				ps.OwnerVersions = append(ps.OwnerVersions, dv[1])
			} else {
				ps.OwnerVersions = append(ps.OwnerVersions, v)
			}
		}
		sn.Pods = append(sn.Pods, ps)
	}
	for uid := range live {
		if inAPI[uid] {
			continue
		}
		dv, ok := a.pods[uid]
		if !ok {
			return sn, fmt.Errorf("live sandbox of pod %s the harness never saw", uid)
		}
		ps, err := podSnap(uid, dv)
		if err != nil {
			return sn, err
		}
		sn.Pods = append(sn.Pods, ps)
	}
	for _, n := range ob.Nodes {
		num, err := NodeNumber(n.Name)
		if err != nil {
			return sn, err
		}
		sn.Nodes = append(sn.Nodes, model.NodeSnapshot{Number: num, Up: !down[n.Name], KubeletUp: !down[n.Name],
			Tainted: hasTaint(&n, v1.TaintNodeUnreachable, v1.TaintEffectNoExecute)})
	}
	return sn, nil
}

func (a *Abstraction) orphanedUID(uid string) bool {
	dv, ok := a.pods[uid]
	if !ok {
		return false
	}
	for name, d := range a.deps {
		if d == dv[0] {
			return a.Orphaned[name]
		}
	}
	return false
}

// Remember records a pod's deployment and version as the recorder sees it,
// so that a sandbox outliving the pod object maps to its (Absent) pod, and
// its phase (modelPhase) for a pod no snapshot has mapped yet: the
// recorder's watch may lag the observer's list, so its version of a pod the
// map already gave a phase may be older than that one (a stale Pending
// would fold a final status onto a phase the pod left).
func (a *Abstraction) Remember(p *v1.Pod) {
	dep := p.Labels[AppLabel]
	if v, err := a.version(dep, image(&p.Spec)); err == nil {
		a.pods[string(p.UID)] = [2]int{a.deps[dep], v}
	}
	if _, seen := a.phases[string(p.UID)]; !seen {
		a.modelPhase(p, false, false)
	}
}

// podPhase is a pod's phase as the model has it, and whether it is Running
// but not Ready.
type podPhase struct {
	phase    uint8
	notReady bool
}

// modelPhase is the phase (and readiness) the model gives pod p and
// remembers it; sandboxLive: the observation has a live sandbox of p;
// observed: p is from an observation (else from the recorder, which knows
// nothing of sandboxes: a terminal phase of a deleted pod is then neither
// mapped nor remembered).
//
// A terminal phase written as a pod's last status before its object goes
// is not a model state, the model folding that write into the removal:
//   - the kubelet's final status of a deleted pod (upstream TerminatePod
//     and getPhase of a terminal pod: Failed, or Succeeded when every
//     container exited 0, whatever the restartPolicy), written once the
//     pod's kill succeeded and just before its final delete — the model's
//     KubeletStopPod leaves the phase as it was and KubeletFinalizePod
//     removes the pod;
//   - the pod garbage collector's Failed (DisruptionTarget
//     DeletionByPodGC) just before its force delete — the model's
//     PodGCDeletePod removes the pod.
//
// Such a pod, observed between the write and the removal (a kubelet
// crashed between them keeps it there until it is back), keeps the phase
// and readiness it had before: the last non-terminal ones the map gave it
// (Pending if it was never seen, as a pod the kubelet never reported
// Running; the stop changes neither in the model). A pod seen
// terminal before it was deleted keeps its terminal phase, and so does a
// deleted pod reported terminal while a sandbox of it is live (the kubelet
// writes a terminal phase only once none is, KUBELET-8: the trace
// validation is to reject that).
func (a *Abstraction) modelPhase(p *v1.Pod, sandboxLive, observed bool) podPhase {
	var pp podPhase
	switch {
	case p.Status.Phase == v1.PodSucceeded:
		pp.phase = model.Succeeded
	case Terminal(p.Status.Phase):
		pp.phase = model.Failed
	case p.Status.Phase == v1.PodRunning:
		pp.phase, pp.notReady = model.Running, !PodReady(p)
	default:
		pp.phase = model.Pending
	}
	uid := string(p.UID)
	prev, seen := a.phases[uid]
	if model.Terminal(pp.phase) && !(seen && model.Terminal(prev.phase)) {
		if podGCFailed(p) || p.DeletionTimestamp != nil && !sandboxLive && observed {
			return prev // Pending when not seen
		}
		if p.DeletionTimestamp != nil && !observed {
			return pp
		}
	}
	a.phases[uid] = pp
	return pp
}

// beingRemoved reports whether p is marked for removal with no grace
// period and no finalizer: kube-apiserver's delete of a pod with grace
// period 0 (an unscheduled or terminal pod's always, the kubelet's final
// delete, the pod garbage collector's force delete) writes the pod so
// marked and then removes it, in the same request. The model removes it
// in one step (DeletePod of an unscheduled pod, KubeletFinalizePod,
// PodGCDeletePod), so such a pod, observed between the two writes, is
// mapped as already gone.
func beingRemoved(p *v1.Pod) bool {
	g := p.DeletionGracePeriodSeconds
	return p.DeletionTimestamp != nil && g != nil && *g == 0 && len(p.Finalizers) == 0
}

// podGCFailed reports whether the pod garbage collector marked p Failed
// before deleting it (upstream's DisruptionTarget reason DeletionByPodGC).
func podGCFailed(p *v1.Pod) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == v1.DisruptionTarget && c.Status == v1.ConditionTrue && c.Reason == "DeletionByPodGC" {
			return true
		}
	}
	return false
}

func hasTaint(n *v1.Node, key string, effect v1.TaintEffect) bool {
	for _, t := range n.Spec.Taints {
		if t.Key == key && t.Effect == effect {
			return true
		}
	}
	return false
}

// PodGroup returns the numbers of the deployment and template version pod p
// belongs to, if the abstraction has numbered them.
func (a *Abstraction) PodGroup(p *v1.Pod) (d, v int, ok bool) {
	dep := p.Labels[AppLabel]
	if a.Orphaned[dep] {
		return 0, 0, false
	}
	d, ok = a.deps[dep]
	if !ok {
		return 0, 0, false
	}
	v, ok = a.versions[dep][image(&p.Spec)]
	return d, v, ok
}
