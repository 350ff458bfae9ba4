package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestBenchRefusesWorkloadsUpFront: the tables are printed once every
// workload has run, so a list that cannot run is refused before the first
// one starts. Before, `bench checkers nope` ran checkers, then failed on
// "nope" and printed no table; `bench --kubeconfig F writes startup` ran
// writes against F first; and apiserver-memory ignored --kubeconfig,
// measuring a server of its own.
func TestBenchRefusesWorkloadsUpFront(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such.kubeconfig")
	for _, tc := range []struct {
		args []string
		want []string
	}{
		{[]string{"--checker-configs", "Small", "--history-sizes", "100", "checkers", "nope"},
			[]string{`unknown workload "nope"`}},
		{[]string{"--checker-configs", "Small", "--history-sizes", "100", "checkers", "scheduling:Nope"},
			[]string{`no scheduling workload "Nope" (have `}},
		{[]string{"--kubeconfig", missing, "writes", "apiserver-memory", "node-memory", "startup"},
			[]string{
				"apiserver-memory runs its own API server process; it does not take --kubeconfig",
				"node-memory runs its own API server and node agent processes; it does not take --kubeconfig",
				"startup runs its own simulated nodes in-process; it does not take --kubeconfig",
			}},
	} {
		cmd := newBenchCommand()
		cmd.SilenceUsage = true
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(tc.args)
		err := cmd.Execute()
		if err == nil {
			t.Errorf("%v: no error\n%s", tc.args, out.String())
			continue
		}
		for _, want := range tc.want {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("%v: error %q lacks %q", tc.args, err, want)
			}
		}
		if strings.Contains(out.String(), " took ") {
			t.Errorf("%v: a workload ran before the refusal:\n%s", tc.args, out.String())
		}
	}
}

// TestBenchContext: with --kubeconfig, --context picks the kubeconfig's
// context (before, only its current-context could be benchmarked: unknown
// flag --context); an unknown context is refused before any workload runs,
// and --context without --kubeconfig (the workloads' own servers) too.
func TestBenchContext(t *testing.T) {
	c, _ := clustertest.Start(t, clustertest.Options{})
	twoContexts := kubeconfigWithBrokenCurrent(t, c.AdminKubeconfig)
	good, err := clientcmd.LoadFromFile(c.AdminKubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) (string, error) {
		cmd := newBenchCommand()
		cmd.SilenceUsage = true
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(args)
		err := cmd.Execute()
		return out.String(), err
	}
	out, err := run("--kubeconfig", twoContexts, "--context", good.CurrentContext, "--clients", "1", "--duration", "300ms", "writes")
	if err != nil || !strings.Contains(out, "apiserver") || strings.Contains(out, "first error") {
		t.Errorf("--context %s: %v\n%s", good.CurrentContext, err, out)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--kubeconfig", twoContexts, "--context", "nope", "writes"}, `context "nope" does not exist`},
		{[]string{"--context", good.CurrentContext, "writes"}, "--context needs --kubeconfig"},
	} {
		out, err := run(tc.args...)
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
		if strings.Contains(out, " took ") {
			t.Errorf("%v: a workload ran before the refusal:\n%s", tc.args, out)
		}
	}
}
