package gc

import (
	"testing"
	"time"
)

// TestPolicyEnabledByMaxAge: a high threshold of 100 turns the periodic
// image collection off only without a maximum age, as upstream's
// StartGarbageCollection (its ImageMaximumGCAge gate on, as by default):
// with imageMaximumGCAge set the collection still runs, to remove the
// images unused for longer than that. The zero policy stays off.
func TestPolicyEnabledByMaxAge(t *testing.T) {
	for _, tc := range []struct {
		p    Policy
		want bool
	}{
		{Policy{}, false},
		{Policy{HighThresholdPercent: 100, LowThresholdPercent: 80}, false},
		{Policy{HighThresholdPercent: 100, LowThresholdPercent: 80, MinAge: 2 * time.Minute, MaxAge: time.Hour}, true},
		{Policy{HighThresholdPercent: 85, LowThresholdPercent: 80, MinAge: 2 * time.Minute, MaxAge: time.Hour}, true},
		{DefaultPolicy, true},
	} {
		if got := tc.p.Enabled(); got != tc.want {
			t.Errorf("%+v: Enabled() = %v, want %v", tc.p, got, tc.want)
		}
	}
}
