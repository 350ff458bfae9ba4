package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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

// TestCheckLinearizabilityRefusesSizes: sizes the recorder would replace
// by its defaults (or a run without end) are refused before anything is
// read or sent, and so is a stray argument; before, --clients 0 ran with
// 8 clients, --keys 0 with 5, and --duration 0 recorded until killed.
func TestCheckLinearizabilityRefusesSizes(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "no-such.kubeconfig")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--clients", "0"}, "--clients must be at least 1, got 0"},
		{[]string{"--clients", "-1"}, "--clients must be at least 1, got -1"},
		{[]string{"--keys", "0"}, "--keys must be at least 1, got 0"},
		{[]string{"--watchers", "-1"}, "--watchers must not be negative, got -1"},
		{[]string{"--duration", "0s"}, "--duration must be positive, got 0s"},
		{[]string{"--duration", "-1s"}, "--duration must be positive, got -1s"},
		{[]string{"--clients", "0", "--keys", "0"}, "--clients must be at least 1, got 0\n--keys must be at least 1, got 0"},
		{[]string{"extra"}, `unknown command "extra" for "check linearizability"`},
	} {
		cmd := newCheckCommand()
		var out bytes.Buffer
		cmd.SetOut(&out)
		cmd.SetErr(&out)
		cmd.SetArgs(append([]string{"linearizability", "--kubeconfig", missing}, tc.args...))
		err := cmd.Execute()
		if err == nil || err.Error() != tc.want {
			t.Errorf("%v: error %v, want %q", tc.args, err, tc.want)
		}
	}
}

// TestCheckLinearizabilityNoWatchers: --watchers 0 records no watch
// stream (the recorder's own 0 means its default of 3).
func TestCheckLinearizabilityNoWatchers(t *testing.T) {
	c, _ := clustertest.Start(t, clustertest.Options{})
	cmd := newCheckCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"linearizability", "--kubeconfig", c.AdminKubeconfig, "--duration", "1s", "--clients", "2", "--watchers", "0", "--report", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("check linearizability: %v\n%s", err, out.String())
	}
	if !strings.Contains(out.String(), " watches=0 ") || !strings.Contains(out.String(), "result=PASS") {
		t.Errorf("want a PASS with watches=0:\n%s", out.String())
	}
}

// TestCheckLinearizabilityCleansGivenNamespace: with --namespace the
// namespace stays, but the run's ConfigMaps go (they were left behind,
// five more after every run in a namespace a CI job reuses).
func TestCheckLinearizabilityCleansGivenNamespace(t *testing.T) {
	c, cs := clustertest.Start(t, clustertest.Options{})
	cmd := newCheckCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"linearizability", "--kubeconfig", c.AdminKubeconfig, "--duration", "1s", "--clients", "2", "--namespace", "default", "--report", t.TempDir()})
	if err := cmd.Execute(); err != nil {
		t.Fatalf("check linearizability: %v\n%s", err, out.String())
	}
	list, err := cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, cm := range list.Items {
		if strings.HasPrefix(cm.Name, "lin-") {
			t.Errorf("ConfigMap %s left in the given namespace", cm.Name)
		}
	}
	if _, err := cs.CoreV1().Namespaces().Get(t.Context(), "default", metav1.GetOptions{}); err != nil {
		t.Errorf("the given namespace: %v", err)
	}
}
