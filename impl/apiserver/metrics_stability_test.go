package apiserver_test

import (
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestMetricsHelpStability: the API server's /metrics starts each help
// text with the metric's stability level, as kube-apiserver's
// component-base metrics do: STABLE request metrics, BETA and ALPHA API
// Priority and Fairness metrics, ALPHA service account counters and
// apiserver_resource_objects (the deprecated apiserver_storage_objects is
// hidden in 1.37, so absent).
// No scraped family lacks a level (the Go and process collectors aside,
// which upstream leaves bare too).
func TestMetricsHelpStability(t *testing.T) {
	reg := prometheus.NewRegistry()
	e := newEnv(t, func(c *apiserver.Config) {
		c.Metrics = reg
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
		c.EtcdCountMetricPollPeriod = 50 * time.Millisecond
	})
	e.do("GET", "/api/v1/namespaces/default/configmaps/missing", nil)
	e.do("POST", "/api/v1/namespaces/default/configmaps", []byte(`{"metadata":{"name":"m"}}`))
	want := []string{
		"# HELP apiserver_request_total [STABLE] Counter of apiserver requests",
		"# HELP apiserver_request_duration_seconds [STABLE] ",
		"# HELP apiserver_flowcontrol_dispatched_requests_total [BETA] ",
		"# HELP apiserver_flowcontrol_current_executing_requests [BETA] ",
		"# HELP apiserver_flowcontrol_work_estimated_seats [ALPHA] ",
		"# HELP serviceaccount_legacy_tokens_total [ALPHA] Cumulative legacy service account tokens used\n",
		"# HELP apiserver_resource_objects [ALPHA] ",
	}
	var body string
	for deadline := time.Now().Add(20 * time.Second); time.Now().Before(deadline); time.Sleep(50 * time.Millisecond) {
		body = string(e.do("GET", "/metrics", nil).body)
		if strings.Contains(body, "\napiserver_resource_objects{") {
			break
		}
	}
	for _, w := range want {
		if !strings.Contains(body, w) {
			t.Errorf("/metrics lacks %q", w)
		}
	}
	if strings.Contains(body, "apiserver_storage_objects") {
		t.Error("/metrics shows apiserver_storage_objects, hidden in kube-apiserver 1.37")
	}
	bare, err := stability.Unannotated(reg)
	if err != nil {
		t.Fatal(err)
	}
	if len(bare) > 0 {
		t.Errorf("families scraped without a stability level: %q", bare)
	}
}
