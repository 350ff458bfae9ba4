package flowcontrol

import (
	"testing"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestMetricsHelpStability: API Priority and Fairness's metrics carry
// kube-apiserver's stability levels: BETA for the request, seat and
// nominal limit metrics upstream promoted, ALPHA for the borrowing and
// estimate ones (current_limit_seats included).
func TestMetricsHelpStability(t *testing.T) {
	rec := &stability.Recorder{Registerer: prometheus.NewRegistry()}
	if _, err := newMetrics(rec); err != nil {
		t.Fatal(err)
	}
	helps, err := stability.Helps(append(rec.Collectors(), demandCollector{})...)
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{}
	for _, n := range []string{"current_executing_requests", "current_executing_seats", "current_inqueue_requests",
		"rejected_requests_total", "dispatched_requests_total", "request_wait_duration_seconds", "nominal_limit_seats"} {
		want["apiserver_flowcontrol_"+n] = "[BETA] "
	}
	for _, n := range []string{"current_limit_seats", "lower_limit_seats", "upper_limit_seats", "target_seats",
		"demand_seats", "demand_seats_high_watermark", "demand_seats_average", "demand_seats_stdev", "demand_seats_smoothed",
		"seat_fair_frac", "work_estimated_seats", "watch_count_samples"} {
		want["apiserver_flowcontrol_"+n] = "[ALPHA] "
	}
	if len(helps) != len(want) {
		t.Errorf("%d metrics described, want %d", len(helps), len(want))
	}
	for _, m := range stability.Mismatches(helps, want) {
		t.Error(m)
	}
}
