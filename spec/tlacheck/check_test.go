package tlacheck

import (
	"os"
	"strings"
	"testing"
)

func readModule(t *testing.T) string {
	t.Helper()
	b, err := os.ReadFile("../PodPipeline.tla")
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The module passes every check.
func TestPodPipelineIsWellFormed(t *testing.T) {
	for _, p := range Check(readModule(t)) {
		t.Error(p)
	}
}

// Each broken variant of the module is reported: the checks can fail.
func TestBrokenModulesAreReported(t *testing.T) {
	src := readModule(t)
	for _, tc := range []struct {
		name, old, new, want string
	}{
		{"undeclared identifier", "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n]", "KubeletReady(n) == nodeUp[n] /\\ kubeletUP[n]", "kubeletUP: undeclared identifier"},
		{"wrong arity", "/\\ KubeletLag = 1 /\\ KubeletReady(n)\n", "/\\ KubeletLag = 1 /\\ KubeletReady(n, p)\n", "KubeletReady takes 1 argument(s), given 2"},
		{"missing arguments", "/\\ KubeletLag = 1 /\\ KubeletReady(n)\n", "/\\ KubeletLag = 1 /\\ KubeletReady\n", "KubeletReady takes 1 argument(s), used without them"},
		{"arguments to a constant", "/\\ KubeletLag = 1 /\\ KubeletReady(n)\n", "/\\ KubeletLag(1) = 1 /\\ KubeletReady(n)\n", "KubeletLag takes no arguments"},
		{"bound variable out of scope", "    /\\ ProjKubelet(p)[2] = n \\/ kubeletView[p][2] = n\n", "    /\\ \\E q \\in Pods : q = p\n    /\\ ProjKubelet(q)[2] = n \\/ kubeletView[p][2] = n\n", "q: undeclared identifier (in KubeletObservePod)"},
		{"use before definition", "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n]", "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n] /\\ Spec", "Spec used in KubeletReady before it is defined"},
		{"unknown operator", "podNode[p] = n /\\ sandboxes[p] = 0\n", "podNode[p] \\In Nodes /\\ sandboxes[p] = 0\n", `unknown operator \In`},
		{"unbalanced bracket", "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n]", "KubeletReady(n) == nodeUp[n] /\\ kubeletUp[n", `"[" is never closed`},
		{"IF without ELSE", "THEN revision + 1 ELSE revision\n    /\\ Deliver", "THEN revision + 1\n    /\\ Deliver", "IF without ELSE"},
		{"LET without IN", "sc == after(\"Scheduler\") IN", "sc == after(\"Scheduler\")", "LET without IN"},
		{"variable not in vars", "viewVars == <<kubeletView, dcAvailable, dcDeployment, nlcTainted, gcGraph>>", "viewVars == <<kubeletView, dcAvailable, dcDeployment, gcGraph>>", "variable nlcTainted is not in vars"},
		{"action leaves a variable out", "    /\\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows, rscView, rscExpect, schedView, schedAssumed,\n                   dcAvailable, dcDeployment, nlcTainted, gcGraph, pending, cacheRev, envVars, budgetVars>>",
			"    /\\ UNCHANGED <<storeVars, runtimeVars, kubeletKnows, rscView, rscExpect, schedView, schedAssumed,\n                   dcAvailable, dcDeployment, nlcTainted, gcGraph, pending, envVars, budgetVars>>", "KubeletObservePod: variable cacheRev not assigned or UNCHANGED on every path"},
		{"variable constrained twice", "    /\\ kubeletView' = [kubeletView EXCEPT ![p] = ProjKubelet(p)]\n", "    /\\ kubeletView' = [kubeletView EXCEPT ![p] = ProjKubelet(p)]\n    /\\ UNCHANGED kubeletView\n", "KubeletObservePod: variable kubeletView constrained 2 times"},
		{"one branch leaves a variable out", "              /\\ rscExpect' = [p \\in Pods |-> \"None\"]\n              /\\ UNCHANGED <<schedView, schedAssumed>>",
			"              /\\ rscExpect' = [p \\in Pods |-> \"None\"]\n              /\\ UNCHANGED <<schedView>>", "variable schedAssumed not assigned or UNCHANGED on every path"},
		{"Init leaves a variable out", "    /\\ kubeletView = [p \\in Pods |-> NothingSeen]\n", "", "Init: variable kubeletView not initialised"},
		{"mixed junctions", "/\\ ProjKubelet(p)[2] = n \\/ kubeletView[p][2] = n", "/\\ ProjKubelet(p)[2] = n \\/ kubeletView[p][2] = n /\\ TRUE", "precedence conflict"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if !strings.Contains(src, tc.old) {
				t.Fatalf("the module no longer contains %q", tc.old)
			}
			broken := strings.Replace(src, tc.old, tc.new, 1)
			var got []string
			for _, p := range Check(broken) {
				got = append(got, p.String())
			}
			if !strings.Contains(strings.Join(got, "\n"), tc.want) {
				t.Fatalf("want a problem containing %q, got:\n%s", tc.want, strings.Join(got, "\n"))
			}
		})
	}
}

// The checker sees every action of Next (it found none missing only
// because it looked).
func TestEveryActionOfNextIsChecked(t *testing.T) {
	m, err := Parse(readModule(t))
	if err != nil {
		t.Fatal(err)
	}
	m.checkActions()
	cv := &coverer{m: m, memo: map[string]cover{}, stack: map[string]bool{}}
	n := 0
	for _, name := range m.order {
		if strings.Contains(name, "Kubelet") || strings.HasPrefix(name, "Deployment") {
			if c := cv.def(name); len(c) == len(m.variables) {
				n++
			}
		}
	}
	if n < 15 || len(m.variables) < 30 {
		t.Fatalf("%d kubelet/deployment actions with full coverage of %d variables: the checker is not looking", n, len(m.variables))
	}
}
