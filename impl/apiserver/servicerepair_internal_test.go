package apiserver

import (
	"testing"
	"time"
)

func TestRepairRetryDelay(t *testing.T) {
	for _, tc := range []struct {
		interval  time.Duration
		succeeded bool
		failures  int
		want      time.Duration
	}{
		{3 * time.Minute, true, 0, 3 * time.Minute},
		{3 * time.Minute, true, 7, 3 * time.Minute},
		{3 * time.Minute, false, 0, 100 * time.Millisecond},
		{3 * time.Minute, false, 1, 200 * time.Millisecond},
		{3 * time.Minute, false, 5, 3200 * time.Millisecond},
		{3 * time.Minute, false, 6, 5 * time.Second},
		{3 * time.Minute, false, 1000, 5 * time.Second},
		{20 * time.Millisecond, false, 3, 20 * time.Millisecond},
	} {
		if got := repairRetryDelay(tc.interval, tc.succeeded, tc.failures); got != tc.want {
			t.Errorf("repairRetryDelay(%v, %v, %d) = %v, want %v", tc.interval, tc.succeeded, tc.failures, got, tc.want)
		}
	}
}
