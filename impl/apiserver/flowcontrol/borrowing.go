package flowcontrol

import (
	"errors"
	"math"
	"slices"
	"time"
)

// Borrowing by demand, as kube-apiserver's configuration controller does it
// (KEP 1040): each level has a nominal limit (its share of the server's
// seats), a lower limit (nominal less its lendable seats) and an upper one
// (nominal plus what it may borrow: round(nominal*borrowingLimitPercent/100),
// the server's total when unset). The seats a level may use now, its
// current limit, are re-divided every BorrowingAdjustmentPeriod from each
// level's seat demand (seats in use plus seats waiting) over the period:
// its time-weighted average, standard deviation and high watermark. The
// envelope average+deviation is smoothed (max(envelope, 0.977*smoothed +
// 0.023*envelope): a five-minute half-life); a level's target is its
// smoothed demand, at least its lower bound max(lower limit,
// min(nominal, high watermark)); then the sum of the nominal limits is
// shared out in proportion to the targets, each level kept between its
// lower bound and its upper limit (allocate), and rounded.

// BorrowingAdjustmentPeriod is how often the current limits are re-divided
// (kube-apiserver's borrowingAdjustmentPeriod).
const BorrowingAdjustmentPeriod = 10 * time.Second

// demandSmoothing weighs the past in the smoothed demand (kube-apiserver's
// seatDemandSmoothingCoefficient).
const demandSmoothing = 0.977

// demandIntegrator accumulates a level's seat demand over time since the
// period began (the level's sync feeds it).
type demandIntegrator struct {
	start       time.Time
	sum, sumSq  float64 // of demand * seconds, demand² * seconds
	highest     float64
	initialized bool
}

// add counts demand x held for dt seconds.
func (in *demandIntegrator) add(x, dt float64) {
	in.sum += x * dt
	in.sumSq += x * x * dt
	in.highest = max(in.highest, x)
}

// demandBuckets are the upper bounds of apiserver_flowcontrol_demand_seats'
// buckets (kube-apiserver's).
var demandBuckets = [...]float64{0.2, 0.4, 0.6, 0.8, 1, 1.2, 1.4, 1.7, 2, 2.8, 4, 6}

// demandHistogram is a level's seat demand over its current limit as a
// timing histogram, as kube-apiserver's apiserver_flowcontrol_demand_seats
// (a timing ratio histogram): every nanosecond observes the ratio then, so
// each count is in nanoseconds and the sum in ratio-nanoseconds. The
// denominator is the current limit, or a tenth of the server's seats (at
// least 1) while that is 0, as kube-apiserver sets it.
type demandHistogram struct {
	counts [len(demandBuckets)]uint64 // per bucket, not cumulative
	count  uint64
	sum    float64
}

// observe counts ratio x held for ns nanoseconds.
func (h *demandHistogram) observe(x float64, ns uint64) {
	h.count += ns
	h.sum += x * float64(ns)
	for i, b := range demandBuckets {
		if x <= b {
			h.counts[i] += ns
			return
		}
	}
}

// demandDenominator is what l's demand is divided by in its demand
// histogram: its current limit, or a tenth of the server's seats (at
// least 1) while that is 0.
func (l *level) demandDenominator() float64 {
	if l.current > 0 {
		return float64(l.current)
	}
	return max(1, math.Round(float64(l.serverSeats)/10))
}

// DemandStats are a level's seat demand statistics as of its last
// adjustment.
type DemandStats struct {
	Average, StdDev, HighWatermark, Smoothed float64
}

// endPeriod folds the period ending at now into stats and starts the next
// one with demand x.
func (in *demandIntegrator) endPeriod(now time.Time, x float64, stats *DemandStats) {
	stats.HighWatermark = in.highest
	if d := now.Sub(in.start).Seconds(); in.initialized && d > 0 {
		avg := in.sum / d
		dev := math.Sqrt(max(in.sumSq/d-avg*avg, 0))
		stats.Average, stats.StdDev = avg, dev
		envelope := avg + dev
		stats.Smoothed = max(envelope, demandSmoothing*stats.Smoothed+(1-demandSmoothing)*envelope)
	}
	// A Dispatcher not yet given a time (NewDispatcher) starts counting
	// at its first sync.
	*in = demandIntegrator{start: now, highest: x, initialized: !now.IsZero()}
}

// allocItem is one level in allocate: its target and the bounds of what
// it may get.
type allocItem struct {
	target, lower, upper float64
}

