// Package kubelet is kubeproof's node agent. It registers its Node, renews
// its Lease in kube-node-lease, keeps node conditions current, watches the
// pods bound to its node (plus a periodic full resync) and converges each
// one with the container runtime: admission, sandbox, init containers and
// sidecars (restartable init containers), app
// containers, image pulls with upstream's ImagePullBackOff, hooks, probes,
// restarts with CrashLoopBackOff, in-place resizes of running pods
// (resize.go), graceful termination and the final delete. Decisions are
// pure (podsync, status.GenerateAPIPodStatus, Admit, NodeStatus,
// admitResize, planResize); this package does the I/O around them.
//
// Cheapness: a kubelet shares its clientset, runs one informer, one
// housekeeping goroutine (relist, periodic resync, lease, node status) and
// a small pool of workers over a delaying work queue keyed by pod UID (the
// "pod workers": one UID is never synced by two workers at once); no
// goroutine per pod. As upstream's pod workers, a failed sync is retried
// after Config.SyncErrorBackOff (10–15 s; syncRetryDelay), not at the
// next full resync, while a pod update or a container state change syncs
// the pod at once; one that failed setting up the pod's volumes is retried
// on upstream's volume back-off instead (0.5 s doubling to 2 min 2 s).
//
// KUBELET-1: HandlePod ignores pods bound to other nodes, and runtime pods
// whose API pod is gone are killed and removed.
//
// Restart safety (KUBELET-2): runtime objects carry io.kubernetes.pod.uid
// labels; a new kubelet lists them at start, adopts them, and every
// decision is recomputed from the runtime's current state, so a pod never
// gets a second ready sandbox and its status (restart counts, start time)
// is regenerated, not lost.
package kubelet

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/kubelet/eventsink"
	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/podstate"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/prober"
	"github.com/kubeproof/kubeproof/impl/kubelet/pullrecords"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/status"
)

// Kubelet is one node agent. Create it with New, then call Run.
type Kubelet struct {
	cfg    Config
	client kubernetes.Interface
	rt     runtime.Runtime
	clock  clock.WithTicker
	log    *slog.Logger
	status *status.Manager

	// allocatable is cfg.allocatable(), made once (admission and every
	// started container's environment read it; nothing writes it).
	allocatable v1.ResourceList
	// cgroups makes the node's pod cgroups (podcgroups.go); nil on a
	// simulated node.
	cgroups podCgroups
	// qos names the QoS classes' cgroups under Config.CgroupRoot;
	// allocatableCgroup is kubepods's values (nodeAllocatableCgroupConfig
	// of Config.kubepodsResources)
	// and allocatableEnforced whether they were written (Run's, then
	// housekeeping's only).
	qos                 qosCgroups
	allocatableCgroup   cgroupConfig
	allocatableEnforced bool
	// objects serves the ConfigMaps and Secrets pods use (objectcache.go).
	objects *objectManager
	// pulls records which credentials pulled which image (pullcredentials.go).
	pulls *pullrecords.Store

	queue  workqueue.TypedDelayingInterface[types.UID]
	paused atomic.Bool
	events atomic.Pointer[record.EventRecorder]
	// httpFallbacks counts HTTPS lifecycle hooks that succeeded over HTTP
	// (LifecycleHTTPFallbacks).
	httpFallbacks atomic.Uint64
	// certs are the certificate managers /metrics reports
	// (SetCertificateManagers).
	certs atomic.Pointer[[2]*CertificateManager]
	// addresses are the node's addresses in the last status it posted
	// (NodeAddresses), for the serving certificate's SANs.
	addresses atomic.Pointer[[]v1.NodeAddress]

	// evictions is the eviction manager (its pressure conditions are
	// copied into pressure); simEviction its provider on a simulated node.
	evictions   *eviction.Manager
	simEviction *eviction.SimProvider
	evictMu     sync.Mutex // one eviction interval at a time
	gcMu        sync.Mutex // the collector's making (nodeGC): GC loops and eviction manager
	// evictWait is the eviction manager waiting for the pods its last
	// interval evicted (evict.go; guarded by evictMu); evictWaiting says
	// there is one, evictWakeAt when it next needs stepping (its last
	// step's WakeAt, Unix nanoseconds), and evictWake (one slot) wakes
	// housekeeping to step it sooner: a victim's kill ended.
	evictWait    *eviction.Wait
	evictWaiting atomic.Bool
	evictWakeAt  atomic.Int64
	evictWake    chan struct{}
	// unsyncedLeft is len(unsynced), for workers to skip markSynced
	// without taking mu once every adopted pod was synced.
	unsyncedLeft atomic.Int64
	qosMu        sync.Mutex // one QoS cgroup update at a time (podcgroups.go)

	services atomic.Pointer[serviceSource] // set by Run (serviceenv.go)

	mu             sync.Mutex
	pods           map[types.UID]*podRecord
	resizes        map[types.UID]*podResize    // pods resized in place (resize.go); nil until the first
	syncs          map[types.UID]*syncInFlight // the syncs an update may cut short under way (syncpod.go); nil until the first
	terminated     map[types.UID]terminatedPod // pods whose kill ending them succeeded (markKilled), for the eviction manager; nil until the first
	decided        map[types.UID]struct{}      // pods their worker gave a terminal status (podRecord.terminal: a deadline, a completion), for requestEviction; nil until the first
	unsynced       map[types.UID]struct{}      // pods adopted at start (admitted) their worker has not synced yet (markSynced), for the eviction manager; nil once none
	allocFile      string                      // where resizes' allocations are kept ("": memory only; resizestate.go)
	started        time.Time                   // when New made it: a sandbox older was made by an earlier kubelet (planPodResize)
	sourceSynced   bool
	node           *v1.Node
	lease          *coordinationv1.Lease
	lastNodeReport time.Time
	// nodeUnschedulable is the node's spec.unschedulable as last seen
	// by a status update, for the NodeNotSchedulable/NodeSchedulable
	// events (nodeevents.go).
	nodeUnschedulable bool
	pressure          Pressure
	relistBuf         []relistEntry // reused by each relist (housekeeping's only)
	relistVersion     uint64        // the runtime's ContainerStatesVersion last listed (housekeeping's only)
	runCtx            context.Context
	runCancel         context.CancelFunc
	runDone           chan struct{}
	// resizesAwaiting: the pods whose resize waits for other pods'
	// admission (allocateResize), synced again once none is left to
	// admit (wakeAwaitingResizesLocked); nil while none waits.
	resizesAwaiting map[types.UID]struct{}

	// nodeReportDelay moves the next unchanged node status post
	// (NextReportDelay); testReportRand, if set, replaces its random draw.
	nodeReportDelay time.Duration
	testReportRand  func() float64
}

