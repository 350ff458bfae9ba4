package model

import (
	"fmt"
	"strings"
)

// Binding is one variable (or one entry of a function-valued variable) and
// its value, rendered as in the TLA+ module.
type Binding struct{ Name, Value string }

var (
	lifecycleNames = []string{`"Absent"`, `"Live"`, `"Deleting"`, `"Gone"`}
	phaseNames     = []string{`"Pending"`, `"Running"`, `"Failed"`, `"Succeeded"`}
	viewNames      = []string{`"Absent"`, `"Inactive"`, `"Active"`}
	expectNames    = []string{`"None"`, `"Add"`, `"Delete"`}
)

func boolStr(b bool) string {
	if b {
		return "TRUE"
	}
	return "FALSE"
}

func ownersStr(x uint8) string {
	var vs []string
	for v := 1; v <= MaxVersions; v++ {
		if x&(1<<v) != 0 {
			vs = append(vs, fmt.Sprint(v))
		}
	}
	return "{" + strings.Join(vs, ", ") + "}"
}

// pendingStr renders controller c's queue as the TLA+ sequence of records.
func pendingStr(s *State, c int) string {
	var es []string
	for i := 0; i < QueueLen(s, c); i++ {
		e := s.Pending[c][i]
		view := fmt.Sprint(e.View)
		if c == ReplicaSetController {
			view = viewNames[e.View]
		}
		es = append(es, fmt.Sprintf("[pod |-> %s, view |-> %s, rev |-> %d]", PodName(int(e.Pod)-1), view, e.Rev))
	}
	return "<<" + strings.Join(es, ", ") + ">>"
}

// Bindings lists every variable of s under its TLA+ name.
func (m *Model) Bindings(s *State) []Binding {
	c := &m.cfg
	var out []Binding
	add := func(name, val string) { out = append(out, Binding{name, val}) }
	for d := 1; d <= c.NumDeployments; d++ {
		add(fmt.Sprintf("depState[%d]", d), lifecycleNames[s.DepState[d]])
		add(fmt.Sprintf("depReplicas[%d]", d), fmt.Sprint(s.DepReplicas[d]))
		add(fmt.Sprintf("depVersion[%d]", d), fmt.Sprint(s.DepVersion[d]))
		add(fmt.Sprintf("depObserved[%d]", d), boolStr(s.DepObserved[d]))
		dv := s.DCDeployment[d]
		add(fmt.Sprintf("dcDeployment[%d]", d), fmt.Sprintf("[state |-> %s, replicas |-> %d, version |-> %d]",
			lifecycleNames[dv.State], dv.Replicas, dv.Version))
	}
	for d := 1; d <= c.NumDeployments; d++ {
		for v := 1; v <= c.NumVersions; v++ {
			add(fmt.Sprintf("rsState[<<%d, %d>>]", d, v), lifecycleNames[s.RSState[d][v]])
			add(fmt.Sprintf("rsReplicas[<<%d, %d>>]", d, v), fmt.Sprint(s.RSReplicas[d][v]))
			add(fmt.Sprintf("dcAvailable[<<%d, %d>>]", d, v), fmt.Sprint(s.DCAvailable[d][v]))
		}
	}
	for _, p := range m.pods {
		n := PodName(p)
		add("podState["+n+"]", lifecycleNames[s.PodState[p]])
		add("podNode["+n+"]", fmt.Sprint(s.PodNode[p]))
		add("podPhase["+n+"]", phaseNames[s.PodPhase[p]])
		add("podOwners["+n+"]", ownersStr(s.PodOwners[p]))
		add("podReady["+n+"]", boolStr(s.PodReady[p]))
		add("sandboxes["+n+"]", fmt.Sprint(s.Sandboxes[p]))
		add("sandboxNode["+n+"]", fmt.Sprint(s.SandboxNode[p]))
		add("sandboxIP["+n+"]", fmt.Sprint(s.SandboxIP[p]))
		add("kubeletKnows["+n+"]", boolStr(s.KubeletKnows[p]))
		add("rscView["+n+"]", viewNames[s.RSCView[p]])
		add("rscExpect["+n+"]", expectNames[s.RSCExpect[p]])
		add("schedView["+n+"]", fmt.Sprint(s.SchedView[p]))
		add("schedAssumed["+n+"]", fmt.Sprint(s.SchedAssumed[p]))
		add("kubeletView["+n+"]", kubeletViewStr(s.KubeletView[p]))
		add("gcGraph["+n+"]", boolStr(s.GCGraph[p]))
	}
	for n := 1; n <= c.NumNodes; n++ {
		add(fmt.Sprintf("nodeTainted[%d]", n), boolStr(s.NodeTainted[n]))
		add(fmt.Sprintf("nlcTainted[%d]", n), boolStr(s.NLCTainted[n]))
		add(fmt.Sprintf("kubeletUp[%d]", n), boolStr(s.KubeletUp[n]))
		add(fmt.Sprintf("nodeUp[%d]", n), boolStr(s.NodeUp[n]))
		add(fmt.Sprintf("nodeState[%d]", n), lifecycleNames[s.NodeState[n]])
	}
	add("revision", fmt.Sprint(s.Revision))
	for ctl := 1; ctl <= NumControllers; ctl++ {
		add(fmt.Sprintf("up[%q]", ControllerNames[ctl]), boolStr(s.Up[ctl]))
		add(fmt.Sprintf("watchOK[%q]", ControllerNames[ctl]), boolStr(s.WatchOK[ctl]))
		add(fmt.Sprintf("pending[%q]", ControllerNames[ctl]), pendingStr(s, ctl))
		add(fmt.Sprintf("cacheRev[%q]", ControllerNames[ctl]), fmt.Sprint(s.CacheRev[ctl]))
	}
	add("crashes", fmt.Sprint(s.Crashes))
	add("watchDrops", fmt.Sprint(s.WatchDrops))
	add("nodeFailures", fmt.Sprint(s.NodeFailures))
	add("evictions", fmt.Sprint(s.Evictions))
	add("scales", fmt.Sprint(s.Scales))
	add("deletes", fmt.Sprint(s.Deletes))
	add("nodeDeletes", fmt.Sprint(s.NodeDeletes))
	add("probeFailures", fmt.Sprint(s.ProbeFailures))
	add("completions", fmt.Sprint(s.Completions))
	return out
}

