package main

import (
	"bytes"
	"strings"
	"testing"
)

func runModel(t *testing.T, args ...string) (string, error) {
	t.Helper()
	cmd := newModelCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetErr(&out)
	cmd.SetArgs(args)
	err := cmd.Execute()
	return out.String(), err
}

func TestModelCheckSmallPasses(t *testing.T) {
	out, err := runModel(t, "check", "--config", "Small", "--quiet")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "configuration") || !strings.Contains(out, "Small") || !strings.Contains(out, "ok") {
		t.Fatalf("no summary table:\n%s", out)
	}
}

func TestModelCheckMutantFailsWithTrace(t *testing.T) {
	out, err := runModel(t, "check", "--config", "Small", "--quiet", "--symmetry=false", "--mutant", "SchedulerIgnoresCapacity")
	if err == nil {
		t.Fatalf("mutant not reported as a failure:\n%s", out)
	}
	// Small has 1 replica and capacity 1: the rolling update's surge pod
	// is what overcommits a node.
	if !strings.Contains(out, "SCHED-2 violated") || !strings.Contains(out, "SchedulerBindPod(") || !strings.Contains(out, "VIOLATED SCHED-2") {
		t.Fatalf("no trace:\n%s", out)
	}
}

func TestModelList(t *testing.T) {
	out, err := runModel(t, "list")
	if err != nil || !strings.Contains(out, "RollingUpdate") || !strings.Contains(out, "KUBELET-3") || !strings.Contains(out, "KubeletReusesIP") {
		t.Fatalf("%v\n%s", err, out)
	}
}

// TestModelCheckMutantFlagHelp: pflag reads the first back-quoted word of
// a flag's usage as its value's name, so the help line once read
// "--mutant kubeproof model list   run a deliberately broken variant (see
// kubeproof model list)".
func TestModelCheckMutantFlagHelp(t *testing.T) {
	out, err := runModel(t, "check", "--help")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 1 && f[0] == "--mutant" {
			if f[1] != "NAME" || !strings.Contains(line, "(see kubeproof model list)") {
				t.Errorf("help line %q, want --mutant NAME and a pointer to kubeproof model list", line)
			}
			return
		}
	}
	t.Fatalf("no --mutant line:\n%s", out)
}
