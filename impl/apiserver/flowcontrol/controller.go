package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	flowcontrolv1 "k8s.io/api/flowcontrol/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// DefaultWaitLimit is how long a request may wait in its queue: a quarter
// of kube-apiserver's default request timeout (60 s), as it sets it.
const DefaultWaitLimit = 15 * time.Second

// Config configures a Controller.
type Config struct {
	// TotalSeats is the server's concurrency limit shared by the levels
	// (--max-requests-inflight + --max-mutating-requests-inflight).
	TotalSeats int
	// WaitLimit bounds a request's time in its queue (default
	// DefaultWaitLimit).
	WaitLimit time.Duration
	// Metrics, if set, gets the flow control metrics.
	Metrics prometheus.Registerer
	// FlowSchemas and PriorityLevels default to DefaultFlowSchemas and
	// DefaultPriorityLevels.
	FlowSchemas    []*flowcontrolv1.FlowSchema
	PriorityLevels []*flowcontrolv1.PriorityLevelConfiguration
}

// Controller classifies requests and holds them to their priority level's
// seats: the Dispatcher behind a lock, the current configuration (swapped
// whole by Reconfigure, read without a lock by Classify), the waiting,
// and the metrics.
type Controller struct {
	mu    sync.Mutex
	d     *Dispatcher
	cfg   atomic.Pointer[config]
	m     *metrics
	shown map[string]bool // levels with a nominal_limit_seats series
	// shownAdjustment is the Dispatcher's adjustment the seat gauges show
	// (see showLimitsLocked).
	shownAdjustment uint64
	waitLimit       time.Duration
	now             func() time.Time
	// lingering are the requests holding their final seats after they
	// finished, each with the timer that gives them back; stopped: Run's
	// context ended, lingering seats are given back at once.
	lingering map[*Request]*time.Timer
	stopped   bool
}

// config is one digested configuration: the schemas tried, in order, and
// what each decides.
type config struct {
	schemas  []*flowcontrolv1.FlowSchema // by matching precedence
	flows    map[string]*flow            // by schema name
	catchAll *flow
}

// flow is what a request's FlowSchema decides, prepared once per schema.
type flow struct {
	schema  *flowcontrolv1.FlowSchema
	level   *flowcontrolv1.PriorityLevelConfiguration
	exempt  bool
	metrics *flowMetrics
	// at is the Dispatcher's level, looked up once per configuration
	// (read and checked under the Controller's lock).
	at *level
	// header values naming the schema's and the level's UIDs
	schemaUID, levelUID []string
}

// Classification is the FlowSchema and priority level of a request.
type Classification struct {
	flow *flow
	hash uint64
}

// FlowSchema is the request's FlowSchema.
func (c Classification) FlowSchema() *flowcontrolv1.FlowSchema { return c.flow.schema }

// PriorityLevel is the request's PriorityLevelConfiguration.
func (c Classification) PriorityLevel() *flowcontrolv1.PriorityLevelConfiguration {
	return c.flow.level
}

// Rejection is the error of a request turned away.
type Rejection struct {
	Reason RejectReason
	// RetryAfter is the Retry-After to answer with, in seconds.
	RetryAfter int64
}

func (r *Rejection) Error() string {
	return fmt.Sprintf("request rejected by flow control (%s); retry after %d s", r.Reason, r.RetryAfter)
}

