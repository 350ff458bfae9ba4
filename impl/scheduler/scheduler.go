// Package scheduler is kubeproof's kube-scheduler: it watches pods that name
// one of its profiles' schedulerName and have no node yet, decides a node for
// each with the framework's plugins (filter in parallel, score, pick the best
// with seeded tie-breaking), assumes the pod onto the node in its cache so
// the next decision already counts it, and binds asynchronously through POST
// pods/binding. A pod no node fits gets PodScheduled=False/Unschedulable with
// Kubernetes' diagnosis message and a FailedScheduling event, may preempt
// lower-priority pods, and waits in the unschedulable queue until a cluster
// event may help.
//
// Spec properties: SCHED-1 BindOnce (a pod is bound at most once: only pods
// without spec.nodeName are queued, an assumed pod is never tried again, and
// the binding is a POST the server refuses for a bound pod); SCHED-2
// NodeCapacity (NodeResourcesFit filters by free allocatable, and the pod is
// assumed onto its node before the binding is sent, so decisions made while
// bindings are in flight count it; a failed binding forgets the assumption
// and requeues the pod); SCHED-3 BindUntainted (TaintToleration filters
// untolerated NoSchedule and NoExecute taints).
//
// After a node is chosen, the Reserve and Permit plugins run in the
// scheduling cycle and WaitOnPermit, PreBind, the binding and PostBind in the
// binding cycle (framework/binding_interface.go); a failure after Reserve
// runs Unreserve, forgets the assumption and requeues the pod. Informer
// caches hold pods and nodes trimmed to what scheduling reads (transform.go).
//
// HTTP scheduler extenders (configuration's extenders) filter and score
// after the plugins, may narrow preemption's candidates and may bind
// (package extender). Events go through a bounded recorder (package
// eventrecorder).
//
// Not implemented (compared with kube-scheduler): Bind plugins (binding is
// the scheduler's own POST, or an extender's); managedResources'
// ignoredByScheduler (NodeResourcesFit still checks such resources); the
// NodeVolumeLimits, VolumeBinding and VolumeZone plugins and
// VolumeRestrictions' ReadWriteOncePod check (they need PersistentVolumes
// and claims, which kubeproof's API server does not serve); the
// dynamic-resource plugins; per-plugin queueing hints (requeueing uses each
// plugin's registered cluster events).
package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	v1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	corelisters "k8s.io/client-go/listers/core/v1"
	policylisters "k8s.io/client-go/listers/policy/v1"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"

	schedcache "github.com/kubeproof/kubeproof/impl/scheduler/cache"
	"github.com/kubeproof/kubeproof/impl/scheduler/config"
	"github.com/kubeproof/kubeproof/impl/scheduler/eventrecorder"
	"github.com/kubeproof/kubeproof/impl/scheduler/extender"
	fw "github.com/kubeproof/kubeproof/impl/scheduler/framework"
	"github.com/kubeproof/kubeproof/impl/scheduler/metrics"
	"github.com/kubeproof/kubeproof/impl/scheduler/plugins"
	"github.com/kubeproof/kubeproof/impl/scheduler/queue"
)

// Config is what New needs besides the client.
type Config struct {
	// Configuration is the KubeSchedulerConfiguration; nil means
	// config.Default() (one profile, default-scheduler). Its
	// leaderElection.leaderElect decides whether Run elects a leader.
	Configuration *config.KubeSchedulerConfiguration
	// Identity is this instance's leader election identity (default
	// hostname_uuid).
	Identity string
	// Seed seeds the tie-breaking among equally scored nodes; 0 picks a
	// time-based seed.
	Seed int64
	// AssumedPodTTL expires assumptions whose binding finished but was
	// never observed (default 30 s).
	AssumedPodTTL time.Duration
	// Logger defaults to slog.Default().
	Logger *slog.Logger
	// Registry overrides the plugin registry (tests); default
	// plugins.NewInTreeRegistry().
	Registry fw.Registry
	// MaxInFlightBindings bounds the bindings posted but not yet answered
	// (default 256); the loop waits for a slot, so a slow API server slows
	// decisions instead of piling up goroutines.
	MaxInFlightBindings int
	// PodInformer, when set, is an informer of every pod of the cluster
	// that other components of this process use too and its owner runs
	// (the node-memory benchmark's agent shares the kubelets' one), used
	// instead of the scheduler's own watch of non-terminal pods. The
	// scheduler keeps its own handlers, queue and cache, so it schedules
	// exactly as with its own informer: its handlers already pass over
	// terminal pods (a pod turning terminal reaches them as a delete),
	// they ask for no resync, and Run removes them when it returns. Its
	// objects must be read-only, as every informer's are. Nil: the
	// scheduler watches pods itself, trimmed to what scheduling reads
	// (transform.go), as kube-scheduler does in its own process.
	PodInformer toolscache.SharedIndexInformer
	// PodTrace, if set, is told when a pod reaches each stage of its
	// scheduling (TraceQueued, TraceAttempt, TraceBindingSent, TraceBound):
	// where a slow pod's time went. Nil costs nothing.
	PodTrace PodTraceFunc
	// WatchDog, when set and leader election is on, is the elector's
	// watchdog: its Check (/healthz's and /readyz's "leaderElection", as
	// kube-scheduler's) fails when this instance leads but has not
	// renewed its Lease in time.
	WatchDog *leaderelection.HealthzAdaptor
}