// podRecord is the kubelet's memory of one pod (one per pod of the node,
// thousands in a process running many simulated nodes: kept small, its
// flags together, its maps made when first needed). pod, admitted and
// rejected are guarded by Kubelet.mu; the rest is touched only by the
// worker syncing this UID, but lastStatus, which that worker alone writes
// (with Kubelet.mu held) and reads without it, and which the kubelet API's
// log requests read with it held (lastTerminatedID).
type podRecord struct {
	pod      *v1.Pod            // latest from the source; nil once gone from the API
	lastPod  *v1.Pod            // last known spec, for cleanup
	eviction *eviction.Eviction // requested by the eviction manager, not yet carried out
	terminal *podsync.Terminal
	// extra holds what few pods need (nil when all of it is empty): the
	// worker's, read through x and made by more.
	extra        *podExtra
	lastStatus   *v1.PodStatus // last status written (the source pod's, once that has caught up)
	lastStatusRV string        // the resourceVersion that write produced
	volumesAt    int64         // when volumes were last set up (Unix nanoseconds; 0: never)
	// When to renew each projected token. A pod has one (its
	// kube-api-access volume's) or two: the first is kept in the record
	// itself (valid when hasToken), not in a slice of its own, one heap
	// object less per pod; further ones in extra.moreTokens.
	token tokenRefresh

	relistFP uint64 // the relist's fingerprint of its containers (0: none); guarded by Kubelet.mu
	// retryAt is when a failed sync is retried (Unix nanoseconds; 0: the
	// last sync succeeded); until then only a sync asked for at once
	// (syncNow) runs, not the full resync's. Both guarded by Kubelet.mu.
	retryAt int64
	syncNow bool

	admitted        bool
	rejected        bool
	evicted         bool // the eviction manager's kill began its termination: its content goes (podGCState); guarded by Kubelet.mu
	finalDeleteSent bool
	hasToken        bool
	// mountFailures counts the consecutive syncs that failed to set up
	// the pod's volumes (saturating), for the volume back-off
	// (mountRetryDelay); a sync that sets them up resets it.
	mountFailures uint8
	// statusRefusals counts the consecutive syncs whose status write was
	// refused (saturating), for their retry (statusRefusedError).
	statusRefusals uint8
}

