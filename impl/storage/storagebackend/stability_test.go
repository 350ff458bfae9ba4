package storagebackend

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestTerminatedWatchersHelpStability: apiserver_terminated_watchers_total
// is ALPHA upstream.
func TestTerminatedWatchersHelpStability(t *testing.T) {
	rec := &stability.Recorder{Registerer: prometheus.NewRegistry()}
	if _, err := registerTerminatedWatchers(rec); err != nil {
		t.Fatal(err)
	}
	helps, err := stability.Helps(rec.Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stability.Mismatches(helps, map[string]string{"apiserver_terminated_watchers_total": "[ALPHA] "}) {
		t.Error(m)
	}
}
