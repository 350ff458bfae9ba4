package server

import (
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestMetricsHelpStability: every metric of the kubelet API's /metrics
// carries its upstream stability level (all ALPHA);
// kubelet_http_requests_total and kubelet_running_pods had none.
func TestMetricsHelpStability(t *testing.T) {
	m := NewMux(Options{})
	helps, err := stability.Helps(m.requests, runningPodsCollector{m}, httpFallbacksCollector{m}, certificateCollector{m, time.Now})
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range stability.Mismatches(helps, map[string]string{
		"kubelet_http_requests_total":                    "[ALPHA] ",
		"kubelet_running_pods":                           "[ALPHA] ",
		"kubelet_lifecycle_handler_http_fallbacks_total": "[ALPHA] ",
		"kubelet_certificate_manager_client_ttl_seconds": "[ALPHA] ",
		"kubelet_server_expiration_renew_errors":         "[ALPHA] ",
	}) {
		t.Error(msg)
	}
}