// New returns a kubelet for cfg.NodeName, talking to the API through client
// (which may be shared with other kubelets) and to rt.
func New(ctx context.Context, client kubernetes.Interface, cfg Config, rt runtime.Runtime) (*Kubelet, error) {
	rootGiven := cfg.RootDir != ""
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	if client == nil || rt == nil {
		return nil, fmt.Errorf("kubelet %s: client and runtime are required", cfg.NodeName)
	}
	k := &Kubelet{
		cfg: cfg, allocatable: cfg.allocatable(), client: client, rt: rt, clock: cfg.Clock,
		log:     cfg.Logger.With("node", cfg.NodeName),
		status:  status.NewManager(client),
		objects: newObjectManager(client),
		pods:    map[types.UID]*podRecord{},
		qos:     qosCgroupsOf(cgroupRoot(cfg.CgroupRoot)),
		started: cfg.Clock.Now(),

		evictWake: make(chan struct{}, 1),
	}
	if cfg.CgroupDir != "" {
		k.allocatableCgroup = nodeAllocatableCgroupConfig(cfg.kubepodsResources())
	}
	if cfg.Recorder != nil {
		k.events.Store(&cfg.Recorder)
	}
	var err error
	if k.pulls, err = openPullRecords(&k.cfg, rootGiven, k); err != nil {
		return nil, fmt.Errorf("kubelet %s: %w", cfg.NodeName, err)
	}
	k.allocFile = allocationsPath(&k.cfg, rootGiven)
	if k.resizes, err = loadAllocations(k.allocFile); err != nil {
		return nil, fmt.Errorf("kubelet %s: %w", cfg.NodeName, err)
	}
	if k.cgroups, err = newPodCgroups(&k.cfg); err != nil {
		return nil, fmt.Errorf("kubelet %s: %w", cfg.NodeName, err)
	}
	if k.evictions, k.simEviction, err = newEvictionManager(&k.cfg, rt); err != nil {
		return nil, fmt.Errorf("kubelet %s: %w", cfg.NodeName, err)
	}
	if k.simEviction != nil {
		feedSimPressure(k.simEviction, cfg.Pressure)
	}
	return k, nil
}

// NodeName returns the node this kubelet runs.
func (k *Kubelet) NodeName() string { return k.cfg.NodeName }

// Runtime returns the kubelet's container runtime (for logs and exec).
func (k *Kubelet) Runtime() runtime.Runtime { return k.rt }

// StatusWrites is the number of pod status writes sent so far.
func (k *Kubelet) StatusWrites() int64 { return k.status.Writes() }

// Pause simulates a failed node: heartbeats, node status and pod syncs
// stop until Resume. Runtime state is untouched.
func (k *Kubelet) Pause() { k.paused.Store(true) }

// Paused reports whether the kubelet is paused (a simulated failed node).
func (k *Kubelet) Paused() bool { return k.paused.Load() }

// waitWhilePaused holds a kubelet started while paused — one restarted on a
// failed node — until Resume: a failed node's kubelet does not reach the
// API server, so it must not register the node (Ready again) or renew its
// lease, which would lift the node lifecycle controller's unreachable
// taint. It reports false if ctx ended first.
func (k *Kubelet) waitWhilePaused(ctx context.Context) bool {
	for k.paused.Load() {
		t := time.NewTimer(pausePoll)
		select {
		case <-ctx.Done():
			t.Stop()
			return false
		case <-t.C:
		}
	}
	return true
}

// pausePoll is how often a kubelet started while paused checks for Resume.
const pausePoll = 50 * time.Millisecond

// Resume undoes Pause.
func (k *Kubelet) Resume() {
	k.paused.Store(false)
	k.enqueueAll()
}

// Stop ends Run and waits for it to return.
func (k *Kubelet) Stop() {
	k.mu.Lock()
	cancel, done := k.runCancel, k.runDone
	k.mu.Unlock()
	if cancel != nil {
		cancel()
		<-done
	}
}