// minTarget stands in for a target of zero, so that proportions stay
// defined.
const minTarget = 0.001

// allocate shares total out among items: item i gets clamp(p*target_i,
// lower_i, upper_i), with the one fair proportion p that makes them sum to
// total. It returns the allocations and p (the "fair fraction"), or an
// error when the bounds cannot sum to total or an item is inconsistent.
// When the lower bounds alone reach total every item gets its lower bound,
// when the upper bounds alone do not exceed it, its upper bound.
func allocate(total float64, items []allocItem) ([]float64, float64, error) {
	lowSum, highSum := 0.0, 0.0
	targets := make([]float64, len(items))
	var bounds []float64 // the proportions at which an item reaches a bound
	for i, it := range items {
		if it.lower < 0 || it.upper < it.lower || it.target < it.lower {
			return nil, 0, errors.New("flowcontrol: allocation item with inconsistent bounds")
		}
		targets[i] = max(it.target, minTarget)
		lowSum += it.lower
		highSum += it.upper
		bounds = append(bounds, it.lower/targets[i], it.upper/targets[i])
	}
	const epsilon = 1e-7
	if lowSum-total > epsilon || total-highSum > epsilon {
		return nil, 0, errors.New("flowcontrol: the levels' bounds cannot sum to the seats to share")
	}
	slices.Sort(bounds)
	sumAt := func(p float64) float64 {
		s := 0.0
		for i, it := range items {
			s += min(max(p*targets[i], it.lower), it.upper)
		}
		return s
	}
	out := make([]float64, len(items))
	fill := func(p float64) {
		for i, it := range items {
			out[i] = min(max(p*targets[i], it.lower), it.upper)
		}
	}
	switch {
	case lowSum >= total-epsilon:
		copyBounds(out, items, func(it allocItem) float64 { return it.lower })
		return out, bounds[0], nil
	case highSum <= total+epsilon:
		copyBounds(out, items, func(it allocItem) float64 { return it.upper })
		return out, bounds[len(bounds)-1], nil
	}
	// The sum grows with p, linearly between consecutive bounds: find the
	// stretch where it passes total and solve there.
	lo := bounds[0]
	for _, hi := range bounds[1:] {
		if hi <= lo {
			continue
		}
		atLo, atHi := sumAt(lo), sumAt(hi)
		if atHi >= total {
			p := lo
			if atHi > atLo {
				p = lo + (total-atLo)*(hi-lo)/(atHi-atLo)
			}
			fill(p)
			return out, p, nil
		}
		lo = hi
	}
	fill(lo)
	return out, lo, nil
}

func copyBounds(out []float64, items []allocItem, bound func(allocItem) float64) {
	for i, it := range items {
		out[i] = bound(it)
	}
}

// lowerLimit is the least the level's current limit may be: nominal less
// what it lends.
func (l *level) lowerLimit() int { return l.nominal - l.lendable }

// upperLimit is the most: nominal plus what it may borrow.
func (l *level) upperLimit() int { return l.nominal + l.borrowable }

// demandNow is the level's seat demand: seats in use and seats waiting.
func (l *level) demandNow() float64 { return float64(l.inUse + l.waitingSeats) }

// adjust re-divides the current limits from the demand of the period
// ending at now. The levels are synced to now.
func (d *Dispatcher) adjust(now time.Time) {
	if len(d.levels) == 0 {
		return
	}
	d.adjustments++ // the demand statistics change, the limits may
	items := make([]allocItem, len(d.levels))
	for i, l := range d.levels {
		l.demand.endPeriod(now, l.demandNow(), &l.stats)
		lower := max(float64(l.lowerLimit()), min(float64(l.nominal), l.stats.HighWatermark))
		items[i] = allocItem{lower: lower, upper: float64(l.upperLimit()), target: max(lower, l.stats.Smoothed)}
	}
	allocs, fair, err := allocate(float64(d.nominalSum), items)
	if err != nil {
		return // keep the current limits, as kube-apiserver does
	}
	for i, l := range d.levels {
		l.target = items[i].target
		l.current = int(math.Round(allocs[i]))
	}
	d.fairFrac = fair
}

// AdjustBorrowing re-divides the levels' current limits from their seat
// demand since the last adjustment (call it every
// BorrowingAdjustmentPeriod) and returns the queued requests the new
// limits let start.
func (d *Dispatcher) AdjustBorrowing(now time.Time) []*Request {
	d.sync(now)
	d.adjust(now)
	return d.dispatch(now)
}
