package main

import (
	"bytes"
	"path/filepath"
	"strings"
	"testing"
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