// Run registers the node, adopts what the runtime already runs, and syncs
// pods until ctx is done or Stop is called. It returns after every
// goroutine it started has ended.
func (k *Kubelet) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	k.mu.Lock()
	k.runCtx, k.runCancel, k.runDone = ctx, cancel, done
	k.mu.Unlock()
	defer close(done)
	defer cancel()
	k.objects.start(ctx)
	defer k.objects.stop()

	if k.cfg.Recorder == nil {
		b := record.NewBroadcaster(record.WithContext(ctx))
		// client-go's correlation and writes, its state kept compactly
		// (eventsink: ~48 heap objects per pod less at 30 pods a node).
		w := &eventsink.Writer{Sink: &typedcorev1.EventSinkImpl{Interface: k.client.CoreV1().Events("")},
			Correlator: eventsink.NewCorrelator(0, nil), Logger: k.log}
		w.Start(ctx, b)
		defer b.Shutdown()
		var r record.EventRecorder = b.NewRecorder(scheme.Scheme, v1.EventSource{Component: EventComponent, Host: k.cfg.NodeName})
		k.events.Store(&r)
	}
	if !k.waitWhilePaused(ctx) {
		return nil
	}
	// Upstream's "birth cry", before the node is registered.
	k.nodeEvent(v1.EventTypeNormal, EventStartingKubelet, "Starting kubelet.")
	if err := k.registerNodeWithRetry(ctx); err != nil {
		// Stopped before the node was registered: an orderly stop.
		k.log.Debug("stopped before registering the node", "err", err)
		return nil
	}
	if err := k.renewLease(ctx); err != nil {
		k.log.Warn("lease", "err", err)
	}
	// The QoS classes' cgroups (podcgroups.go), as upstream's container
	// manager at start: a kubelet that cannot make them does not run.
	if err := k.updateQOSCgroups(); err != nil {
		return fmt.Errorf("kubelet %s: failed to create top level QOS cgroups: %w", k.cfg.NodeName, err)
	}
	// Then the node's allocatable on kubepods (podcgroups.go), as
	// upstream's enforceNodeAllocatableCgroups.
	k.allocatableEnforced = k.enforceNodeAllocatable()
	// And the reservations on their cgroups where enforced
	// (allocatable.go): a kubelet that cannot does not run, as upstream's.
	if err := k.enforceReservedCgroups(); err != nil {
		return fmt.Errorf("kubelet %s: %w", k.cfg.NodeName, err)
	}
	// With swap, whether memory-backed volumes may be swapped out, as
	// upstream's container manager tells at start (memoryvolumes.go).
	k.warnMemoryVolumesOnDisk()
	// The node's resolver file against the pod resolver's limits, once,
	// as upstream's syncLoop checks it before its first iteration (dns.go).
	k.checkLimitsForResolvConf()
	if err := k.adoptRuntimeState(ctx); err != nil {
		return err
	}
	serviceClient := k.client
	if k.cfg.ServiceReadClient != nil {
		serviceClient = k.cfg.ServiceReadClient
	}
	services, releaseServices := acquireServices(serviceClient)
	defer releaseServices()
	k.services.Store(&services)

	// Up to Workers goroutines sync pods, started as pods are queued
	// (workers.go).
	pool := &workerPool{max: k.cfg.Workers, work: func() bool { return k.processNext(ctx) }}
	queue := workqueue.NewTypedDelayingQueueWithConfig(workqueue.TypedDelayingQueueConfig[types.UID]{
		Clock: k.clock,
		Queue: kickingQueue{workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[types.UID]{Clock: k.clock}), pool.kick},
	})
	pool.queue = queue
	k.mu.Lock()
	k.queue = queue
	k.mu.Unlock()
	var wg sync.WaitGroup
	defer wg.Wait()
	defer pool.close()
	defer queue.ShutDown()

	var informer cache.SharedIndexInformer
	if !k.cfg.ExternalPodSource {
		// No informer resync: housekeeping resyncs every pod.
		factory := informers.NewSharedInformerFactoryWithOptions(k.client, 0,
			informers.WithTweakListOptions(func(o *metav1.ListOptions) {
				o.FieldSelector = fields.OneTermEqualSelector("spec.nodeName", k.cfg.NodeName).String()
			}))
		informer = factory.Core().V1().Pods().Informer()
		setSourceTransform(informer)
		if _, err := informer.AddEventHandler(cache.ResourceEventHandlerFuncs{
			AddFunc:    func(obj any) { k.podFromSource(obj, false) },
			UpdateFunc: func(_, obj any) { k.podFromSource(obj, false) },
			DeleteFunc: func(obj any) { k.podFromSource(obj, true) },
		}); err != nil {
			return fmt.Errorf("kubelet %s: watching pods: %w", k.cfg.NodeName, err)
		}
		factory.Start(ctx.Done())
		defer factory.Shutdown()
	}

	wg.Add(1)
	go func() {
		defer wg.Done()
		k.housekeeping(ctx)
	}()
	k.garbageCollection(ctx, &wg) // nodegc.go: container and image GC loops
	wg.Add(1)
	go func() {
		defer wg.Done()
		k.resyncWhenServicesSynced(ctx, services)
	}()

	if informer != nil {
		if cache.WaitForCacheSync(ctx.Done(), informer.HasSynced) {
			k.MarkSourceSynced()
		}
	} else {
		// Pods handed over before Run started wait in their records.
		k.enqueueAll()
	}
	<-ctx.Done()
	return nil
}

// registerNodeWithRetry registers the node, retrying with back-off; it
// fails only when ctx ends first.
func (k *Kubelet) registerNodeWithRetry(ctx context.Context) error {
	delay := 100 * time.Millisecond
	for {
		err := k.registerNode(ctx)
		if err == nil {
			return nil
		}
		k.log.Warn("registering node", "err", err)
		t := k.clock.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("kubelet %s: %w (last error: %v)", k.cfg.NodeName, ctx.Err(), err)
		case <-t.C():
		}
		if delay < 10*time.Second {
			delay *= 2
		}
	}
}

// adoptRuntimeState creates a record for every pod the runtime already
// runs, so a restarted kubelet continues them instead of starting anew.
func (k *Kubelet) adoptRuntimeState(ctx context.Context) error {
	sandboxes, err := k.rt.ListPodSandbox(ctx, nil)
	if err != nil {
		return fmt.Errorf("kubelet %s: listing sandboxes at start: %w", k.cfg.NodeName, err)
	}
	dirs := k.podDirUIDs() // subpath.go
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, uid := range dirs {
		if _, ok := k.pods[uid]; !ok {
			k.pods[uid] = newRecord()
		}
	}
	for _, s := range sandboxes {
		uid := types.UID(s.Labels[runtime.LabelPodUID])
		if uid == "" {
			continue
		}
		if _, ok := k.pods[uid]; !ok {
			k.pods[uid] = newRecord()
		}
		if r := k.pods[uid]; !r.admitted {
			r.admitted = true
			// Its worker decides at its first sync whether it was
			// terminated before (podsync.FoundTerminated); the eviction
			// manager looks until then (activePods).
			if k.unsynced == nil {
				k.unsynced = map[types.UID]struct{}{}
			}
			k.unsynced[uid] = struct{}{}
			k.unsyncedLeft.Add(1)
		}
	}
	return nil
}