// New builds a Controller with the configuration Digest makes of
// cfg.FlowSchemas and cfg.PriorityLevels.
func New(cfg Config) (*Controller, error) {
	if cfg.FlowSchemas == nil {
		cfg.FlowSchemas = DefaultFlowSchemas()
	}
	if cfg.PriorityLevels == nil {
		cfg.PriorityLevels = DefaultPriorityLevels()
	}
	if cfg.WaitLimit <= 0 {
		cfg.WaitLimit = DefaultWaitLimit
	}
	if cfg.TotalSeats <= 0 {
		return nil, fmt.Errorf("flowcontrol: total concurrency %d is not positive", cfg.TotalSeats)
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	c := &Controller{d: &Dispatcher{total: cfg.TotalSeats, byName: map[string]*level{}}, m: m,
		shown: map[string]bool{}, waitLimit: cfg.WaitLimit, lingering: map[*Request]*time.Timer{}}
	start := time.Now()
	c.now = func() time.Time { return start.Add(time.Since(start)) } // one clock read
	dg := Digest(cfg.FlowSchemas, cfg.PriorityLevels)
	if len(dg.Unusable) > 0 {
		return nil, errors.Join(dg.Unusable...)
	}
	for name, missing := range dg.Dangling {
		if missing {
			return nil, fmt.Errorf("flowcontrol: flow schema %q refers to a missing priority level", name)
		}
	}
	if err := c.Reconfigure(dg); err != nil {
		return nil, err
	}
	if cfg.Metrics != nil {
		if err := cfg.Metrics.Register(demandCollector{c}); err != nil {
			return nil, fmt.Errorf("registering flow control metrics: %w", err)
		}
	}
	return c, nil
}

// Reconfigure makes dg the configuration requests are classified and held
// by from now on. Requests already queued or executing stay in their
// priority level (see Dispatcher.Reconfigure); one classified under the
// previous configuration whose level is gone goes to catch-all.
func (c *Controller) Reconfigure(dg Digested) error {
	levels := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
	for _, p := range dg.PriorityLevels {
		levels[p.Name] = p
	}
	cfg := &config{flows: map[string]*flow{}}
	cfg.schemas = append(cfg.schemas, dg.FlowSchemas...)
	sortSchemas(cfg.schemas)
	for _, fs := range cfg.schemas {
		pl, ok := levels[fs.Spec.PriorityLevelConfiguration.Name]
		if !ok {
			return fmt.Errorf("flowcontrol: flow schema %q refers to the missing priority level %q", fs.Name, fs.Spec.PriorityLevelConfiguration.Name)
		}
		cfg.flows[fs.Name] = &flow{schema: fs, level: pl, exempt: pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt,
			metrics: c.m.forFlow(pl.Name, fs.Name), schemaUID: []string{string(fs.UID)}, levelUID: []string{string(pl.UID)}}
	}
	if cfg.catchAll = cfg.flows[flowcontrolv1.FlowSchemaNameCatchAll]; cfg.catchAll == nil {
		return fmt.Errorf("flowcontrol: no %q flow schema", flowcontrolv1.FlowSchemaNameCatchAll)
	}
	c.mu.Lock()
	woken, err := c.d.Reconfigure(dg.PriorityLevels, c.now())
	if err != nil {
		c.mu.Unlock()
		return err
	}
	for _, f := range cfg.flows {
		f.at = c.d.byName[f.level.Name]
	}
	c.cfg.Store(cfg)
	c.showLimitsLocked()
	c.mu.Unlock()
	wake(woken)
	return nil
}

// AdjustBorrowing re-divides the priority levels' current limits by their
// recent seat demand (Run does it every BorrowingAdjustmentPeriod) and
// lets start what the new limits allow.
func (c *Controller) AdjustBorrowing() {
	c.mu.Lock()
	woken := c.d.AdjustBorrowing(c.now())
	c.showLimitsLocked()
	c.mu.Unlock()
	wake(woken)
}

// refreshLimitsLocked updates the seat gauges if the Dispatcher's limits
// changed since they were set: a removed level reaped at its last
// request's end re-divides the seats (as kube-apiserver's configuration
// reload then, which sets its gauges at once). c.mu is held.
func (c *Controller) refreshLimitsLocked() {
	if c.d.adjustments != c.shownAdjustment {
		c.showLimitsLocked()
	}
}

// showLimitsLocked sets the levels' seat gauges to the Dispatcher's
// limits, dropping the series of levels no longer there. c.mu is held
// (so that the gauges follow the adjustments in order).
func (c *Controller) showLimitsLocked() {
	limits, fair := c.d.Limits(), c.d.FairFrac()
	c.shownAdjustment = c.d.adjustments
	gauges := []*prometheus.GaugeVec{c.m.nominal, c.m.lower, c.m.upper, c.m.current, c.m.target,
		c.m.demandHigh, c.m.demandAvg, c.m.demandDev, c.m.demandSmoothed}
	now := map[string]bool{}
	for _, l := range limits {
		for i, v := range []float64{float64(l.Nominal), float64(l.Lower), float64(l.Upper), float64(l.Current), l.Target,
			l.Demand.HighWatermark, l.Demand.Average, l.Demand.StdDev, l.Demand.Smoothed} {
			gauges[i].WithLabelValues(l.Name).Set(v)
		}
		now[l.Name] = true
	}
	for name := range c.shown {
		if !now[name] {
			for _, g := range gauges {
				g.DeleteLabelValues(name)
			}
		}
	}
	c.shown = now
	c.m.fairFrac.Set(fair)
}

// Classify finds the request's FlowSchema (the catch-all one when none
// matches, or when the request has no user) and its flow.
func (c *Controller) Classify(u *request.User, info *request.Info) Classification {
	cfg := c.cfg.Load()
	if u == nil || info == nil {
		return Classification{flow: cfg.catchAll, hash: flowHash(cfg.catchAll.schema.Name, "")}
	}
	f := cfg.catchAll
	if fs := matchSchema(cfg.schemas, u, info); fs != nil {
		f = cfg.flows[fs.Name]
	}
	return Classification{flow: f, hash: flowHash(f.schema.Name, distinguisher(f.schema, u, info))}
}

// HeaderValues are the values of the X-Kubernetes-PF-FlowSchema-UID and
// X-Kubernetes-PF-PriorityLevel-UID response headers, shared by every
// request of the flow schema: callers must not modify them (appending is
// safe, their capacity is their length).
func (c Classification) HeaderValues() (schemaUID, levelUID []string) {
	return c.flow.schemaUID[:1:1], c.flow.levelUID[:1:1]
}

// Exempt reports whether the classified request is never held back.
func (c Classification) Exempt() bool { return c.flow.exempt }

// Wait is WaitFor of one seat while the request executes (the zero
// WorkEstimate).
func (c *Controller) Wait(ctx context.Context, cl Classification) (*Request, error) {
	return c.WaitFor(ctx, cl, WorkEstimate{})
}

// WaitFor takes the seats work says for the classified request, queuing
// it if its level has not enough free, and returns the request holding
// them: call Release once the request is done (a request with final
// seats and additional latency goes on holding its final seats that long
// after Release). It fails with a *Rejection when the request is turned
// away: its queue is full, its level does not queue, it waited for the
// wait limit, or ctx ended.
func (c *Controller) WaitFor(ctx context.Context, cl Classification, work WorkEstimate) (*Request, error) {
	fm := cl.flow.metrics
	// An exempt request is never held, but goes through the Dispatcher
	// too: its seats are its level's demand, which borrowing counts.
	c.mu.Lock()
	r, ok := c.d.newRequestAt(cl.flow.at, cl.hash, work)
	var err error
	if !ok {
		r, err = c.d.NewRequest(cl.flow.level.Name, cl.hash, work)
	}
	if err != nil {
		// Reconfigured since Classify, without this level: the catch-all
		// level (always configured) takes the request.
		r, err = c.d.NewRequest(flowcontrolv1.PriorityLevelConfigurationNameCatchAll, cl.hash, work)
	}
	if err != nil {
		c.mu.Unlock()
		return nil, err
	}
	outcome, reason, woken := c.d.Arrive(r, c.now())
	var retryAfter int64
	switch outcome {
	case Rejected:
		retryAfter = c.recordDrop(r)
	case Queued:
		r.wake = make(chan struct{})
	}
	c.mu.Unlock()
	wake(woken)
	switch outcome {
	case Executing:
		fm.waitExecuted.Observe(0)
		c.started(r, fm)
		return r, nil
	case Rejected:
		fm.waitRejected.Observe(0)
		fm.rejected[reason].Inc()
		return nil, &Rejection{Reason: reason, RetryAfter: retryAfter}
	}

	fm.inQueue.Inc()
	defer fm.inQueue.Dec()
	start := c.now()
	timer := time.NewTimer(c.queueWait(ctx))
	defer timer.Stop()
	select {
	case <-r.wake:
		fm.waitExecuted.Observe(c.now().Sub(start).Seconds())
		c.started(r, fm)
		return r, nil
	case <-timer.C:
		reason = ReasonTimeout
	case <-ctx.Done():
		reason = ReasonCancelled
		if errors.Is(ctx.Err(), context.DeadlineExceeded) {
			reason = ReasonTimeout
		}
	}
	c.mu.Lock()
	left, woken := c.d.Leave(r, c.now())
	if !left {
		// Dispatched while it gave up: give the seats back (it never
		// executed, so it does not linger either).
		woken = c.d.Finish(r, c.now())
		woken = append(woken, c.d.FinishLinger(r, c.now())...)
	}
	c.refreshLimitsLocked()
	retryAfter = c.recordDrop(r)
	c.mu.Unlock()
	wake(woken)
	fm.waitRejected.Observe(c.now().Sub(start).Seconds())
	fm.rejected[reason].Inc()
	return nil, &Rejection{Reason: reason, RetryAfter: retryAfter}
}

// queueWait is how long a request whose context is ctx may wait in its
// queue, as kube-apiserver's filter decides it: a quarter of what its
// deadline leaves it (its request timeout, usually), at most a minute; the
// wait limit when it has none.
func (c *Controller) queueWait(ctx context.Context) time.Duration {
	if deadline, ok := ctx.Deadline(); ok {
		return min(time.Until(deadline)/4, time.Minute)
	}
	return c.waitLimit
}

// recordDrop notes a rejection at r's level and returns the Retry-After
// to answer it with. c.mu is held.
func (c *Controller) recordDrop(r *Request) int64 {
	r.level.drops.record(c.now().Unix())
	return r.level.drops.get()
}

// started counts r as executing.
func (c *Controller) started(r *Request, fm *flowMetrics) {
	fm.dispatched.Inc()
	fm.executing.Inc()
	fm.executingSeats.Add(float64(r.seats))
	r.metrics = fm
}

// Release ends the execution of a request Wait returned: it gives back its
// seats, or, when its work has final seats and additional latency, keeps
// the final ones that long more (a timer gives them back). Calls after the
// first do nothing.
func (c *Controller) Release(r *Request) {
	if r.released.Swap(true) {
		return
	}
	r.metrics.executing.Dec()
	c.mu.Lock()
	woken := c.d.Finish(r, c.now())
	if latency := r.AdditionalLatency(); latency > 0 {
		if c.stopped {
			woken = append(woken, c.d.FinishLinger(r, c.now())...)
		} else {
			c.lingering[r] = time.AfterFunc(latency, func() { c.endLinger(r) })
		}
	}
	lingers := r.AdditionalLatency() > 0
	c.refreshLimitsLocked()
	c.mu.Unlock()
	if !lingers {
		r.metrics.executingSeats.Sub(float64(r.seats))
	}
	wake(woken)
}

// endLinger gives back the final seats of r once its additional latency
// is over (or Run's context ended).
func (c *Controller) endLinger(r *Request) {
	c.mu.Lock()
	if _, ok := c.lingering[r]; !ok {
		c.mu.Unlock()
		return // given back already
	}
	delete(c.lingering, r)
	woken := c.d.FinishLinger(r, c.now())
	c.refreshLimitsLocked()
	c.mu.Unlock()
	r.metrics.executingSeats.Sub(float64(r.seats))
	wake(woken)
}

// Run does the Controller's background work until ctx ends: it adjusts
// the levels' borrowing every BorrowingAdjustmentPeriod; at the end it
// gives back at once the seats of the requests still lingering (as will
// Release from then on) and returns. Without Run lingering seats are
// given back by their timers alone, and the levels keep the limits of
// the last configuration.
func (c *Controller) Run(ctx context.Context) {
	tick := time.NewTicker(BorrowingAdjustmentPeriod)
	defer tick.Stop()
	for done := false; !done; {
		select {
		case <-tick.C:
			c.AdjustBorrowing()
		case <-ctx.Done():
			done = true
		}
	}
	c.mu.Lock()
	c.stopped = true
	var rs []*Request
	for r, t := range c.lingering {
		if t.Stop() {
			rs = append(rs, r)
		}
	}
	c.mu.Unlock()
	for _, r := range rs {
		c.endLinger(r)
	}
}

// wake lets the dispatched requests' waiters go on.
func wake(rs []*Request) {
	for _, r := range rs {
		close(r.wake)
	}
}