// Scheduler is one scheduler instance with one or more profiles.
type Scheduler struct {
	client   kubernetes.Interface
	cfg      Config
	conf     *config.KubeSchedulerConfiguration
	log      *slog.Logger
	profiles map[string]*fw.Framework

	informers informers.SharedInformerFactory
	// podHandlers are the scheduler's registrations on Config.PodInformer,
	// removed when Run returns.
	podHandlers []toolscache.ResourceEventHandlerRegistration
	podLister   corelisters.PodLister
	nodeLister  corelisters.NodeLister
	synced      []toolscache.InformerSynced

	cache     *schedcache.Cache
	queue     *queue.PriorityQueue
	snapshot  *schedcache.Snapshot
	algorithm *Algorithm
	metrics   *metrics.Metrics

	broadcaster *eventrecorder.Broadcaster
	recorders   map[string]events.EventRecorder

	bindings  sync.WaitGroup
	bindSlots chan struct{}
	ran       sync.Once
	// handlersSynced is set once the informers delivered their initial
	// lists (the "sched-handler-sync" readiness check).
	handlersSynced atomic.Bool

	// pdbLister is set in Run when the API server serves policy/v1
	// PodDisruptionBudgets; preemption reads them through it.
	pdbLister atomic.Pointer[policylisters.PodDisruptionBudgetLister]
	// workloads find pods' workloads for PodTopologySpread's defaults.
	workloads workloadListers
}