// newRecord returns an empty record; its maps are made when first needed
// (most pods never back off and many have no probes).
func newRecord() *podRecord {
	return &podRecord{}
}

// podExtra is the part of a pod's record that a running pod without
// probes, failures or a second projected token leaves empty: kept apart so
// that the record of such a pod (most pods) is 128 bytes, not 176. Only
// the pod's worker touches it.
type podExtra struct {
	rejection  *podsync.Terminal // admission's verdict, if rejected
	backoff    map[string]podsync.BackoffEntry
	waiting    map[string]podstate.Waiting
	imagePulls map[string]podsync.ImagePullEntry // pull back-off by image
	probes     map[string]prober.State           // "<container id>/<kind>"
	moreTokens []tokenRefresh                    // projected tokens after the first
	// killed: the pod is terminated, a kill that ended it having
	// succeeded (podsync.Input.Killed); kept until the pod is forgotten.
	killed bool
	// cgroupRemoved: the terminated pod's cgroup has been removed
	// (removeTerminatedPodCgroup), not to be again at every resync.
	cgroupRemoved bool
	// finalStatus: the terminated pod's final status (status.Input.Final)
	// was written, once its volumes were torn down and its cgroup
	// removed; every later status is generated final too.
	finalStatus bool
	// killGrace: the shortest grace period a kill ending the pod
	// (terminatePod) was given so far, at least minimumKillGrace; 0
	// before any. A later kill is given no longer one (boundKillGrace),
	// as upstream's pod worker lets a terminating pod's grace period only
	// shrink.
	killGrace int64
}

// terminatedPod is what the eviction manager knows of a terminated pod:
// when its kill succeeded, and whether it is finished since (its volumes
// torn down, its cgroup removed, its final status written: upstream's
// PodIsFinished), for the wait after an eviction (eviction.Wait).
type terminatedPod struct {
	at       time.Time
	finished bool
}

// markKilled records that the kill ending rec's pod succeeded (or that
// the pod was found terminated): it is terminated, not killed again
// (podsync.KillNeeded) nor picked by the eviction manager.
func (k *Kubelet) markKilled(uid types.UID, rec *podRecord) {
	rec.more().killed = true
	now := k.clock.Now()
	k.mu.Lock()
	if k.pods[uid] == rec {
		if k.terminated == nil {
			k.terminated = map[types.UID]terminatedPod{}
		}
		if _, ok := k.terminated[uid]; !ok {
			k.terminated[uid] = terminatedPod{at: now}
		}
	}
	k.mu.Unlock()
	k.wakeEvictionWait() // the kill the eviction manager awaits may be this one
}

// markFinished records that rec's terminated pod is finished: its final
// status is written, after its volumes and cgroup went.
func (k *Kubelet) markFinished(uid types.UID, rec *podRecord) {
	k.mu.Lock()
	if t, ok := k.terminated[uid]; ok && k.pods[uid] == rec {
		t.finished = true
		k.terminated[uid] = t
	}
	k.mu.Unlock()
}

// markSynced records that uid's worker synced the pod, deciding whether
// one found terminal was terminated before (podsync.FoundTerminated): it
// is no longer unsynced.
func (k *Kubelet) markSynced(uid types.UID) {
	if k.unsyncedLeft.Load() == 0 {
		return
	}
	k.mu.Lock()
	k.forgetUnsyncedLocked(uid)
	k.mu.Unlock()
}

// forgetUnsyncedLocked drops uid from the adopted pods not synced yet
// (synced, or cleaned up). Under mu.
func (k *Kubelet) forgetUnsyncedLocked(uid types.UID) {
	if _, ok := k.unsynced[uid]; ok {
		delete(k.unsynced, uid)
		if k.unsyncedLeft.Add(-1) == 0 {
			k.unsynced = nil
		}
	}
}

// boundKillGrace is grace, no longer than an earlier kill ending the pod
// was given (killGrace).
func (x *podExtra) boundKillGrace(grace int64) int64 {
	if x.killGrace > 0 && x.killGrace < grace {
		return x.killGrace
	}
	return grace
}

// noExtra is the empty podExtra x returns for a record without one; never
// written.
var noExtra podExtra

// x is the record's extra part for reading (empty if there is none).
func (rec *podRecord) x() *podExtra {
	if rec.extra == nil {
		return &noExtra
	}
	return rec.extra
}

// more is the record's extra part for writing, made if there is none.
func (rec *podRecord) more() *podExtra {
	if rec.extra == nil {
		rec.extra = &podExtra{}
	}
	return rec.extra
}

