package metrics

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestHelpStability: the request metrics' help texts start with
// kube-apiserver's stability levels, as component-base writes them (all
// three are STABLE upstream), followed by kube-apiserver's help texts.
func TestHelpStability(t *testing.T) {
	rec := &stability.Recorder{Registerer: prometheus.NewRegistry()}
	if _, err := New(rec, testServed); err != nil {
		t.Fatal(err)
	}
	helps, err := stability.Helps(rec.Collectors()...)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range stability.Mismatches(helps, map[string]string{
		"apiserver_request_total":            "[STABLE] ",
		"apiserver_request_duration_seconds": "[STABLE] ",
		"apiserver_longrunning_requests":     "[STABLE] ",
	}) {
		t.Error(m)
	}
	for name, help := range map[string]string{
		"apiserver_request_total":            "[STABLE] Counter of apiserver requests broken out for each verb, dry run value, group, version, resource, scope, component, and HTTP response code.",
		"apiserver_request_duration_seconds": "[STABLE] Response latency distribution in seconds for each verb, dry run value, group, version, resource, subresource, scope and component.",
		"apiserver_longrunning_requests":     "[STABLE] Gauge of all active long-running apiserver requests broken out by verb, group, version, resource, scope and component. Not all requests are tracked this way.",
	} {
		if helps[name] != help {
			t.Errorf("%s help %q, want kube-apiserver's %q", name, helps[name], help)
		}
	}
}
