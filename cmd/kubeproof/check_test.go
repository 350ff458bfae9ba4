package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

func TestCheckLinearizabilityCommand(t *testing.T) {
	c, _ := clustertest.Start(t, clustertest.Options{})
	report := t.TempDir()
	cmd := newCheckCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"linearizability", "--kubeconfig", c.AdminKubeconfig, "--duration", "2s", "--clients", "4", "--report", report, "--report-on-success"})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("check linearizability: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), "result=PASS") {
		t.Errorf("no PASS summary line:\n%s", out.String())
	}
	for _, f := range []string{"history.html", "operations.json", "watches.json", "violations.json", "summary.txt"} {
		if st, err := os.Stat(filepath.Join(report, f)); err != nil || st.Size() == 0 {
			t.Errorf("report file %s missing or empty: %v", f, err)
		}
	}
}