// ending reports whether pod (the record's pod, or the kubelet's view of
// it) is being ended or has ended: deleted, in a terminal phase, given one
// by the kubelet (a deadline, an eviction), or killed to end it. Such a
// pod is not started again, nor are its volumes set up again.
func (rec *podRecord) ending(pod *v1.Pod) bool {
	return pod.DeletionTimestamp != nil || podsync.IsTerminalPhase(pod.Status.Phase) || rec.terminal != nil || rec.x().killed
}

// tidy drops the extra part once all of it is empty again (a container
// that waited has started).
func (rec *podRecord) tidy() {
	if x := rec.extra; x != nil && x.rejection == nil && len(x.backoff) == 0 && len(x.waiting) == 0 && len(x.imagePulls) == 0 && len(x.probes) == 0 && len(x.moreTokens) == 0 && !x.killed && x.killGrace == 0 {
		rec.extra = nil
	}
}

// podFromSource handles an informer event.
func (k *Kubelet) podFromSource(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	pod, ok := obj.(*v1.Pod)
	if !ok {
		return
	}
	if deleted {
		k.HandlePodDeleted(pod)
	} else {
		k.HandlePod(pod)
	}
}

// HandlePod feeds a pod from a pod source (the kubelet's own informer, or a
// source shared by many kubelets in one process). Pods bound elsewhere are
// ignored.
func (k *Kubelet) HandlePod(pod *v1.Pod) {
	if pod.Spec.NodeName != k.cfg.NodeName {
		return
	}
	k.mu.Lock()
	rec, ok := k.pods[pod.UID]
	if !ok {
		rec = newRecord()
		k.pods[pod.UID] = rec
	}
	if ok {
		k.noteResizeLocked(rec, rec.pod, pod)
	}
	if rec.pod == nil {
		k.backfillResizeLocked(pod)
	}
	rec.pod, rec.lastPod = pod, pod
	if pod.DeletionTimestamp != nil || podsync.IsTerminalPhase(pod.Status.Phase) {
		// Its termination is requested: the sync under way is cut short
		// (syncInFlight).
		k.syncs[pod.UID].terminating(pod)
	}
	// A pod going away before its admission is none to wait for.
	wake := k.wakeAwaitingResizesLocked()
	k.mu.Unlock()
	k.trace(TraceHandedOver, pod)
	k.objects.updatePod(pod)
	k.enqueue(pod.UID, 0)
	for _, uid := range wake {
		k.enqueue(uid, 0)
	}
}

// HandlePodDeleted tells the kubelet a pod is gone from the API.
func (k *Kubelet) HandlePodDeleted(pod *v1.Pod) {
	k.mu.Lock()
	rec, ok := k.pods[pod.UID]
	if ok {
		rec.pod = nil
		// As upstream's update for the removed pod: a sync starting it,
		// or a kill whose grace period the removed pod's deletion
		// shortens, is cut short (syncInFlight), and the clean-up's kill
		// takes the shorter one (cleanupPod).
		if last := rec.lastPod; last != nil && last.UID == pod.UID && pod.DeletionTimestamp != nil &&
			pod.DeletionGracePeriodSeconds != nil && *pod.DeletionGracePeriodSeconds < podsync.GracePeriod(last) {
			rec.lastPod = pod
		}
		k.syncs[pod.UID].terminating(pod)
	}
	wake := k.wakeAwaitingResizesLocked()
	k.mu.Unlock()
	k.objects.unregisterPod(pod.UID)
	if ok {
		k.enqueue(pod.UID, 0)
	}
	for _, uid := range wake {
		k.enqueue(uid, 0)
	}
}

// MarkSourceSynced says the pod source has delivered every existing pod, so
// runtime pods without an API pod are orphans to clean up.
func (k *Kubelet) MarkSourceSynced() {
	k.mu.Lock()
	k.sourceSynced = true
	k.mu.Unlock()
	k.enqueueAll()
}

// enqueue asks for a sync of uid after the given time; with none, at once
// even while the pod backs off from a failed sync (a pod update, a
// container state change, an eviction: upstream's UpdatePod).
func (k *Kubelet) enqueue(uid types.UID, after time.Duration) {
	k.mu.Lock()
	q := k.queue
	if rec := k.pods[uid]; rec != nil && after <= 0 {
		rec.syncNow = true
	}
	k.mu.Unlock()
	if q == nil {
		return
	}
	if after <= 0 {
		q.Add(uid)
	} else {
		q.AddAfter(uid, after)
	}
}

// enqueueAll asks for a sync of every pod at once (enqueue).
func (k *Kubelet) enqueueAll() {
	uids, _ := k.podUIDs()
	for _, uid := range uids {
		k.enqueue(uid, 0)
	}
}

// podUIDs returns the UIDs of the pods the kubelet knows, and its work
// queue (nil before Run).
func (k *Kubelet) podUIDs() ([]types.UID, workqueue.TypedDelayingInterface[types.UID]) {
	k.mu.Lock()
	defer k.mu.Unlock()
	uids := make([]types.UID, 0, len(k.pods))
	for uid := range k.pods {
		uids = append(uids, uid)
	}
	return uids, k.queue
}