// New builds a scheduler: profiles from the configuration, informers on
// pods and nodes, the queue, the cache and event recording. Nothing runs
// until Run.
func New(ctx context.Context, client kubernetes.Interface, cfg Config) (*Scheduler, error) {
	conf := cfg.Configuration
	if conf == nil {
		conf = config.Default()
	}
	config.SetDefaults(conf)
	if err := config.Validate(conf); err != nil {
		return nil, fmt.Errorf("invalid scheduler configuration: %w", err)
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	if cfg.AssumedPodTTL == 0 {
		cfg.AssumedPodTTL = 30 * time.Second
	}
	if cfg.MaxInFlightBindings <= 0 {
		cfg.MaxInFlightBindings = 256
	}
	if cfg.Seed == 0 {
		cfg.Seed = time.Now().UnixNano()
	}
	if cfg.Identity == "" {
		host, _ := os.Hostname()
		cfg.Identity = host + "_" + uuid.NewString()
	}
	registry := cfg.Registry
	if registry == nil {
		registry = plugins.NewInTreeRegistry()
	}
	s := &Scheduler{
		client:      client,
		cfg:         cfg,
		conf:        conf,
		log:         cfg.Logger.With("component", "scheduler"),
		profiles:    map[string]*fw.Framework{},
		cache:       schedcache.New(cfg.AssumedPodTTL, nil),
		snapshot:    schedcache.NewEmptySnapshot(),
		algorithm:   NewAlgorithm(*conf.PercentageOfNodesToScore, cfg.Seed),
		metrics:     metrics.New(),
		recorders:   map[string]events.EventRecorder{},
		broadcaster: eventrecorder.New(client.EventsV1(), eventrecorder.Options{Logger: cfg.Logger.With("component", "scheduler-events")}),
		bindSlots:   make(chan struct{}, cfg.MaxInFlightBindings),
	}
	for i, ec := range conf.Extenders {
		ext, err := extender.New(ec)
		if err != nil {
			return nil, fmt.Errorf("extenders[%d]: %w", i, err)
		}
		s.algorithm.extenders = append(s.algorithm.extenders, ext)
	}
	var preemptionExtenders []fw.PreemptionExtender
	for _, ext := range s.algorithm.extenders {
		preemptionExtenders = append(preemptionExtenders, ext)
	}
	s.informers = informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(NewTransformer().Transform))
	nsInformer := s.informers.Core().V1().Namespaces()
	nsLister := nsInformer.Lister()
	namespaceLabels := func(name string) labels.Set {
		ns, err := nsLister.Get(name)
		if err != nil {
			return nil
		}
		return ns.Labels
	}
	var less fw.LessFunc
	interest := map[string][]fw.ClusterEvent{}
	waitingPods := fw.NewWaitingPods()
	for i := range conf.Profiles {
		p := &conf.Profiles[i]
		fwk, err := fw.NewFramework(ctx, registry, p,
			fw.WithSnapshotSharedLister(s.snapshot),
			fw.WithParallelism(int(*conf.Parallelism)),
			fw.WithMetricsRecorder(s.metrics),
			fw.WithNamespaceLabels(namespaceLabels),
			fw.WithWaitingPods(waitingPods),
			fw.WithPodDisruptionBudgets(s.listPDBs),
			fw.WithDefaultSelector(s.workloads.DefaultSelector),
			fw.WithExtenders(preemptionExtenders))
		if err != nil {
			return nil, err
		}
		s.profiles[p.SchedulerName] = fwk
		s.recorders[p.SchedulerName] = s.broadcaster.NewRecorder(scheme.Scheme, p.SchedulerName)
		if less == nil {
			less = fwk.QueueSortFunc()
		}
		for _, e := range fwk.EnqueueExtensions() {
			interest[e.Name()] = append(interest[e.Name()], e.EventsToRegister()...)
		}
	}
	s.queue = queue.New(less,
		queue.WithBackoff(time.Duration(*conf.PodInitialBackoffSeconds)*time.Second, time.Duration(*conf.PodMaxBackoffSeconds)*time.Second),
		queue.WithClusterEventInterest(interest))
	for _, fwk := range s.profiles {
		fwk.SetPodNominator(s.queue)
	}

	podInformer := cfg.PodInformer
	if podInformer == nil {
		// Terminal pods take no resources; like upstream, leave them out.
		podInformer = s.informers.InformerFor(&v1.Pod{}, func(c kubernetes.Interface, resync time.Duration) toolscache.SharedIndexInformer {
			return coreinformers.NewFilteredPodInformer(c, metav1.NamespaceAll, resync, toolscache.Indexers{}, func(o *metav1.ListOptions) {
				o.FieldSelector = "status.phase!=" + string(v1.PodSucceeded) + ",status.phase!=" + string(v1.PodFailed)
			})
		})
	}
	nodeInformer := s.informers.Core().V1().Nodes()
	s.podLister = corelisters.NewPodLister(podInformer.GetIndexer())
	s.nodeLister = nodeInformer.Lister()
	if err := s.addEventHandlers(podInformer, nodeInformer.Informer()); err != nil {
		return nil, err
	}
	s.synced = []toolscache.InformerSynced{podInformer.HasSynced, nodeInformer.Informer().HasSynced, nsInformer.Informer().HasSynced}
	for _, reg := range s.podHandlers {
		// A shared informer may have synced long ago: wait until the
		// scheduler's own handlers have seen every pod.
		s.synced = append(s.synced, reg.HasSynced)
	}
	return s, nil
}

// Profiles returns the frameworks by schedulerName.
func (s *Scheduler) Profiles() map[string]*fw.Framework { return s.profiles }

// Cache returns the scheduler's cache (tests, benchmarks).
func (s *Scheduler) Cache() *schedcache.Cache { return s.cache }

// Queue returns the scheduling queue (tests).
func (s *Scheduler) Queue() *queue.PriorityQueue { return s.queue }

// MetricsHandler serves this scheduler's /metrics.
func (s *Scheduler) MetricsHandler() http.Handler { return s.metrics.Handler() }

// HandlersSynced is whether the informers have delivered their initial
// lists: kube-scheduler's "sched-handler-sync" readiness check.
func (s *Scheduler) HandlersSynced() bool { return s.handlersSynced.Load() }

// Run starts the informers, waits for them to sync, then — after winning
// leader election when it is enabled — schedules until ctx is done. It
// returns after every goroutine it started has stopped, with nil when ctx
// ended it (also before the caches synced). Run may be called once.
func (s *Scheduler) Run(ctx context.Context) error {
	err := errors.New("scheduler: Run called twice")
	s.ran.Do(func() { err = s.run(ctx) })
	return err
}

