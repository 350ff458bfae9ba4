package bench

import (
	"testing"
	"time"
)

func TestSummarizeNearestRank(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- { // 1ms..100ms, unsorted
		ds = append(ds, time.Duration(i)*time.Millisecond)
	}
	got := Summarize(ds)
	want := Latencies{P50: 50 * time.Millisecond, P90: 90 * time.Millisecond, P99: 99 * time.Millisecond, Max: 100 * time.Millisecond}
	if got != want {
		t.Fatalf("Summarize = %+v, want %+v", got, want)
	}
	if (Summarize([]time.Duration{7})) != (Latencies{P50: 7, P90: 7, P99: 7, Max: 7}) {
		t.Fatal("single sample")
	}
	if (Summarize(nil)) != (Latencies{}) {
		t.Fatal("empty")
	}
}
