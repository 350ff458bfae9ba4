package props

import (
	"context"
	"sort"
	"time"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"pgregory.net/rapid"

	"github.com/kubeproof/kubeproof/impl/faults"
)

// ProbeTaint is the NoExecute taint taintNode puts on a node. Deployment d2
// tolerates it forever, d1 does not: the scheduler must keep d1's pods off
// the node (SCHED-3) and the taint manager must evict d1's pods from it but
// never d2's (GC-1).
var ProbeTaint = v1.Taint{Key: "kubeproof.io/probe", Value: "dedicated", Effect: v1.TaintEffectNoExecute}

func probeTolerations(deployment string) []v1.Toleration {
	if deployment != "d2" {
		return nil
	}
	return []v1.Toleration{{Key: ProbeTaint.Key, Operator: v1.TolerationOpExists, Effect: v1.TaintEffectNoExecute}}
}

// availabilityFault notes that the run took availability away (DEP-2
// suspects after it are not judged: the controller may have counted pods
// that were then lost).
func (h *harness) availabilityFault() {
	if h.availabilityFaultAt.IsZero() {
		h.availabilityFaultAt = time.Now()
	}
}

// dep2 judges the recorder's DEP-2 suspects: a suspect is a violation
// unless the user scaled that deployment in this run or availability was
// taken away before it (its effects may reach the controller up to
// the history window late, hence the margin).
func (h *harness) dep2() []Violation {
	var vs []Violation
	for _, c := range h.rec.DEP2Candidates() {
		if h.scaled[c.Deployment] {
			continue
		}
		if !h.availabilityFaultAt.IsZero() && c.At.After(h.availabilityFaultAt.Add(-h.rec.Window())) {
			continue
		}
		if h.kubeletCrashed.Load() {
			continue
		}
		vs = append(vs, Violation{ID: "DEP-2", Detail: c.Detail})
	}
	return vs
}

// setTaint adds or removes ProbeTaint on node.
func (h *harness) setTaint(node string, on bool) {
	ctx := context.Background()
	for attempt := 0; ; attempt++ {
		n, err := h.client.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
		if err != nil {
			h.t.Fatalf("getting node %s: %v", node, err)
		}
		var taints []v1.Taint
		for _, t := range n.Spec.Taints {
			if t.Key != ProbeTaint.Key {
				taints = append(taints, t)
			}
		}
		if on {
			taints = append(taints, ProbeTaint)
		}
		n.Spec.Taints = taints
		if _, err = h.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{}); err == nil {
			return
		}
		if !apierrors.IsConflict(err) || attempt > 20 {
			h.t.Fatalf("updating taints of node %s: %v", node, err)
		}
	}
}

// taintNode puts ProbeTaint on a node, or takes it off. At most one node is
// tainted at a time, so that d1 keeps enough capacity.
func (h *harness) taintNode(t *rapid.T) {
	n := nodeName(t)
	if h.tainted[n] {
		h.step("remove taint %s from %s", ProbeTaint.Key, n)
		h.setTaint(n, false)
		delete(h.tainted, n)
	} else {
		if len(h.tainted) > 0 {
			return
		}
		h.step("taint %s with %s=%s:NoExecute (d2 tolerates it)", n, ProbeTaint.Key, ProbeTaint.Value)
		h.setTaint(n, true)
		h.tainted[n] = true
		h.availabilityFault()
		stats.faults.Add(1)
	}
	h.check()
}

func crashPointNames() []string {
	out := make([]string, 0, len(faults.CrashPoints))
	for p := range faults.CrashPoints {
		out = append(out, p)
	}
	sort.Strings(out)
	return out
}

// crashed is the crash function of every armed point: the component that
// reached it is stopped (memory lost) and restarted.
func (h *harness) crashed(point, component string) {
	if component == "" {
		component = faults.CrashPoints[point]
	}
	h.noteCrash(component)
	stats.crashes.Add(1)
	h.c.comps.crash(component)
}

func (h *harness) noteCrash(component string) {
	switch component {
	case "controller-manager":
		h.cmCrashed.Store(true)
	case "scheduler":
		h.schedCrashed.Store(true)
	default:
		h.kubeletCrashed.Store(true)
	}
}

// armCrashPoint arms a named crash point (impl/faults): the component that
// next reaches it (after skip passes) crashes between the writes of that
// reconcile, loses its memory and is restarted (the intermediate-state
// fault class).
func (h *harness) armCrashPoint(t *rapid.T) {
	point := rapid.SampledFrom(crashPointNames()).Draw(t, "crashPoint")
	skip := rapid.IntRange(0, 2).Draw(t, "skip")
	h.step("arm crash point %s (crash on its hit %d)", point, skip+1)
	h.disarm = append(h.disarm, faults.ArmCrash(point, skip, h.crashed))
	stats.faults.Add(1)
	h.check()
}

// crashComponent crashes a component now (wherever it is) and restarts it.
func (h *harness) crashComponent(t *rapid.T) {
	comp := rapid.SampledFrom(componentNames()).Draw(t, "component")
	h.step("crash %s (restarted with no memory)", comp)
	h.noteCrash(comp)
	stats.crashes.Add(1)
	stats.faults.Add(1)
	h.c.comps.crash(comp)
	h.check()
}
