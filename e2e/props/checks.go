package props

import (
	"fmt"
	"sort"
	"strings"

	v1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/model"
)

// Violation is one broken property.
type Violation struct {
	ID     string // the spec/README.md property ID, e.g. "SCHED-1"
	Detail string // what was observed
}

func (v Violation) String() string {
	text := ""
	if p, ok := model.LookupProperty(v.ID); ok {
		text = " (" + p.Text + ")"
	}
	return v.ID + text + ": " + v.Detail
}

// FormatViolations renders violations one per line.
func FormatViolations(vs []Violation) string {
	lines := make([]string, len(vs))
	for i, v := range vs {
		lines[i] = "  " + v.String()
	}
	return strings.Join(lines, "\n")
}

// CheckObservation runs the implementation-level safety checks that need no
// model on one observation: RS-2 (one controller owner), DEP-1 (surge bound
// once the generation is observed), SCHED-2 (node capacity), KUBELET-1 (a
// runtime runs only pods bound to its node), KUBELET-2 (one live sandbox per
// pod), KUBELET-3 (unique IPs among a node's live sandboxes) and KUBELET-4
// (a live sandbox holds an IP).
func CheckObservation(ob *Observation) []Violation {
	var vs []Violation
	add := func(id, format string, args ...any) {
		vs = append(vs, Violation{ID: id, Detail: fmt.Sprintf(format, args...)})
	}
	pods := map[string]*v1.Pod{}
	bound := map[string]int{}
	for i := range ob.Pods {
		p := &ob.Pods[i]
		pods[string(p.UID)] = p
		if n := len(ControllerOwners(p.OwnerReferences)); n > 1 {
			add("RS-2", "%s has %d controller owners %v", describePod(p), n, p.OwnerReferences)
		}
		if p.Spec.NodeName != "" && !Terminal(p.Status.Phase) {
			bound[p.Spec.NodeName]++
		}
	}
	for _, n := range ob.Nodes {
		alloc, ok := n.Status.Allocatable[v1.ResourcePods]
		if ok && int64(bound[n.Name]) > alloc.Value() {
			add("SCHED-2", "node %s has %d non-terminal pods bound, allocatable pods %d", n.Name, bound[n.Name], alloc.Value())
		}
	}
	for _, d := range ob.Deployments {
		if !ob.DeploymentStable[d.Name] || d.Status.ObservedGeneration != d.Generation || d.DeletionTimestamp != nil ||
			d.Spec.Strategy.RollingUpdate == nil || d.Spec.Strategy.RollingUpdate.MaxSurge == nil || d.Spec.Replicas == nil {
			continue
		}
		surge := d.Spec.Strategy.RollingUpdate.MaxSurge.IntValue()
		total := 0
		var parts []string
		for _, r := range ob.ReplicaSets {
			if r.Spec.Selector.MatchLabels[AppLabel] == d.Name && r.Spec.Replicas != nil {
				total += int(*r.Spec.Replicas)
				parts = append(parts, fmt.Sprintf("%s=%d", r.Name, *r.Spec.Replicas))
			}
		}
		if total > int(*d.Spec.Replicas)+surge {
			add("DEP-1", "deployment %s (generation %d observed, replicas %d, maxSurge %d): replicasets total %d (%s)",
				d.Name, d.Generation, *d.Spec.Replicas, surge, total, strings.Join(parts, ", "))
		}
	}
	liveByPod := map[string][]string{}
	ipsByNode := map[string]map[string]string{}
	for _, s := range ob.Sandboxes {
		if p := pods[s.PodUID]; p != nil && p.Spec.NodeName != s.Node {
			add("KUBELET-1", "runtime of %s holds sandbox %s of %s", s.Node, s.ID, describePod(p))
		}
		if !s.Ready {
			continue
		}
		liveByPod[s.PodUID] = append(liveByPod[s.PodUID], s.Node+"/"+s.ID)
		if s.IP == "" {
			add("KUBELET-4", "live sandbox %s on %s (pod %s/%s) has no IP", s.ID, s.Node, s.PodNamespace, s.PodName)
			continue
		}
		if ipsByNode[s.Node] == nil {
			ipsByNode[s.Node] = map[string]string{}
		}
		if other, dup := ipsByNode[s.Node][s.IP]; dup {
			add("KUBELET-3", "IP %s on %s held by live sandboxes %s and %s (pod %s)", s.IP, s.Node, other, s.ID, s.PodName)
		}
		ipsByNode[s.Node][s.IP] = s.ID
	}
	uids := make([]string, 0, len(liveByPod))
	for uid := range liveByPod {
		uids = append(uids, uid)
	}
	sort.Strings(uids)
	for _, uid := range uids {
		if l := liveByPod[uid]; len(l) > 1 {
			add("KUBELET-2", "pod %s has %d live sandboxes: %v", uid, len(l), l)
		}
	}
	return vs
}

// CheckModel maps the observation to a model state and returns the model
// invariants its state breaks. representable is false when the observation lies
// outside the model's bounds (then nothing was checked).
func CheckModel(a *Abstraction, ob *Observation, down map[string]bool) (vs []Violation, representable bool) {
	s, ok := ModelState(a, ob, down)
	if !ok {
		return nil, false // out of the model's bounds: not checked
	}
	return CheckState(a.Model, &s), true
}

// CheckState returns the model invariants state s breaks.
func CheckState(m *model.Model, s *model.State) (vs []Violation) {
	for _, id := range m.ViolatedInvariants(s) {
		vs = append(vs, Violation{ID: id, Detail: "model state:\n    " + strings.Join(m.Summary(s), "\n    ")})
	}
	return vs
}

// ModelState maps the observation to a model state; ok is false when it
// lies outside the model's bounds.
func ModelState(a *Abstraction, ob *Observation, down map[string]bool) (s model.State, ok bool) {
	sn, err := a.Snapshot(ob, down)
	if err != nil {
		return s, false
	}
	s, err = a.Model.FromSnapshot(sn)
	if err != nil {
		return s, false
	}
	return s, true
}

// ModelGoals returns the liveness goals (LIVE-n) the observation's model
// state does not meet, and whether it was representable.
func ModelGoals(a *Abstraction, ob *Observation, down map[string]bool) ([]string, bool) {
	sn, err := a.Snapshot(ob, down)
	if err != nil {
		return nil, false
	}
	s, err := a.Model.FromSnapshot(sn)
	if err != nil {
		return nil, false
	}
	return a.Model.UnmetGoals(&s), true
}
