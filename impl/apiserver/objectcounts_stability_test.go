package apiserver

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestObjectCountsHelpStability: apiserver_storage_objects is STABLE
// upstream and deprecated since 1.34.0, so while shown its help text
// starts "[STABLE] (Deprecated since 1.34.0) ";
// apiserver_resource_size_estimate_bytes is ALPHA.
func TestObjectCountsHelpStability(t *testing.T) {
	rec := &stability.Recorder{Registerer: prometheus.NewRegistry()}
	if _, err := newObjectCounts(rec, nil, nil, true, time.Second, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	helps, err := stability.Helps(rec.Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stability.Mismatches(helps, map[string]string{
		"apiserver_storage_objects":              "[STABLE] (Deprecated since 1.34.0) ",
		"apiserver_resource_size_estimate_bytes": "[ALPHA] ",
	}) {
		t.Error(m)
	}
}
