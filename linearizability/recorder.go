package linearizability

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strconv"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// Labels and the data key the recorder puts on its ConfigMaps.
const (
	RunLabel   = "linearizability.kubeproof.io/run"
	GroupLabel = "linearizability.kubeproof.io/group"
	DataKey    = "v"
)

// RecordConfig configures a recording.
type RecordConfig struct {
	// Scenario names the history.
	Scenario string
	// Servers are the API servers' client configurations; client i talks
	// to Servers[i % len(Servers)].
	Servers []*rest.Config
	// Namespace holds the ConfigMaps; it is created if missing.
	Namespace string
	// Clients issue operations concurrently (default 8).
	Clients int
	// Keys is the number of ConfigMaps operated on (default 5).
	Keys int
	// Watchers record watch streams concurrently (default 3).
	Watchers int
	// Duration bounds the recording; MaxOps, when positive, stops it
	// after that many operations.
	Duration time.Duration
	MaxOps   int
	// OpTimeout bounds each request (default 5 s); a timed-out write is
	// ambiguous.
	OpTimeout time.Duration
	// Seed makes the operation mix reproducible (0: random).
	Seed uint64
	// ExpiredExact is copied into the history (see History).
	ExpiredExact bool
	// Logger; nil is slog.Default().
	Logger *slog.Logger
}

// Recorder records one history. Run it once; fault injectors may call
// Now and AddCompaction while it runs.
type Recorder struct {
	cfg     RecordConfig
	clients []kubernetes.Interface
	run     string
	keys    []string
	start   time.Time
	maxRV   atomic.Int64
	ops     atomic.Int64

	mu          sync.Mutex
	history     []Op
	watches     []Watch
	compactions []Compaction
}

// NewRecorder prepares a recording: it builds JSON clients for every
// server (so a proxy can read the streams) without client-side rate limits.
func NewRecorder(cfg RecordConfig) (*Recorder, error) {
	if len(cfg.Servers) == 0 {
		return nil, errors.New("linearizability: no API server configured")
	}
	if cfg.Clients <= 0 {
		cfg.Clients = 8
	}
	if cfg.Keys <= 0 {
		cfg.Keys = 5
	}
	if cfg.Watchers < 0 {
		cfg.Watchers = 0
	} else if cfg.Watchers == 0 {
		cfg.Watchers = 3
	}
	if cfg.OpTimeout <= 0 {
		cfg.OpTimeout = 5 * time.Second
	}
	if cfg.Namespace == "" {
		cfg.Namespace = "default"
	}
	if cfg.Seed == 0 {
		cfg.Seed = rand.Uint64()
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	r := &Recorder{cfg: cfg, run: fmt.Sprintf("r%06x", cfg.Seed%(1<<24))}
	for _, sc := range cfg.Servers {
		c := rest.CopyConfig(sc)
		c.ContentType = "application/json"
		c.AcceptContentTypes = "application/json"
		// No client-side rate limiter: its Wait fails a request near the
		// run's end without sending it, which would be recorded as an
		// ambiguous write.
		c.QPS, c.Burst, c.RateLimiter = -1, 0, nil
		cs, err := kubernetes.NewForConfig(c)
		if err != nil {
			return nil, fmt.Errorf("building client for %s: %w", sc.Host, err)
		}
		r.clients = append(r.clients, cs)
	}
	for i := 0; i < cfg.Keys; i++ {
		r.keys = append(r.keys, fmt.Sprintf("lin-%s-%d", r.run, i))
	}
	return r, nil
}

// Now is the time since the recording started, in nanoseconds.
func (r *Recorder) Now() int64 { return time.Since(r.start).Nanoseconds() }

// AddCompaction records a compaction the scenario made.
func (r *Recorder) AddCompaction(c Compaction) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.compactions = append(r.compactions, c)
}

// MaxRV is the highest resourceVersion any client has seen so far.
func (r *Recorder) MaxRV() int64 { return r.maxRV.Load() }

// Operations is how many operations have been recorded so far.
func (r *Recorder) Operations() int64 { return r.ops.Load() }

func (r *Recorder) seen(rv int64) {
	for {
		cur := r.maxRV.Load()
		if rv <= cur || r.maxRV.CompareAndSwap(cur, rv) {
			return
		}
	}
}

