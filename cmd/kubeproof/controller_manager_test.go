package main

import (
	"io"
	"path/filepath"
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
