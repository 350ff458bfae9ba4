package linearizability

import (
	"context"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

var (
	long      = flag.Bool("lin.long", os.Getenv("LIN_LONG") != "", "run the long scenarios (make lin)")
	reportDir = flag.String("lin.report", os.Getenv("LIN_REPORT"), "write a report of every scenario (not only failing ones) under this directory")
)

// scenarioDuration is the length of a scenario: a few seconds normally,
// a minute with -lin.long.
func scenarioDuration() time.Duration {
	if *long {
		return time.Minute
	}
	return 3 * time.Second
}

// checkHistory checks h, logs the summary line and writes a report when
// the check fails (into the test's temp dir unless -lin.report is set,
// where every report goes).
func checkHistory(t *testing.T, h *History) *Result {
	t.Helper()
	// A short history checks in well under a second, also on a loaded
	// machine, since ambiguous writes are resolved before the search (see
	// ambiguous.go). The bound is generous; reaching it is a failure
	// (porcupine's Unknown is never a pass), with the per-key search's
	// size in the message.
	res := Check(h, CheckOptions{PorcupineTimeout: 2 * time.Minute})
	t.Log(Summary(h, res))
	dir := ""
	switch {
	case *reportDir != "":
		dir = filepath.Join(*reportDir, strings.ReplaceAll(t.Name(), "/", "_"))
	case !res.OK():
		dir, _ = os.MkdirTemp("", "lin-report-")
	}
	if dir != "" {
		if err := WriteReport(dir, h, res); err != nil {
			t.Errorf("writing report: %v", err)
		} else {
			t.Logf("report in %s", dir)
		}
	}
	return res
}

func requireOK(t *testing.T, h *History) {
	t.Helper()
	res := checkHistory(t, h)
	for i, v := range res.Violations {
		if i == 20 {
			t.Errorf("… and %d more", len(res.Violations)-20)
			break
		}
		t.Error(v)
	}
	if !res.OK() {
		t.Fatalf("history of %d operations is not consistent (porcupine: %s)", len(h.Ops), res.Linearizable)
	}
	if len(h.Ops) == 0 {
		t.Fatal("recorded no operations")
	}
}

func record(t *testing.T, cfg RecordConfig) *History {
	t.Helper()
	rec, err := NewRecorder(cfg)
	if err != nil {
		t.Fatal(err)
	}
	h, err := rec.Run(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return h
}

func TestEmbeddedEtcd(t *testing.T) {
	for _, tc := range []struct {
		name         string
		noWatchCache bool
	}{{"watchcache", false}, {"nowatchcache", true}} {
		t.Run(tc.name, func(t *testing.T) {
			c, _ := clustertest.Start(t, clustertest.Options{NoWatchCache: tc.noWatchCache})
			h := record(t, RecordConfig{Scenario: "embedded-" + tc.name, Servers: []*rest.Config{c.AdminConfig}, Namespace: "lin", Duration: scenarioDuration(), ExpiredExact: tc.noWatchCache})
			requireOK(t, h)
		})
	}
}