// Run records until the duration passes, MaxOps operations were made or
// ctx ends (the operations under way finish first), then reads every key
// once more and lists them all (the end of the history, as the final
// reader client number Clients), lets the watches catch up and returns
// the history.
func (r *Recorder) Run(ctx context.Context) (*History, error) {
	r.start = time.Now()
	if err := r.ensureNamespace(ctx); err != nil {
		return nil, err
	}
	// The revision every watch stream may start from.
	startList, err := r.clients[0].CoreV1().ConfigMaps(r.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: RunLabel + "=" + r.run})
	if err != nil {
		return nil, fmt.Errorf("listing the start revision: %w", err)
	}
	startRV, _ := strconv.ParseInt(startList.ResourceVersion, 10, 64)
	r.seen(startRV)

	// runCtx ends the clients' loops; each operation runs under its own
	// timeout alone (opCtx keeps ctx's values, not its cancellation), so
	// neither the end of the run nor ctx ending (an interrupted check)
	// cancels a request halfway: a cancelled write is ambiguous, and
	// ambiguous writes are what make the per-key search expensive; and
	// client-go logs a request cancelled while it reads the response body
	// as an error.
	opCtx := context.WithoutCancel(ctx)
	runCtx, stopClients := context.WithCancel(ctx)
	if r.cfg.Duration > 0 {
		runCtx, stopClients = context.WithTimeout(ctx, r.cfg.Duration)
	}
	defer stopClients()
	watchCtx, stopWatches := context.WithCancel(ctx)
	defer stopWatches()

	var watchWG, clientWG sync.WaitGroup
	for i := 0; i < r.cfg.Watchers; i++ {
		watchWG.Add(1)
		go func() {
			defer watchWG.Done()
			r.watcher(watchCtx, i, startRV)
		}()
	}
	for i := 0; i < r.cfg.Clients; i++ {
		clientWG.Add(1)
		go func() {
			defer clientWG.Done()
			c := &client{r: r, id: i, cs: r.clients[i%len(r.clients)], rnd: rand.New(rand.NewPCG(r.cfg.Seed, uint64(i))), rvs: map[string]int64{}}
			for runCtx.Err() == nil {
				if r.cfg.MaxOps > 0 && r.ops.Add(1) > int64(r.cfg.MaxOps) {
					stopClients()
					return
				}
				if c.randomOp(opCtx) == Ambiguous {
					c.backOff(runCtx)
				} else {
					c.ambiguous = 0
				}
			}
		}()
	}
	clientWG.Wait()
	// A final quorum read of every key and a final quorum list (the
	// revision at the end: every write that finished, or that will ever be
	// observed, is at or below it — see finalRevision), then time for
	// watches to catch up.
	if ctx.Err() == nil {
		c := &client{r: r, id: r.cfg.Clients, cs: r.clients[0], rnd: rand.New(rand.NewPCG(r.cfg.Seed, 1<<20)), rvs: map[string]int64{}}
		for _, k := range r.keys {
			c.get(opCtx, k, "")
		}
		c.list(opCtx, "", "", 0)
		select {
		case <-ctx.Done():
		case <-time.After(500 * time.Millisecond):
		}
	}
	stopWatches()
	watchWG.Wait()
	return r.assemble(), nil
}

func (r *Recorder) ensureNamespace(ctx context.Context) error {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.cfg.Namespace}}
	// Setup, not part of the history: retry what a server under faults may
	// answer transiently (timeouts, 429, 5xx) for up to 30 s.
	deadline := time.Now().Add(30 * time.Second)
	for {
		_, err := r.clients[0].CoreV1().Namespaces().Create(ctx, ns, metav1.CreateOptions{})
		retry := transient(err)
		switch {
		case err == nil || apierrors.IsAlreadyExists(err):
			return nil
		case apierrors.IsForbidden(err):
			// Credentials allowed ConfigMaps in one namespace only (a CI
			// job's, typically) may not create, nor even read, the
			// namespace: a dry-run ConfigMap create tells whether it
			// exists with the rights the run needs anyway.
			probeErr := r.probeNamespace(ctx)
			if probeErr == nil {
				return nil
			}
			err = fmt.Errorf("%w; and %w", err, probeErr)
			retry = transient(probeErr)
		}
		if !retry || time.Now().After(deadline) {
			return fmt.Errorf("creating namespace %s: %w", r.cfg.Namespace, err)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("creating namespace %s: %w", r.cfg.Namespace, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// transient says whether err is an answer a server under faults may give
// for a while (a timeout, a 429, a 500 or a 503), worth retrying during
// the setup.
func transient(err error) bool {
	return apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) ||
		apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err)
}

// probeNamespace creates one of the run's ConfigMaps with dryRun=All: an
// answer of 201 says the namespace exists and the run may write there; a
// missing namespace answers 404 (namespaces "NAME" not found). A 409 (a
// ConfigMap of an earlier run with the same seed left behind) says the
// namespace exists too: a create is admitted, NamespaceLifecycle
// included, before the store finds its name taken, as kube-apiserver's
// dry-run storage does for a real one. Nothing is stored.
func (r *Recorder) probeNamespace(ctx context.Context) error {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: r.keys[0], Namespace: r.cfg.Namespace, Labels: map[string]string{RunLabel: r.run},
	}}
	_, err := r.clients[0].CoreV1().ConfigMaps(r.cfg.Namespace).Create(ctx, cm, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("trying a ConfigMap create there (dry run): %w", err)
	}
	return nil
}

