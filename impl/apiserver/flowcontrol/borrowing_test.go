package flowcontrol

import (
	"context"
	"math"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

func TestAllocate(t *testing.T) {
	for _, tc := range []struct {
		name  string
		total float64
		items []allocItem
		want  []float64
		fair  float64
	}{{
		name: "targets that sum to the total are met", total: 10,
		items: []allocItem{{target: 6, lower: 2, upper: 20}, {target: 4, lower: 2, upper: 20}},
		want:  []float64{6, 4}, fair: 1,
	}, {
		name: "too much demand: shared in proportion", total: 10,
		items: []allocItem{{target: 15, lower: 2, upper: 20}, {target: 5, lower: 2, upper: 20}},
		want:  []float64{7.5, 2.5}, fair: 0.5,
	}, {
		name: "too little demand: the spare seats go in proportion too", total: 12,
		items: []allocItem{{target: 3, lower: 0, upper: 20}, {target: 1, lower: 0, upper: 20}},
		want:  []float64{9, 3}, fair: 3,
	}, {
		name: "a lower bound holds", total: 10,
		items: []allocItem{{target: 18, lower: 2, upper: 20}, {target: 4, lower: 4, upper: 20}},
		want:  []float64{6, 4}, fair: 1.0 / 3,
	}, {
		name: "an upper bound holds; the rest goes to the others", total: 10,
		items: []allocItem{{target: 8, lower: 0, upper: 4}, {target: 2, lower: 0, upper: 20}},
		want:  []float64{4, 6}, fair: 3,
	}, {
		name: "no demand anywhere: targets at lower bounds, zero ones count as tiny", total: 8,
		items: []allocItem{{target: 4, lower: 4, upper: 12}, {target: 0, lower: 0, upper: 12}},
		want:  []float64{7.998, 0.002}, fair: 1.9995,
	}, {
		name: "the lower bounds take everything", total: 6,
		items: []allocItem{{target: 9, lower: 4, upper: 12}, {target: 2, lower: 2, upper: 12}},
		want:  []float64{4, 2}, fair: 4.0 / 9,
	}, {
		name: "the upper bounds are all there is", total: 6,
		items: []allocItem{{target: 1, lower: 0, upper: 4}, {target: 1, lower: 0, upper: 2}},
		want:  []float64{4, 2}, fair: 4,
	}} {
		t.Run(tc.name, func(t *testing.T) {
			got, fair, err := allocate(tc.total, tc.items)
			if err != nil {
				t.Fatal(err)
			}
			sum := 0.0
			for i := range got {
				sum += got[i]
				if math.Abs(got[i]-tc.want[i]) > 1e-3 {
					t.Errorf("allocation %d is %v, want %v", i, got[i], tc.want[i])
				}
			}
			if math.Abs(sum-tc.total) > 1e-6 {
				t.Errorf("allocations sum to %v, want %v", sum, tc.total)
			}
			if math.Abs(fair-tc.fair) > 1e-3 {
				t.Errorf("fair fraction %v, want %v", fair, tc.fair)
			}
		})
	}
	for name, items := range map[string][]allocItem{
		"bounds too high":      {{target: 5, lower: 5, upper: 6}, {target: 6, lower: 6, upper: 6}},
		"bounds too low":       {{target: 1, lower: 0, upper: 1}, {target: 1, lower: 0, upper: 1}},
		"target below a bound": {{target: 1, lower: 2, upper: 20}},
	} {
		if _, _, err := allocate(10, items); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

// TestDemandStats: the integrator's period statistics are time-weighted,
// and the smoothed envelope decays slowly but jumps up at once.
func TestDemandStats(t *testing.T) {
	var in demandIntegrator
	var st DemandStats
	in.endPeriod(t0, 0, &st)
	in.add(2, 5) // 2 seats for 5 s
	in.add(6, 5) // 6 for 5 s
	in.endPeriod(t0.Add(10*time.Second), 6, &st)
	if st.Average != 4 || st.StdDev != 2 || st.HighWatermark != 6 || st.Smoothed != 6 {
		t.Fatalf("first period: %+v, want average 4, deviation 2, high watermark 6, smoothed 6", st)
	}
	in.add(0, 10)
	in.endPeriod(t0.Add(20*time.Second), 0, &st)
	if want := 0.977 * 6; math.Abs(st.Smoothed-want) > 1e-9 || st.Average != 0 || st.HighWatermark != 6 {
		t.Fatalf("idle period: %+v, want smoothed %v and the high watermark of the demand it began with", st, want)
	}
	in.endPeriod(t0.Add(30*time.Second), 0, &st)
	if st.HighWatermark != 0 {
		t.Fatalf("a period idle throughout: high watermark %v", st.HighWatermark)
	}
}

// TestControllerBorrowsByDemand: over the Controller, a busy level's
// queued request starts when an adjustment lends it an idle level's
// seats, and the borrowing metrics say so.
func TestControllerBorrowsByDemand(t *testing.T) {
	noLeak(t)
	reg := prometheus.NewRegistry()
	c, err := New(Config{
		TotalSeats: 8, WaitLimit: time.Minute, Metrics: reg,
		PriorityLevels: []*flowcontrolv1.PriorityLevelConfiguration{
			// 4 seats each of 8, catch-all (5 shares) 1 more.
			limitedLevel("busy", 1000, 0, queuing(8, 2, 50)),
			limitedLevel("lender", 1000, 50, queuing(8, 2, 50)),
			MandatoryPriorityLevel(flowcontrolv1.PriorityLevelConfigurationNameExempt),
			MandatoryPriorityLevel(flowcontrolv1.PriorityLevelConfigurationNameCatchAll),
		},
		FlowSchemas: []*flowcontrolv1.FlowSchema{
			flowSchema("busy", "busy", 9000, flowcontrolv1.FlowDistinguisherMethodByUserType,
				withSubjects(everythingRules(), groups("system:authenticated")...)),
			MandatoryFlowSchema(flowcontrolv1.FlowSchemaNameExempt),
			MandatoryFlowSchema(flowcontrolv1.FlowSchemaNameCatchAll),
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	// The clock New read, frozen from now on but for the step below.
	var clock atomic.Pointer[time.Time]
	start := c.now()
	clock.Store(&start)
	c.now = func() time.Time { return *clock.Load() }
	busyLevel := map[string]string{"priority_level": "busy"}
	// With no demand yet the 9 nominal seats go by the lower limits
	// (busy 4, lender 2, catch-all 1) scaled up: busy 5, lender 3.
	if got, _ := metricValue(reg, "apiserver_flowcontrol_current_limit_seats", busyLevel); got != 5 {
		t.Fatalf("busy's first current limit: %v, want 5", got)
	}
	var held []*Request
	for range 5 {
		r, err := c.Wait(context.Background(), classifyGet(c, "a"))
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	done := make(chan error, 1)
	go func() {
		r, err := c.Wait(context.Background(), classifyGet(c, "b"))
		if err == nil {
			held = append(held, r)
		}
		done <- err
	}()
	waitFor(t, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.d.State("busy").Waiting == 1
	})
	later := start.Add(BorrowingAdjustmentPeriod)
	clock.Store(&later)
	c.AdjustBorrowing() // busy wanted 6 seats, the lender none: 6, 2 and 1
	if err := <-done; err != nil {
		t.Fatalf("the queued request: %v", err)
	}
	for _, tc := range []struct {
		name string
		want float64
	}{
		{"apiserver_flowcontrol_current_limit_seats", 6},
		{"apiserver_flowcontrol_nominal_limit_seats", 4},
		{"apiserver_flowcontrol_lower_limit_seats", 4},
		{"apiserver_flowcontrol_upper_limit_seats", 12},
		{"apiserver_flowcontrol_target_seats", 6},
		{"apiserver_flowcontrol_demand_seats_high_watermark", 6},
		{"apiserver_flowcontrol_demand_seats_average", 6},
	} {
		// (The period began at New, microseconds before the requests.)
		if got, ok := metricValue(reg, tc.name, busyLevel); !ok || math.Abs(got-tc.want) > 0.05 {
			t.Errorf("%s{busy} = %v (found %v), want %v", tc.name, got, ok, tc.want)
		}
	}
	if got, ok := metricValue(reg, "apiserver_flowcontrol_seat_fair_frac", nil); !ok || math.Abs(got-1) > 0.01 {
		t.Errorf("seat_fair_frac = %v (found %v), want about 1 (the targets sum to the seats)", got, ok)
	}
	for _, r := range held {
		c.Release(r)
	}
}

// TestExemptDemandBorrows: the exempt level's requests are never held,
// but their seats are its demand, which borrowing counts as
// kube-apiserver's does: after a period of 30 administrator requests
// executing, the adjustment gives the exempt level (no nominal seats,
// no borrowing limit) the seats the idle others lend.
func TestExemptDemandBorrows(t *testing.T) {
	c, err := New(Config{TotalSeats: 100})
	if err != nil {
		t.Fatal(err)
	}
	admin := &request.User{Name: "admin", Groups: []string{"system:masters", "system:authenticated"}}
	cl := c.Classify(admin, request.Parse(httptest.NewRequest("GET", "/api/v1/pods", nil)))
	if !cl.Exempt() {
		t.Fatal("system:masters is not exempt")
	}
	var held []*Request
	for range 30 {
		r, err := c.Wait(context.Background(), cl)
		if err != nil {
			t.Fatal(err)
		}
		held = append(held, r)
	}
	time.Sleep(20 * time.Millisecond) // a period with 30 seats in use
	c.AdjustBorrowing()
	for _, r := range held {
		c.Release(r)
	}
	c.mu.Lock()
	limits := c.d.Limits()
	c.mu.Unlock()
	for _, l := range limits {
		if l.Name != flowcontrolv1.PriorityLevelConfigurationNameExempt {
			continue
		}
		if l.Demand.HighWatermark != 30 || l.Current < 30 {
			t.Errorf("exempt after a period of 30 seats in use: high watermark %g, current limit %d; want 30 and at least as many seats (the others, idle, keep their lower limits)",
				l.Demand.HighWatermark, l.Current)
		}
		return
	}
	t.Fatal("no exempt level")
}

// TestDemandSeatsIsATimingHistogram: apiserver_flowcontrol_demand_seats
// observes a level's demand over its current limit continuously, as
// kube-apiserver's timing ratio histogram: each nanosecond counts once,
// in the bucket of the ratio then, up to the scrape.
func TestDemandSeatsIsATimingHistogram(t *testing.T) {
	c, reg := oneSeat(t, time.Minute)
	now := time.Now().Add(time.Hour)
	c.now = func() time.Time { return now }
	r, err := c.Wait(context.Background(), classifyGet(c, "a"))
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Second) // 2 s of demand 1 over a limit of 1
	var sum float64
	buckets := map[float64]uint64{}
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != "apiserver_flowcontrol_demand_seats" {
			continue
		}
		for _, m := range mf.GetMetric() {
			if m.GetLabel()[0].GetValue() != "only" {
				continue
			}
			sum = m.GetHistogram().GetSampleSum()
			for _, b := range m.GetHistogram().GetBucket() {
				buckets[b.GetUpperBound()] = b.GetCumulativeCount()
			}
		}
	}
	if at1 := buckets[1] - buckets[0.8]; sum != 2e9 || at1 != 2e9 {
		t.Errorf("after 2 s at a ratio of 1: sum %g, %d ns in the bucket of 1; want 2e9 and 2e9", sum, at1)
	}
	c.Release(r)
}