// resyncAll is the periodic full resync: every pod is queued, but one
// backing off from a failed sync waits for its retry (as upstream's
// periodic sync takes only the pods whose time has come).
func (k *Kubelet) resyncAll() {
	k.mu.Lock()
	if k.sourceSynced && len(k.resizes) > 0 {
		k.removeOrphanedAllocationsLocked()
	}
	k.mu.Unlock()
	uids, q := k.podUIDs()
	if q == nil {
		return
	}
	for _, uid := range uids {
		q.Add(uid)
	}
}

// startSync reports how long uid still backs off from a failed sync (0:
// sync it now), and takes its request for an immediate sync.
func (k *Kubelet) startSync(uid types.UID) time.Duration {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.pods[uid]
	if rec == nil {
		return 0
	}
	if !rec.syncNow && rec.retryAt != 0 {
		if wait := time.Duration(rec.retryAt - k.clock.Now().UnixNano()); wait > 0 {
			return wait
		}
	}
	rec.syncNow = false
	return 0
}

// endSync records when a failed sync of uid is retried (retry after now;
// none when err is nil).
func (k *Kubelet) endSync(uid types.UID, err error, retry time.Duration) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec := k.pods[uid]
	if rec == nil {
		return
	}
	rec.retryAt = 0
	if err != nil {
		rec.retryAt = k.clock.Now().Add(retry).UnixNano()
	}
}

// processNext is one pod worker step: a pod backing off from a failed
// sync waits for its retry unless a sync was asked for at once; after the
// sync, syncRetryDelay decides when the worker syncs it again.
func (k *Kubelet) processNext(ctx context.Context) bool {
	uid, shutdown := k.queue.Get()
	if shutdown {
		return false
	}
	defer k.queue.Done(uid)
	if k.paused.Load() {
		k.queue.AddAfter(uid, k.cfg.SyncFrequency)
		return true
	}
	if wait := k.startSync(uid); wait > 0 {
		k.queue.AddAfter(uid, wait)
		return true
	}
	requeue, err := k.syncPod(ctx, uid) // evictPod first, if the pod is being evicted
	if err != nil && ctx.Err() != nil {
		return true
	}
	if err != nil {
		k.log.Info("sync pod", "uid", uid, "err", err)
	}
	requeue = syncRetryDelay(requeue, err, k.cfg.SyncErrorBackOff, k.cfg.SyncFrequency, rand.Float64())
	k.endSync(uid, err, requeue)
	if requeue > 0 {
		k.queue.AddAfter(uid, requeue)
	}
	return true
}

// housekeeping relists the runtime, resyncs every pod, renews the lease,
// runs the eviction manager and updates node status, each on its own
// period, from one goroutine.
//
// The full resync (every pod synced once per SyncFrequency, whatever the
// source delivered), the lease renewal, the node status update and the
// eviction check each start at a random phase of their period. Kubelets on
// separate machines start at unrelated times; kubelets sharing one process
// (kubeproof up, the benchmarks) start together, and without the random
// phase they would do each at the same moment: at 1,000 nodes and 30,000
// pods, 30,000 syncs queued at once every 20 s and 1,000 lease updates
// within a second or two every 10 s.
func (k *Kubelet) housekeeping(ctx context.Context) {
	ticker := k.clock.NewTicker(k.cfg.RelistPeriod)
	defer ticker.Stop()
	now := k.clock.Now()
	phase := func(period time.Duration) time.Time { return now.Add(rand.N(period) + 1) }
	nextResync := phase(k.cfg.SyncFrequency)
	nextLease := phase(k.cfg.NodeLeaseRenewInterval)
	nextStatus := phase(k.cfg.NodeStatusUpdateFrequency)
	nextEviction := phase(k.evictions.Config().MonitoringInterval)
	nextQOS := now.Add(periodicQOSCgroupUpdateInterval)
	nextCleanup := now.Add(housekeepingPeriod)
	var wait evictionWaitTimer
	defer wait.stop()
	wait.arm(k)
	for {
		tick := false
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
			tick = true
		case <-k.evictWake:
		case <-wait.c:
			wait.stop() // fired: armed again for the next wake time
		}
		if k.paused.Load() {
			continue
		}
		if !tick {
			// The eviction manager's wait needs stepping: a victim's kill
			// ended, or the time its last step asked for came.
			if k.evictWaiting.Load() {
				k.evictionTick(ctx)
				nextEviction = k.clock.Now().Add(k.evictions.Config().MonitoringInterval)
			}
			wait.arm(k)
			continue
		}
		k.relist(ctx)
		now := k.clock.Now()
		if !now.Before(nextResync) {
			k.resyncAll()
			nextResync = now.Add(k.cfg.SyncFrequency)
		}
		if !now.Before(nextLease) {
			if err := k.renewLease(ctx); err != nil && ctx.Err() == nil {
				k.log.Warn("lease", "err", err)
			}
			nextLease = now.Add(k.cfg.NodeLeaseRenewInterval)
		}
		// While the eviction manager waits for the pods it evicted, the
		// wait is stepped when a victim's kill ends and when its last step
		// asked (wait.arm), and on ticks too (a wake while paused); it
		// synchronizes at once when the wait is over, then again a
		// monitoring interval after, as upstream's.
		if k.evictWaiting.Load() || !now.Before(nextEviction) {
			k.evictionTick(ctx)
			nextEviction = now.Add(k.evictions.Config().MonitoringInterval)
		}
		wait.arm(k)
		if !now.Before(nextStatus) {
			if err := k.updateNodeStatus(ctx, false); err != nil && ctx.Err() == nil {
				k.log.Error("Unable to update node status", "err", err)
			}
			nextStatus = now.Add(k.cfg.NodeStatusUpdateFrequency)
		}
		if k.cgroups != nil && !now.Before(nextQOS) {
			if err := k.updateQOSCgroups(); err != nil {
				k.log.Info("Failed to reserve QoS requests", "err", err)
			}
			if !k.allocatableEnforced {
				k.allocatableEnforced = k.enforceNodeAllocatable()
			}
			nextQOS = now.Add(periodicQOSCgroupUpdateInterval)
		}
		if k.cgroups != nil && !now.Before(nextCleanup) {
			k.cleanupOrphanedPodCgroups(ctx)
			nextCleanup = now.Add(housekeepingPeriod)
		}
	}
}