func (r *Recorder) record(o Op) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.history = append(r.history, o)
}

// assemble orders the operations by call time and numbers them.
func (r *Recorder) assemble() *History {
	r.mu.Lock()
	defer r.mu.Unlock()
	ops := append([]Op(nil), r.history...)
	sort.SliceStable(ops, func(i, j int) bool { return ops[i].Call < ops[j].Call })
	for i := range ops {
		ops[i].ID = i
	}
	return &History{
		Scenario: r.cfg.Scenario, Clients: r.cfg.Clients, Keys: append([]string(nil), r.keys...),
		Duration: r.Now(), Ops: ops, Watches: append([]Watch(nil), r.watches...),
		Compactions: append([]Compaction(nil), r.compactions...), ExpiredExact: r.cfg.ExpiredExact,
	}
}

// classify maps an API error to an outcome.
func classify(err error) Outcome {
	switch {
	case err == nil:
		return OK
	case apierrors.IsAlreadyExists(err):
		return AlreadyExists
	case apierrors.IsConflict(err):
		return Conflict
	case apierrors.IsNotFound(err):
		return NotFound
	case apierrors.IsResourceExpired(err) || apierrors.IsGone(err):
		return Expired
	case apierrors.IsTooManyRequests(err):
		return Failed
	case errors.Is(err, syscall.ECONNREFUSED):
		// Nothing was sent: the server was not listening.
		return Failed
	}
	var st apierrors.APIStatus
	if errors.As(err, &st) {
		code := st.Status().Code
		if code >= 400 && code < 500 {
			return Failed
		}
	}
	// 5xx, timeouts, resets, cancellations: it may or may not have happened.
	return Ambiguous
}

// toObject converts a ConfigMap to the checker's view of it.
func toObject(cm *corev1.ConfigMap) Object {
	rv, _ := strconv.ParseInt(cm.ResourceVersion, 10, 64)
	return Object{Key: cm.Name, Value: cm.Data[DataKey], Group: cm.Labels[GroupLabel], RV: rv}
}

// client issues random operations and records them.
type client struct {
	r   *Recorder
	id  int
	cs  kubernetes.Interface
	rnd *rand.Rand
	seq int
	// rvs is the last resourceVersion this client saw per key.
	rvs map[string]int64
	// ambiguous counts the client's consecutive operations with an
	// ambiguous outcome.
	ambiguous int
}

// backOff pauses a client whose operation had an ambiguous outcome (a
// server failing fast with 5xx, a fault dropping responses): 10 ms after
// the first, doubling up to 320 ms, until ctx ends. Every ambiguous write
// stays pending in the per-key search, so a client must not pile them
// up on a key at full speed.
func (c *client) backOff(ctx context.Context) {
	d := 10 * time.Millisecond << min(c.ambiguous, 5)
	c.ambiguous++
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}

func (c *client) nextValue() (string, string) {
	c.seq++
	group := "a"
	if c.rnd.IntN(2) == 1 {
		group = "b"
	}
	return fmt.Sprintf("c%d-%d", c.id, c.seq), group
}

func (c *client) configMap(key, value, group string, rv int64) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: key, Namespace: c.r.cfg.Namespace, Labels: map[string]string{RunLabel: c.r.run, GroupLabel: group}},
		Data:       map[string]string{DataKey: value},
	}
	if rv != 0 {
		cm.ResourceVersion = strconv.FormatInt(rv, 10)
	}
	return cm
}

// do runs one request with the per-op timeout and records it.
func (c *client) do(ctx context.Context, o Op, req func(ctx context.Context, o *Op) error) Outcome {
	ctx, cancel := context.WithTimeout(ctx, c.r.cfg.OpTimeout)
	defer cancel()
	o.Client = c.id
	o.Call = c.r.Now()
	err := req(ctx, &o)
	o.Return = c.r.Now()
	o.Outcome = classify(err)
	if err != nil {
		o.Error = err.Error()
		o.Object, o.Items = nil, nil
	}
	if o.Outcome == OK {
		if o.Object != nil {
			c.rvs[o.Key] = o.Object.RV
			c.r.seen(o.Object.RV)
		}
		for _, it := range o.Items {
			c.rvs[it.Key] = it.RV
		}
		c.r.seen(o.ListRV)
	}
	c.r.record(o)
	return o.Outcome
}

