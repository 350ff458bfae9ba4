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

// TestModelCheckRefusesBadNumbers: --workers 0 is GOMAXPROCS and a
// positive number that many workers; a negative one was taken as 0.
// --max-states 0 is no limit; a negative one was taken as none. A
// --progress-interval of 0 or less was taken as 5 s.
func TestModelCheckRefusesBadNumbers(t *testing.T) {
	for _, args := range [][]string{{"--workers", "-1"}, {"--max-states", "-5"}, {"--progress-interval", "0s"}, {"--progress-interval", "-1s"}} {
		out, err := runModel(t, append([]string{"check", "--config", "Small", "--quiet"}, args...)...)
		if err == nil || !strings.Contains(err.Error(), args[0]) || strings.Contains(out, "checking Small") {
			t.Errorf("%v: err %v, want a usage error naming %s before any check\n%s", args, err, args[0], out)
		}
	}
	if out, err := runModel(t, "check", "--config", "Small", "--quiet", "--workers", "1"); err != nil {
		t.Errorf("--workers 1: %v\n%s", err, out)
	}
}

// TestModelCheckMutantWithoutSymmetry: symmetry reduction is sound for the
// specification's actions only (model/encode.go: a broken action may break
// the symmetry), so a mutant runs without it unless asked, and asking for
// both is refused.
func TestModelCheckMutantWithoutSymmetry(t *testing.T) {
	out, err := runModel(t, "check", "--config", "Small", "--quiet", "--mutant", "SchedulerIgnoresCapacity")
	if err == nil || !strings.Contains(out, "checking Small (symmetry false)") || !strings.Contains(out, "VIOLATED SCHED-2") {
		t.Errorf("--mutant alone: %v\n%s", err, out)
	}
	out, err = runModel(t, "check", "--config", "Small", "--quiet", "--symmetry", "--mutant", "SchedulerIgnoresCapacity")
	if err == nil || !strings.Contains(err.Error(), "--symmetry") || strings.Contains(out, "checking Small") {
		t.Errorf("--symmetry with --mutant: err %v, want a usage error before any check\n%s", err, out)
	}
}

// TestModelCheckMutantNotCaughtWarns: the search is exhaustive, so a
// mutant that no configuration state shows cannot be shown by that
// configuration at all (Small has no evictions: MaxEvictions = 0). The run
// said "ok" like a correct model; it now says so plainly.
func TestModelCheckMutantNotCaughtWarns(t *testing.T) {
	out, err := runModel(t, "check", "--config", "Small", "--quiet", "--mutant", "KubeletFailsPodBeforeStop")
	if err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	if !strings.Contains(out, "mutant KubeletFailsPodBeforeStop was not caught in configuration Small") ||
		!strings.Contains(out, "cannot show it") || !strings.Contains(out, "KUBELET-8") {
		t.Errorf("no warning that Small cannot show the mutant:\n%s", out)
	}
	if out, err := runModel(t, "check", "--config", "Small", "--quiet"); err != nil || strings.Contains(out, "not caught") {
		t.Errorf("the specification itself: %v\n%s", err, out)
	}
}

// TestModelCheckMutantOwnConfig: --mutant without --config checks the
// mutant's own small configuration (model.MutantConfig), where its bug
// shows. Before, it checked the standard configurations without symmetry
// reduction: minutes and gigabytes (--max-states keeps that failure short).
func TestModelCheckMutantOwnConfig(t *testing.T) {
	out, err := runModel(t, "check", "--quiet", "--max-states", "200000", "--mutant", "KubeletFailsPodBeforeStop")
	if err == nil || !strings.Contains(err.Error(), "properties violated") {
		t.Fatalf("err %v, want the mutant's violation\n%s", err, out)
	}
	for _, want := range []string{"checking mutant-KubeletFailsPodBeforeStop", "KUBELET-8 violated"} {
		if !strings.Contains(out, want) {
			t.Errorf("no %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "checking RollingUpdate") {
		t.Errorf("standard configurations checked:\n%s", out)
	}
}

// TestModelCheckUnknownConfig: a configuration name spec/ lacks is refused
// before anything is checked, with the names there are (as model list
// prints them). Before, the error was only "open Nope.cfg: file does not
// exist", and --config Small,Nope checked Small first.
func TestModelCheckUnknownConfig(t *testing.T) {
	out, err := runModel(t, "check", "--config", "Small,Nope", "--quiet")
	if err == nil {
		t.Fatalf("--config Small,Nope: no error\n%s", out)
	}
	if strings.Contains(out, "checking Small") {
		t.Errorf("Small checked before Nope was refused:\n%s", out)
	}
	for _, want := range []string{"configuration Nope", "no spec/Nope.cfg", "Small", "RollingUpdate", "Deletion"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}
