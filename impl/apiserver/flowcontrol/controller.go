package flowcontrol

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
// seats: the Dispatcher behind a lock, the waiting, and the metrics.
type Controller struct {
	mu        sync.Mutex
	d         *Dispatcher
	schemas   []*flowcontrolv1.FlowSchema // by matching precedence
	flows     map[string]*flow            // by schema name
	catchAll  *flow
	waitLimit time.Duration
	now       func() time.Time
}

// flow is what a request's FlowSchema decides, prepared once per schema.
type flow struct {
	schema  *flowcontrolv1.FlowSchema
	level   *flowcontrolv1.PriorityLevelConfiguration
	exempt  bool
	metrics *flowMetrics
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

// New builds a Controller.
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
	d, err := NewDispatcher(cfg.PriorityLevels, cfg.TotalSeats)
	if err != nil {
		return nil, err
	}
	m, err := newMetrics(cfg.Metrics)
	if err != nil {
		return nil, err
	}
	levels := map[string]*flowcontrolv1.PriorityLevelConfiguration{}
	for _, p := range cfg.PriorityLevels {
		levels[p.Name] = p
	}
	for _, l := range d.Limits() {
		m.nominal.WithLabelValues(l.Name).Set(float64(l.Nominal))
	}
	c := &Controller{d: d, flows: map[string]*flow{}, waitLimit: cfg.WaitLimit, now: time.Now}
	c.schemas = append(c.schemas, cfg.FlowSchemas...)
	sortSchemas(c.schemas)
	for _, fs := range c.schemas {
		pl, ok := levels[fs.Spec.PriorityLevelConfiguration.Name]
		if !ok {
			return nil, fmt.Errorf("flowcontrol: flow schema %q refers to the missing priority level %q", fs.Name, fs.Spec.PriorityLevelConfiguration.Name)
		}
		c.flows[fs.Name] = &flow{schema: fs, level: pl, exempt: pl.Spec.Type == flowcontrolv1.PriorityLevelEnablementExempt,
			metrics: m.forFlow(pl.Name, fs.Name), schemaUID: []string{string(fs.UID)}, levelUID: []string{string(pl.UID)}}
	}
	if c.catchAll = c.flows[flowcontrolv1.FlowSchemaNameCatchAll]; c.catchAll == nil {
		return nil, fmt.Errorf("flowcontrol: no %q flow schema", flowcontrolv1.FlowSchemaNameCatchAll)
	}
	return c, nil
}

// Classify finds the request's FlowSchema (the catch-all one when none
// matches, or when the request has no user) and its flow.
func (c *Controller) Classify(u *request.User, info *request.Info) Classification {
	if u == nil || info == nil {
		return Classification{flow: c.catchAll, hash: flowHash(c.catchAll.schema.Name, "")}
	}
	f := c.catchAll
	if fs := matchSchema(c.schemas, u, info); fs != nil {
		f = c.flows[fs.Name]
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

// Wait takes a seat for the classified request, queuing it if its level
// has none free, and returns the request holding it: give the seat back
// with Release once the request is done. It fails with a *Rejection when
// the request is turned away: its queue is full, its level does not
// queue, it waited for the wait limit, or ctx ended.
func (c *Controller) Wait(ctx context.Context, cl Classification) (*Request, error) {
	fm := cl.flow.metrics
	r, err := c.d.NewRequest(cl.flow.level.Name, cl.hash)
	if err != nil {
		return nil, err
	}
	if r.level.exempt {
		// Never held: no need of the lock.
		fm.waitExecuted.Observe(0)
		c.started(r, fm)
		return r, nil
	}
	c.mu.Lock()
	outcome, reason := c.d.Arrive(r)
	var retryAfter int64
	switch outcome {
	case Rejected:
		retryAfter = c.recordDrop(r)
	case Queued:
		r.wake = make(chan struct{})
	}
	c.mu.Unlock()
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
	timer := time.NewTimer(c.waitLimit)
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
	var woken []*Request
	if !c.d.Leave(r) {
		// Dispatched while it gave up: give the seat back.
		woken = c.d.Finish(r)
	}
	retryAfter = c.recordDrop(r)
	c.mu.Unlock()
	wake(woken)
	fm.waitRejected.Observe(c.now().Sub(start).Seconds())
	fm.rejected[reason].Inc()
	return nil, &Rejection{Reason: reason, RetryAfter: retryAfter}
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
	r.metrics = fm
}

// Release gives back the seat of a request Wait returned. Calls after the
// first do nothing.
func (c *Controller) Release(r *Request) {
	if r.released.Swap(true) {
		return
	}
	if r.level.exempt {
		r.metrics.executing.Dec()
		return
	}
	c.mu.Lock()
	woken := c.d.Finish(r)
	c.mu.Unlock()
	r.metrics.executing.Dec()
	wake(woken)
}

// wake lets the dispatched requests' waiters go on.
func wake(rs []*Request) {
	for _, r := range rs {
		close(r.wake)
	}
}