func (c *client) randomOp(ctx context.Context) Outcome {
	key := c.r.keys[c.rnd.IntN(len(c.r.keys))]
	recent := strconv.FormatInt(c.r.MaxRV(), 10)
	switch p := c.rnd.IntN(100); {
	case p < 15:
		return c.create(ctx, key)
	case p < 35:
		return c.get(ctx, key, "")
	case p < 40:
		return c.get(ctx, key, "0")
	case p < 45:
		return c.get(ctx, key, recent)
	case p < 50:
		return c.list(ctx, "", "", 0)
	case p < 53:
		return c.list(ctx, "0", "", 0)
	case p < 57:
		return c.list(ctx, recent, "Exact", 0)
	case p < 59:
		return c.list(ctx, recent, "NotOlderThan", 0)
	case p < 64:
		return c.list(ctx, "", "", 2)
	case p < 76:
		return c.update(ctx, key, c.rvs[key])
	case p < 81:
		return c.update(ctx, key, 0)
	case p < 90:
		return c.patch(ctx, key)
	case p < 95:
		return c.delete(ctx, key, c.rvs[key])
	default:
		return c.delete(ctx, key, 0)
	}
}

func (c *client) create(ctx context.Context, key string) Outcome {
	value, group := c.nextValue()
	return c.do(ctx, Op{Kind: Create, Key: key, Value: value, Group: group}, func(ctx context.Context, o *Op) error {
		cm, err := c.cs.CoreV1().ConfigMaps(c.r.cfg.Namespace).Create(ctx, c.configMap(key, value, group, 0), metav1.CreateOptions{})
		if err == nil {
			obj := toObject(cm)
			o.Object = &obj
		}
		return err
	})
}

func (c *client) get(ctx context.Context, key, rv string) Outcome {
	return c.do(ctx, Op{Kind: Get, Key: key, ResourceVersion: rv}, func(ctx context.Context, o *Op) error {
		cm, err := c.cs.CoreV1().ConfigMaps(c.r.cfg.Namespace).Get(ctx, key, metav1.GetOptions{ResourceVersion: rv})
		if err == nil {
			obj := toObject(cm)
			o.Object = &obj
		}
		return err
	})
}

func (c *client) list(ctx context.Context, rv, match string, limit int64) Outcome {
	return c.do(ctx, Op{Kind: List, ResourceVersion: rv, Match: match, Limit: limit}, func(ctx context.Context, o *Op) error {
		opts := metav1.ListOptions{LabelSelector: RunLabel + "=" + c.r.run, ResourceVersion: rv, ResourceVersionMatch: metav1.ResourceVersionMatch(match), Limit: limit}
		for {
			l, err := c.cs.CoreV1().ConfigMaps(c.r.cfg.Namespace).List(ctx, opts)
			if err != nil {
				return err
			}
			pageRV, _ := strconv.ParseInt(l.ResourceVersion, 10, 64)
			if o.Pages == 0 {
				o.ListRV = pageRV
			}
			o.Pages++
			o.PageRVs = append(o.PageRVs, pageRV)
			for i := range l.Items {
				o.Items = append(o.Items, toObject(&l.Items[i]))
			}
			if l.Continue == "" {
				return nil
			}
			opts.Continue, opts.ResourceVersion, opts.ResourceVersionMatch = l.Continue, "", ""
		}
	})
}

func (c *client) update(ctx context.Context, key string, precondition int64) Outcome {
	value, group := c.nextValue()
	return c.do(ctx, Op{Kind: Update, Key: key, Value: value, Group: group, Precondition: precondition}, func(ctx context.Context, o *Op) error {
		cm, err := c.cs.CoreV1().ConfigMaps(c.r.cfg.Namespace).Update(ctx, c.configMap(key, value, group, precondition), metav1.UpdateOptions{})
		if err == nil {
			obj := toObject(cm)
			o.Object = &obj
		}
		return err
	})
}

func (c *client) patch(ctx context.Context, key string) Outcome {
	value, group := c.nextValue()
	body := fmt.Sprintf(`{"metadata":{"labels":{%q:%q}},"data":{%q:%q}}`, GroupLabel, group, DataKey, value)
	return c.do(ctx, Op{Kind: Patch, Key: key, Value: value, Group: group}, func(ctx context.Context, o *Op) error {
		cm, err := c.cs.CoreV1().ConfigMaps(c.r.cfg.Namespace).Patch(ctx, key, types.MergePatchType, []byte(body), metav1.PatchOptions{})
		if err == nil {
			obj := toObject(cm)
			o.Object = &obj
		}
		return err
	})
}

func (c *client) delete(ctx context.Context, key string, precondition int64) Outcome {
	return c.do(ctx, Op{Kind: Delete, Key: key, Precondition: precondition}, func(ctx context.Context, o *Op) error {
		opts := metav1.DeleteOptions{}
		if precondition != 0 {
			s := strconv.FormatInt(precondition, 10)
			opts.Preconditions = &metav1.Preconditions{ResourceVersion: &s}
		}
		return c.cs.CoreV1().ConfigMaps(c.r.cfg.Namespace).Delete(ctx, key, opts)
	})
}
