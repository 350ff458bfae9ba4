package props

import (
	"fmt"
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"

	"github.com/kubeproof/kubeproof/model"
)

func countInvariants() int {
	n := 0
	for _, p := range model.Properties {
		if p.Invariant != nil {
			n++
		}
	}
	return n
}

// converge stops every fault, resumes paused deployments and waits — for
// at most convergeTimeout, checking safety all along — until the cluster is
// stable in the sense of LIVE-1..3 (Anvil's "eventually stable
// reconciliation").
func (h *harness) converge() {
	h.stopFaults()
	for _, name := range sortedKeys(h.paused) {
		if h.live[name] {
			h.trace.UserTouched(h.abs.deps[name])
			h.update(name, func(d *appsv1.Deployment) { d.Spec.Paused = false })
		}
		h.paused[name] = false
	}
	h.script = append(h.script, "(faults stop; paused deployments resumed; wait for convergence)")
	deadline := time.Now().Add(convergeTimeout)
	var reasons []string
	for {
		h.checkOnce()
		reasons = h.unconverged(h.observe())
		if len(reasons) == 0 {
			// The history judges a change only historySettle after
			// receiving it: judge the run's last changes too.
			time.Sleep(historySettle)
			h.checkOnce()
			return
		}
		if time.Now().After(deadline) {
			break
		}
		time.Sleep(250 * time.Millisecond)
	}
	var vs []Violation
	for _, r := range reasons {
		vs = append(vs, Violation{ID: r[:6], Detail: r[7:]})
	}
	h.fail(fmt.Sprintf("not converged within %s after faults stopped", convergeTimeout), vs)
}

// unconverged lists why the observation is not yet stable; each reason
// starts with the liveness property it is about ("LIVE-n ").
func (h *harness) unconverged(ob *Observation) []string {
	var out []string
	add := func(id, format string, args ...any) { out = append(out, id+" "+fmt.Sprintf(format, args...)) }
	deps := map[string]bool{}
	for _, d := range ob.Deployments {
		deps[d.Name] = true
		want := int32(1)
		if d.Spec.Replicas != nil {
			want = *d.Spec.Replicas
		}
		st := d.Status
		if d.Status.ObservedGeneration != d.Generation || st.Replicas != want || st.UpdatedReplicas != want ||
			st.ReadyReplicas != want || st.AvailableReplicas != want {
			add("LIVE-1", "deployment %s: generation %d observed %d, replicas %d: status replicas %d updated %d ready %d available %d",
				d.Name, d.Generation, st.ObservedGeneration, want, st.Replicas, st.UpdatedReplicas, st.ReadyReplicas, st.AvailableReplicas)
		}
		img := image(&d.Spec.Template.Spec)
		ready := int32(0)
		for i := range ob.Pods {
			p := &ob.Pods[i]
			if p.Labels[AppLabel] != d.Name {
				continue
			}
			switch {
			case image(&p.Spec) != img:
				add("LIVE-1", "deployment %s: %s of an old template (%s) remains", d.Name, describePod(p), image(&p.Spec))
			case p.DeletionTimestamp != nil || Terminal(p.Status.Phase):
				add("LIVE-1", "deployment %s: %s remains", d.Name, describePod(p))
			case PodReady(p):
				ready++
			}
		}
		if ready != want {
			add("LIVE-1", "deployment %s: %d ready pods of the current template, want %d", d.Name, ready, want)
		}
	}
	rsOwned := map[string]bool{}
	for _, r := range ob.ReplicaSets {
		dep := r.Spec.Selector.MatchLabels[AppLabel]
		switch {
		case h.abs.Orphaned[dep] && !deps[dep]:
			for _, o := range r.OwnerReferences {
				add("LIVE-2", "replicaset %s of deployment %s deleted with propagationPolicy Orphan still has owner %s/%s", r.Name, dep, o.Kind, o.Name)
			}
			want := int32(1)
			if r.Spec.Replicas != nil {
				want = *r.Spec.Replicas
			}
			if r.Status.ReadyReplicas != want || r.Status.ObservedGeneration != r.Generation {
				add("LIVE-1", "orphaned replicaset %s: ready %d of %d", r.Name, r.Status.ReadyReplicas, want)
			}
		case !deps[dep]:
			add("LIVE-2", "replicaset %s of deleted deployment %s remains", r.Name, dep)
		}
		rsOwned[r.Name] = true
	}
	for i := range ob.Pods {
		p := &ob.Pods[i]
		owners := ControllerOwners(p.OwnerReferences)
		if len(owners) == 0 || !rsOwned[owners[0].Name] {
			add("LIVE-2", "%s has no live owner (%v)", describePod(p), p.OwnerReferences)
		}
	}
	pods := map[string]int{}
	for i := range ob.Pods {
		pods[string(ob.Pods[i].UID)] = i
	}
	for _, s := range ob.Sandboxes {
		if !s.Ready {
			continue
		}
		i, ok := pods[s.PodUID]
		switch {
		case !ok:
			add("LIVE-3", "live sandbox %s on %s (IP %s) of deleted pod %s", s.ID, s.Node, s.IP, s.PodName)
		case ob.Pods[i].DeletionTimestamp != nil || Terminal(ob.Pods[i].Status.Phase) || ob.Pods[i].Spec.NodeName != s.Node:
			add("LIVE-3", "live sandbox %s on %s (IP %s) of %s", s.ID, s.Node, s.IP, describePod(&ob.Pods[i]))
		}
	}
	if goals, ok := ModelGoals(h.abs, ob, h.down); ok {
		for _, g := range goals {
			add(g, "the model state of the observation does not meet %s", g)
		}
	}
	sort.Strings(out)
	return out
}
