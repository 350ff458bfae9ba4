package flowcontrol

import (
	"context"
	"errors"
	"net/http/httptest"
	"runtime"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// noLeak fails t if goroutines started during the test outlive it.
func noLeak(t *testing.T) {
	t.Helper()
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		deadline := time.Now().Add(5 * time.Second)
		for runtime.NumGoroutine() > before {
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<16)
				t.Errorf("goroutine leak: %d before, %d after\n%s", before, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	})
}

// oneSeat is a Controller whose every request goes to one level of one
// seat with a queue, waiting at most wait.
func oneSeat(t *testing.T, wait time.Duration) (*Controller, *prometheus.Registry) {
	t.Helper()
	reg := prometheus.NewRegistry()
	c, err := New(Config{
		TotalSeats: 1, WaitLimit: wait, Metrics: reg,
		PriorityLevels: []*flowcontrolv1.PriorityLevelConfiguration{limitedLevel("only", 1, 0, queuing(4, 2, 10))},
		FlowSchemas: []*flowcontrolv1.FlowSchema{flowSchema("catch-all", "only", 10000, flowcontrolv1.FlowDistinguisherMethodByUserType,
			withSubjects(everythingRules(), groups("system:authenticated")...))},
	})
	if err != nil {
		t.Fatal(err)
	}
	return c, reg
}

func classifyGet(c *Controller, user string) Classification {
	return c.Classify(named(user), request.Parse(httptest.NewRequest("GET", "/api/v1/pods", nil)))
}

func rejectedCount(reg *prometheus.Registry, reason RejectReason) float64 {
	v, _ := metricValue(reg, "apiserver_flowcontrol_rejected_requests_total", map[string]string{"reason": string(reason)})
	return v
}

// metricValue is the value of the first sample of the named counter or
// gauge whose labels include want.
func metricValue(reg *prometheus.Registry, name string, want map[string]string) (float64, bool) {
	mfs, _ := reg.Gather()
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	samples:
		for _, m := range mf.GetMetric() {
			have := map[string]string{}
			for _, l := range m.GetLabel() {
				have[l.GetName()] = l.GetValue()
			}
			for k, v := range want {
				if have[k] != v {
					continue samples
				}
			}
			if m.GetCounter() != nil {
				return m.GetCounter().GetValue(), true
			}
			return m.GetGauge().GetValue(), true
		}
	}
	return 0, false
}

func TestQueuedRequestRunsWhenTheSeatFrees(t *testing.T) {
	noLeak(t)
	c, _ := oneSeat(t, time.Minute)
	held, err := c.Wait(context.Background(), classifyGet(c, "a"))
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error)
	go func() {
		r2, err := c.Wait(context.Background(), classifyGet(c, "b"))
		if err == nil {
			c.Release(r2)
		}
		done <- err
	}()
	waitFor(t, func() bool { return c.state().Waiting == 1 })
	c.Release(held)
	if err := <-done; err != nil {
		t.Fatalf("the queued request: %v", err)
	}
	if s := c.state(); s.InUse != 0 || s.Waiting != 0 {
		t.Errorf("after both: %+v", s)
	}
}

