package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
	"github.com/kubeproof/kubeproof/linearizability"
)

// TestCheckLinearizabilityInterrupted: an interrupt (the command's context
// ending, as SIGINT ends it in main) ends the recording as the duration
// would: the requests under way finish. They were cancelled halfway, so
// the interrupted writes were recorded as ambiguous ("context canceled")
// and client-go logged "Unexpected error when reading response body" at
// ERROR for a request cancelled while it read the answer, which the
// default --log-level warn shows.
func TestCheckLinearizabilityInterrupted(t *testing.T) {
	c, _ := clustertest.Start(t, clustertest.Options{})
	report := t.TempDir()
	cmd := newCheckCommand()
	var out bytes.Buffer
	cmd.SetOut(&out)
	cmd.SetArgs([]string{"linearizability", "--kubeconfig", c.AdminKubeconfig, "--duration", "60s", "--clients", "8",
		"--report", report, "--report-on-success"})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	time.AfterFunc(2*time.Second, cancel)
	logs := captureStderr(t, func() {
		if err := cmd.ExecuteContext(ctx); err != nil {
			t.Errorf("interrupted check: %v\n%s", err, out.String())
		}
	})
	if strings.Contains(logs, "level=ERROR") {
		t.Errorf("error logged by an interrupted check:\n%s", logs)
	}
	data, err := os.ReadFile(filepath.Join(report, "operations.json"))
	if err != nil {
		t.Fatal(err)
	}
	var ops []linearizability.Op
	if err := json.Unmarshal(data, &ops); err != nil {
		t.Fatal(err)
	}
	if len(ops) == 0 {
		t.Fatalf("no operations recorded:\n%s", out.String())
	}
	for _, o := range ops {
		if strings.Contains(o.Error, "context canceled") {
			t.Errorf("operation %d (%s %s) cancelled halfway by the interrupt: %s", o.ID, o.Kind, o.Key, o.Error)
		}
	}
}