// Diff lists the variables that differ between a and b as "name: old -> new".
func (m *Model) Diff(a, b *State) []string {
	x, y := m.Bindings(a), m.Bindings(b)
	var out []string
	for i := range x {
		if x[i].Value != y[i].Value {
			out = append(out, fmt.Sprintf("%s: %s -> %s", x[i].Name, x[i].Value, y[i].Value))
		}
	}
	return out
}

// Summary renders the interesting part of s (objects that exist, sandboxes,
// faults) on a few lines, for the first state of a trace.
func (m *Model) Summary(s *State) []string {
	var out []string
	for _, b := range m.Bindings(s) {
		switch {
		case strings.HasSuffix(b.Value, `"Absent"`), b.Value == "0", b.Value == "<<>>", b.Value == noDeploymentView,
			b.Value == `"Live"` && strings.HasPrefix(b.Name, "nodeState"),
			b.Value == `"None"`, b.Value == "{}", b.Value == `"Pending"` && strings.HasPrefix(b.Name, "podPhase"):
			continue
		case b.Value == "FALSE" && !strings.HasPrefix(b.Name, "up[") && !strings.HasPrefix(b.Name, "nodeUp") &&
			!strings.HasPrefix(b.Name, "kubeletUp") && !strings.HasPrefix(b.Name, "watchOK"):
			continue
		case b.Value == "TRUE" && (strings.HasPrefix(b.Name, "up[") || strings.HasPrefix(b.Name, "nodeUp") ||
			strings.HasPrefix(b.Name, "kubeletUp") || strings.HasPrefix(b.Name, "watchOK")):
			continue
		}
		out = append(out, b.Name+" = "+b.Value)
	}
	if len(out) == 0 {
		out = append(out, "(no objects; every component, node and watch up)")
	}
	return out
}

// noDeploymentView is the rendering of a zero dcDeployment entry (nothing
// seen, or DeploymentLag = 0).
const noDeploymentView = `[state |-> "Absent", replicas |-> 0, version |-> 0]`

// kubeletViewStr renders a kubeletView value as its TLA+ pair.
func kubeletViewStr(v uint8) string {
	return fmt.Sprintf("<<%s, %d>>", lifecycleNames[KubeletSeenState(v)], KubeletSeenNode(v))
}