func TestWaitLimit(t *testing.T) {
	noLeak(t)
	c, reg := oneSeat(t, 20*time.Millisecond)
	held, err := c.Wait(context.Background(), classifyGet(c, "a"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Wait(context.Background(), classifyGet(c, "b"))
	var rej *Rejection
	if !errors.As(err, &rej) || rej.Reason != ReasonTimeout || rej.RetryAfter < 1 {
		t.Fatalf("waiting past the limit: %v, want a time-out rejection", err)
	}
	if s := c.state(); s.Waiting != 0 {
		t.Errorf("the timed-out request is still queued: %+v", s)
	}
	if got := rejectedCount(reg, ReasonTimeout); got != 1 {
		t.Errorf("rejected{reason=time-out} = %v, want 1", got)
	}
	c.Release(held)
	r3, err := c.Wait(context.Background(), classifyGet(c, "c"))
	if err != nil {
		t.Fatalf("after the seat freed: %v", err)
	}
	c.Release(r3)
}

// TestWaitLimitFromTheDeadline: a request with a deadline waits in its
// queue a quarter of the time it has left, as kube-apiserver's filter
// sets it, not the (longer) wait limit or its whole deadline.
func TestWaitLimitFromTheDeadline(t *testing.T) {
	noLeak(t)
	c, _ := oneSeat(t, time.Minute)
	held, err := c.Wait(context.Background(), classifyGet(c, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release(held)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	start := time.Now()
	_, err = c.Wait(ctx, classifyGet(c, "b"))
	var rej *Rejection
	if !errors.As(err, &rej) || rej.Reason != ReasonTimeout {
		t.Fatalf("waiting with a 2 s deadline: %v, want a time-out rejection", err)
	}
	if took := time.Since(start); took < 400*time.Millisecond || took > 1500*time.Millisecond {
		t.Errorf("a request with 2 s left waited %v, want about 500 ms", took)
	}
}

func TestClientGoneLeavesTheQueue(t *testing.T) {
	noLeak(t)
	c, reg := oneSeat(t, time.Minute)
	held, err := c.Wait(context.Background(), classifyGet(c, "a"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release(held)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := c.Wait(ctx, classifyGet(c, "b"))
		done <- err
	}()
	waitFor(t, func() bool { return c.state().Waiting == 1 })
	cancel()
	var rej *Rejection
	if err := <-done; !errors.As(err, &rej) || rej.Reason != ReasonCancelled {
		t.Fatalf("client gone: %v, want a cancelled rejection", err)
	}
	if s := c.state(); s.Waiting != 0 || s.InUse != 1 {
		t.Errorf("after the client left: %+v", s)
	}
	if got := rejectedCount(reg, ReasonCancelled); got != 1 {
		t.Errorf("rejected{reason=cancelled} = %v, want 1", got)
	}
	// A context deadline is a time-out.
	dctx, dcancel := context.WithTimeout(context.Background(), 10*time.Millisecond)
	defer dcancel()
	if _, err := c.Wait(dctx, classifyGet(c, "d")); !errors.As(err, &rej) || rej.Reason != ReasonTimeout {
		t.Fatalf("deadline while queued: %v, want a time-out rejection", err)
	}
}

func TestReleaseIsIdempotent(t *testing.T) {
	c, _ := oneSeat(t, 10*time.Millisecond)
	held, err := c.Wait(context.Background(), classifyGet(c, "a"))
	if err != nil {
		t.Fatal(err)
	}
	c.Release(held)
	c.Release(held)
	r2, err := c.Wait(context.Background(), classifyGet(c, "b"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Release(r2)
	// Only one seat: the second release did not free a second one.
	if _, err := c.Wait(context.Background(), classifyGet(c, "c")); err == nil {
		t.Fatal("a second seat appeared")
	}
}

func TestExemptIsNeverHeld(t *testing.T) {
	c, err := New(Config{TotalSeats: 1})
	if err != nil {
		t.Fatal(err)
	}
	admin := named("admin", "system:masters")
	info := request.Parse(httptest.NewRequest("POST", "/api/v1/namespaces/default/pods", nil))
	var held []*Request
	for i := range 500 {
		r, err := c.Wait(context.Background(), c.Classify(admin, info))
		if err != nil {
			t.Fatalf("exempt request %d: %v", i, err)
		}
		held = append(held, r)
	}
	for _, r := range held {
		c.Release(r)
	}
}

func TestMetricsExposed(t *testing.T) {
	c, reg := oneSeat(t, time.Minute)
	held, err := c.Wait(context.Background(), classifyGet(c, "a"))
	if err != nil {
		t.Fatal(err)
	}
	flow := map[string]string{"flow_schema": "catch-all", "priority_level": "only"}
	for _, tc := range []struct {
		name   string
		labels map[string]string
		want   float64
	}{
		{"apiserver_flowcontrol_current_executing_requests", flow, 1},
		{"apiserver_flowcontrol_dispatched_requests_total", flow, 1},
		{"apiserver_flowcontrol_current_inqueue_requests", flow, 0},
		{"apiserver_flowcontrol_nominal_limit_seats", map[string]string{"priority_level": "only"}, 1},
	} {
		if got, ok := metricValue(reg, tc.name, tc.labels); !ok || got != tc.want {
			t.Errorf("%s%v = %v (found %v), want %v", tc.name, tc.labels, got, ok, tc.want)
		}
	}
	c.Release(held)
	if got, _ := metricValue(reg, "apiserver_flowcontrol_current_executing_requests", flow); got != 0 {
		t.Errorf("executing after release: %v", got)
	}
}

// state is the single level of oneSeat's Controller.
func (c *Controller) state() LevelState {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.d.State("only")
}

// waitFor polls cond (the queued request is in its queue) for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not reached")
		}
		time.Sleep(time.Millisecond)
	}
}
