package bench

import (
	"sort"
	"time"
)

// Latencies summarizes a set of operation durations.
type Latencies struct {
	P50, P90, P99, Max time.Duration
}

// Summarize computes percentiles of ds (nearest-rank). ds is sorted in place.
func Summarize(ds []time.Duration) Latencies {
	if len(ds) == 0 {
		return Latencies{}
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	return Latencies{
		P50: percentile(ds, 50),
		P90: percentile(ds, 90),
		P99: percentile(ds, 99),
		Max: ds[len(ds)-1],
	}
}

// percentile of sorted ds by the nearest-rank method.
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100 // ceil(p/100 * n)
	if rank < 1 {
		rank = 1
	}
	return sorted[rank-1]
}

// quantiles returns ds (sorted in place) at percentiles 0, 1, …, 100
// (nearest rank; percentile 0 is the minimum).
func quantiles(ds []time.Duration) []time.Duration {
	if len(ds) == 0 {
		return nil
	}
	sort.Slice(ds, func(i, j int) bool { return ds[i] < ds[j] })
	out := make([]time.Duration, 101)
	for p := range out {
		out[p] = percentile(ds, p)
	}
	return out
}
