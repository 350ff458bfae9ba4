package metrics

import (
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/internal/stability"
)

// TestHelpStability: the scheduler's metrics are all STABLE upstream, so
// their help texts start with "[STABLE] "; a scrape of the registry shows
// no family without a level but the Go and process collectors', which
// upstream registers raw too.
func TestHelpStability(t *testing.T) {
	m := New()
	helps, err := stability.Helps(m.AttemptDuration, m.ExtensionPointDuration, m.ScheduleAttempts, m.PendingPods, m.PreemptionVictims)
	if err != nil {
		t.Fatal(err)
	}
	for _, msg := range stability.Mismatches(helps, map[string]string{
		"scheduler_scheduling_attempt_duration_seconds":        "[STABLE] ",
		"scheduler_framework_extension_point_duration_seconds": "[STABLE] ",
		"scheduler_schedule_attempts_total":                    "[STABLE] ",
		"scheduler_pending_pods":                               "[STABLE] ",
		"scheduler_preemption_victims":                         "[STABLE] ",
	}) {
		t.Error(msg)
	}
	m.ObserveAttempt(ResultScheduled, "default-scheduler", time.Millisecond)
	m.SetPending(1, 0, 0, 0)
	bare, err := stability.Unannotated(m.Registry)
	if err != nil {
		t.Fatal(err)
	}
	if len(bare) > 0 {
		t.Errorf("families scraped without a stability level: %q", bare)
	}
}
