package main

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// TestEndpointUpdatesBatchPeriodFlag: kube-controller-manager's
// --endpoint-updates-batch-period, default 0 (no batching), on
// controller-manager and on up, taking a duration.
func TestEndpointUpdatesBatchPeriodFlag(t *testing.T) {
	for name, cmd := range map[string]*cobra.Command{"controller-manager": newControllerManagerCommand(), "up": newUpCommand()} {
		f := cmd.Flags().Lookup("endpoint-updates-batch-period")
		if f == nil {
			t.Errorf("%s has no --endpoint-updates-batch-period", name)
			continue
		}
		if f.DefValue != "0s" || f.Value.Type() != "duration" {
			t.Errorf("%s: --endpoint-updates-batch-period default %q type %s, want 0s duration", name, f.DefValue, f.Value.Type())
		}
		if err := cmd.Flags().Parse([]string{"--endpoint-updates-batch-period=500ms"}); err != nil || f.Value.String() != "500ms" {
			t.Errorf("%s: parsing 500ms: %v %s", name, err, f.Value)
		}
	}
}

// TestControllersFlagRefusesUnknownNames: as kube-controller-manager, a
// --controllers name that is no controller's is refused before anything
// is loaded ("foo" ran no controller at all without a word before).
func TestControllersFlagRefusesUnknownNames(t *testing.T) {
	cmd := newControllerManagerCommand()
	cmd.SetOut(io.Discard)
	cmd.SetErr(io.Discard)
	cmd.SetArgs([]string{"--kubeconfig", filepath.Join(t.TempDir(), "missing"), "--controllers", "*,-deploymnet,foo"})
	err := cmd.Execute()
	const want = `["deploymnet" is not in the list of known controllers, "foo" is not in the list of known controllers]`
	if err == nil || err.Error() != want {
		t.Fatalf("error %v, want %s", err, want)
	}
}

// TestControllersFlagTakesEveryUpstreamName: kubeadm runs
// kube-controller-manager with --controllers=*,bootstrapsigner,tokencleaner;
// every name and alias kube-controller-manager 1.37 knows is accepted (it
// refuses only unknown names), and the controllers an entry enables that
// kubeproof does not have are named in one warning before the rest start
// (here: the command goes on to load its kubeconfig).
func TestControllersFlagTakesEveryUpstreamName(t *testing.T) {
	for _, tc := range []struct {
		controllers string
		warned      []string
	}{
		{"*,bootstrapsigner,tokencleaner", []string{"bootstrap-signer-controller", "token-cleaner-controller"}},
		{"*,-ttl,job-controller,-deployment", []string{"job-controller"}},
		{"*,-bootstrapsigner", nil},
	} {
		stderr := captureStderr(t, func() {
			cmd := newControllerManagerCommand()
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			cmd.SetArgs([]string{"--kubeconfig", filepath.Join(t.TempDir(), "missing"), "--controllers", tc.controllers})
			if err := cmd.Execute(); err == nil || !strings.Contains(err.Error(), "loading kubeconfig") {
				t.Errorf("--controllers %s: error %v, want it to go on to load the kubeconfig", tc.controllers, err)
			}
		})
		warnings := strings.Count(stderr, "level=WARN")
		switch {
		case len(tc.warned) == 0 && warnings != 0:
			t.Errorf("--controllers %s: warned: %s", tc.controllers, stderr)
		case len(tc.warned) > 0 && warnings != 1:
			t.Errorf("--controllers %s: log %q, want one warning", tc.controllers, stderr)
		}
		for _, name := range tc.warned {
			if !strings.Contains(stderr, name) {
				t.Errorf("--controllers %s: the warning %q does not name %s", tc.controllers, stderr, name)
			}
		}
	}
}

// captureStderr runs f with os.Stderr (where the commands' slog handler
// writes) sent to a file, and returns what was written.
func captureStderr(t *testing.T, f func()) string {
	t.Helper()
	file, err := os.CreateTemp(t.TempDir(), "stderr")
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	saved, savedLogger := os.Stderr, slog.Default()
	os.Stderr = file
	defer func() { os.Stderr = saved; slog.SetDefault(savedLogger) }()
	f()
	b, err := os.ReadFile(file.Name())
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}