// relist is the pod lifecycle event generator: it lists every container
// and enqueues the pods whose containers changed state since last time.
// It runs once a second on every kubelet, so it allocates nothing per
// container: runtimes that can report states directly
// (runtime.ContainerStateLister, the simulated one) are asked for them
// instead of CRI messages, the fingerprints are gathered in a slice reused
// from one relist to the next, and each pod's is kept in its record. Such
// a runtime also versions its containers' states: a node where nothing
// changed since the last relist (ContainerStatesVersion) is not listed.
func (k *Kubelet) relist(ctx context.Context) {
	lister, versioned := k.rt.(runtime.ContainerStateLister)
	var version uint64
	if versioned {
		// Nothing changed since the last relist: nothing to list.
		if version = lister.ContainerStatesVersion(ctx); version == k.relistVersion {
			return
		}
	}
	// Per pod, an order-independent fingerprint of (container, state).
	seen := k.relistBuf[:0]
	add := func(podUID, id string, state runtimeapi.ContainerState) {
		if podUID != "" {
			seen = append(seen, relistEntry{types.UID(podUID), containerFingerprint(id, state) | 1})
		}
	}
	if versioned {
		if err := lister.ContainerStates(ctx, add); err != nil {
			k.log.Warn("relist", "err", err)
			return
		}
	} else {
		containers, err := k.rt.ListContainers(ctx, nil)
		if err != nil {
			k.log.Warn("relist", "err", err)
			return
		}
		for _, c := range containers {
			add(c.Labels[runtime.LabelPodUID], c.Id, c.State)
		}
	}
	// One entry per pod: sorted by UID, a pod's containers fold into one.
	slices.SortFunc(seen, func(a, b relistEntry) int { return strings.Compare(string(a.uid), string(b.uid)) })
	n := 0
	for i, e := range seen {
		if i > 0 && e.uid == seen[n-1].uid {
			seen[n-1].fp ^= e.fp
			continue
		}
		seen[n] = e
		n++
	}
	seen = seen[:n]
	k.relistBuf, k.relistVersion = seen, version

	var changed []types.UID
	k.mu.Lock()
	for _, e := range seen {
		rec, ok := k.pods[e.uid]
		if !ok {
			// A runtime pod nobody knows: an orphan to clean up.
			rec = newRecord()
			k.pods[e.uid] = rec
		}
		if rec.relistFP != e.fp {
			changed = append(changed, e.uid)
			rec.relistFP = e.fp
		}
	}
	for uid, rec := range k.pods {
		if rec.relistFP == 0 {
			continue
		}
		if _, found := slices.BinarySearchFunc(seen, uid, func(e relistEntry, uid types.UID) int { return strings.Compare(string(e.uid), string(uid)) }); !found {
			// Its containers are gone.
			changed = append(changed, uid)
			rec.relistFP = 0
		}
	}
	k.mu.Unlock()
	for _, uid := range changed {
		k.enqueue(uid, 0)
	}
}

// relistEntry is a pod's fingerprint in one relist.
type relistEntry struct {
	uid types.UID
	fp  uint64
}

// containerFingerprint is the 64-bit FNV-1a hash of a container's id
// followed by its state's byte.
func containerFingerprint(id string, state runtimeapi.ContainerState) uint64 {
	const offset, prime = 14695981039346656037, 1099511628211
	h := uint64(offset)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * prime
	}
	return (h ^ uint64(byte(state))) * prime
}