func (s *Scheduler) run(parent context.Context) error {
	ctx, cancel := context.WithCancel(parent)
	defer cancel()
	defer s.removePodHandlers()
	// Events are written by a bounded recorder (package eventrecorder),
	// running until run returns.
	eventsCtx, stopEvents := context.WithCancel(context.WithoutCancel(ctx))
	var eventsDone sync.WaitGroup
	eventsDone.Add(1)
	go func() {
		defer eventsDone.Done()
		s.broadcaster.Run(eventsCtx)
	}()
	defer func() {
		stopEvents()
		eventsDone.Wait()
	}()
	if err := s.watchPDBsIfServed(ctx); err != nil {
		return err
	}
	if err := s.watchWorkloadsIfServed(ctx); err != nil {
		return err
	}
	s.informers.Start(ctx.Done())
	defer s.informers.Shutdown()
	if !toolscache.WaitForCacheSync(ctx.Done(), s.synced...) {
		if parent.Err() != nil {
			return nil // stopped while starting up: not a failure
		}
		return fmt.Errorf("scheduler: waiting for informer caches to sync: %w", context.Cause(ctx))
	}
	s.handlersSynced.Store(true)
	if !*s.conf.LeaderElection.LeaderElect {
		s.scheduleUntilDone(ctx)
		return nil
	}
	le := s.conf.LeaderElection
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.ResourceNamespace, le.ResourceName,
		s.client.CoreV1(), s.client.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: s.cfg.Identity})
	if err != nil {
		return fmt.Errorf("scheduler: creating leader election lock: %w", err)
	}
	// The elector runs OnStartedLeading on a goroutine of its own; run
	// waits for it, and a late start after the elector returned does nothing.
	var (
		leadMu   sync.Mutex
		leadDone bool
		leading  sync.WaitGroup
	)
	elector, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:            lock,
		LeaseDuration:   le.LeaseDuration.Duration,
		RenewDeadline:   le.RenewDeadline.Duration,
		RetryPeriod:     le.RetryPeriod.Duration,
		ReleaseOnCancel: true,
		Name:            le.ResourceName,
		WatchDog:        s.cfg.WatchDog,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(ctx context.Context) {
				leadMu.Lock()
				if leadDone {
					leadMu.Unlock()
					return
				}
				leading.Add(1)
				leadMu.Unlock()
				defer leading.Done()
				s.log.Info("became leader", "identity", s.cfg.Identity)
				s.scheduleUntilDone(ctx)
			},
			OnStoppedLeading: func() {
				s.log.Info("stopped leading", "identity", s.cfg.Identity)
				cancel()
			},
		},
	})
	if err != nil {
		return fmt.Errorf("scheduler: configuring leader election: %w", err)
	}
	elector.Run(ctx)
	leadMu.Lock()
	leadDone = true
	leadMu.Unlock()
	leading.Wait()
	if parent.Err() == nil {
		// Like kube-scheduler, stop rather than keep scheduling on a
		// possibly stale view: the process (or its supervisor) restarts.
		return ErrLostLeadership
	}
	return nil
}

// ErrLostLeadership is what Run returns when the scheduler stopped because
// it lost its Lease (another scheduler took over, or renewals missed their
// deadline).
var ErrLostLeadership = errors.New("scheduler: lost leader election")

// watchPDBsIfServed adds a PodDisruptionBudget informer when the API server
// serves policy/v1 poddisruptionbudgets (a kube-apiserver does; an API
// server without them means no budgets). It asks discovery until it gets an
// answer or ctx is done.
func (s *Scheduler) watchPDBsIfServed(ctx context.Context) error {
	served, err := s.servedResources(ctx, "policy/v1")
	if err != nil {
		return err
	}
	if !served["poddisruptionbudgets"] {
		s.log.Info("PodDisruptionBudgets not served; preemption ignores budgets")
		return nil
	}
	inf := s.informers.Policy().V1().PodDisruptionBudgets()
	s.synced = append(s.synced, inf.Informer().HasSynced)
	lister := inf.Lister()
	s.pdbLister.Store(&lister)
	return nil
}

// listPDBs lists the PodDisruptionBudgets seen so far (none if they are
// not served).
func (s *Scheduler) listPDBs() ([]*policyv1.PodDisruptionBudget, error) {
	l := s.pdbLister.Load()
	if l == nil {
		return nil, nil
	}
	return (*l).List(labels.Everything())
}

// scheduleUntilDone runs the scheduling loop and the queue's and cache's
// housekeeping until ctx is done, then waits for in-flight bindings.
func (s *Scheduler) scheduleUntilDone(ctx context.Context) {
	var wg sync.WaitGroup
	wg.Add(2)
	go func() {
		defer wg.Done()
		s.queue.Run(ctx)
	}()
	go func() {
		defer wg.Done()
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return
			case <-t.C:
				s.cache.CleanupExpiredAssumedPods()
				s.metrics.SetPending(s.queue.Lengths())
			}
		}
	}()
	for ctx.Err() == nil {
		s.ScheduleOne(ctx)
	}
	s.queue.Close()
	wg.Wait()
	s.bindings.Wait()
}
