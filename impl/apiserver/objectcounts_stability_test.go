package apiserver

import (
	"log/slog"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestObjectCountsHelpStability: kube-apiserver 1.37 counts stored
// objects in apiserver_resource_objects (ALPHA; its STABLE
// apiserver_storage_objects, deprecated since 1.34.0, is hidden in 1.37),
// and apiserver_resource_size_estimate_bytes is ALPHA; the help texts are
// kube-apiserver's.
func TestObjectCountsHelpStability(t *testing.T) {
	rec := &stability.Recorder{Registerer: prometheus.NewRegistry()}
	if _, err := newObjectCounts(rec, nil, nil, true, time.Second, slog.New(slog.DiscardHandler)); err != nil {
		t.Fatal(err)
	}
	helps, err := stability.Helps(rec.Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"apiserver_resource_objects":             "[ALPHA] Number of stored objects at the time of last check split by kind. In case of a fetching error, the value will be -1.",
		"apiserver_resource_size_estimate_bytes": "[ALPHA] Estimated size of stored objects in database. Estimate is based on sum of last observed sizes of serialized objects. In case of a fetching error, the value will be -1.",
	}
	for name, help := range want {
		if helps[name] != help {
			t.Errorf("%s help %q, want %q", name, helps[name], help)
		}
	}
	if h, ok := helps["apiserver_storage_objects"]; ok {
		t.Errorf("apiserver_storage_objects (%q) registered; kube-apiserver 1.37 hides it", h)
	}
}
