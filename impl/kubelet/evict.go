package kubelet

import (
	"context"
	"fmt"
	"strings"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
	"github.com/kubeproof/kubeproof/impl/kubelet/status"
)

// The eviction manager's I/O: every monitoring interval housekeeping
// calls evictionTick, which observes the node through the provider, runs
// eviction.Decide, takes the pressure conditions it reports (node status
// and AdmitUnderPressure read them) and hands the pod it picked to the
// pod workers, which kill it and write its Failed/Evicted status. Then,
// as upstream's, it waits for the pods it evicted (eviction.Wait: each
// one's kill, then their clean-up) before it observes the node again, at
// once when the wait is over. Housekeeping steps the wait the moment a
// victim's kill ends (markKilled, or the pod forgotten: wakeEvictionWait)
// and at the time its last step asked for (evictionWaitTimer).

// Upstream's DisruptionTarget reason for pods the kubelet terminates.
const reasonTerminationByKubelet = "TerminationByKubelet"

// newEvictionManager builds the manager from the config: the simulated
// provider unless one is given or the runtime is a real CRI runtime (then
// the host's figures). A host provider without stats of its own measures
// pods with the runtime's CRI container stats and counts their log files.
func newEvictionManager(cfg *Config, rt runtime.Runtime) (*eviction.Manager, *eviction.SimProvider, error) {
	ecfg, err := cfg.evictionConfig()
	if err != nil {
		return nil, nil, err
	}
	provider := cfg.EvictionProvider
	var sim *eviction.SimProvider
	if provider == nil {
		if rt.Type() == "sim" {
			sim = eviction.NewSimProvider(cfg.Memory, cfg.EphemeralStorage)
			provider = sim
		} else {
			provider = eviction.HostProvider{RootDir: cfg.RootDir}
		}
	}
	switch p := provider.(type) {
	case *eviction.SimProvider:
		sim = p
		// A container's storage counts while the runtime runs it.
		if r, ok := rt.(eviction.PodStateReader); ok {
			p.SetPodStates(r)
		}
	case eviction.HostProvider:
		if l, ok := rt.(eviction.ContainerStatsLister); ok && p.Stats == nil {
			p.Stats = l
		}
		if p.LogsDir == "" {
			p.LogsDir = cfg.PodLogsDir
		}
		if p.CgroupDir == "" && cfg.CgroupDir != "" {
			// allocatableMemory.available is kubepods's.
			p.CgroupDir, p.PodsCgroup = cfg.CgroupDir, qosCgroupsOf(cgroupRoot(cfg.CgroupRoot)).guaranteed
		}
		provider = p
	}
	return eviction.NewManager(ecfg, provider), sim, nil
}

// pressureSignals are the signals SetPressure drives to zero.
func pressureSignals(p Pressure) map[eviction.Signal]bool {
	return map[eviction.Signal]bool{
		eviction.SignalMemoryAvailable: p.Memory,
		eviction.SignalNodeFsAvailable: p.Disk,
		eviction.SignalPIDAvailable:    p.PID,
	}
}

// feedSimPressure makes the simulated node report no memory, disk or
// process IDs available for the pressures p holds (and its own figures
// for the others).
func feedSimPressure(sim *eviction.SimProvider, p Pressure) {
	zero := resource.MustParse("0")
	for s, on := range pressureSignals(p) {
		if on {
			sim.SetAvailable(s, &zero)
		} else {
			sim.SetAvailable(s, nil)
		}
	}
}

// activePods are the pods the eviction manager ranks, as upstream's
// GetActivePods (eviction.Active): admitted (or rejected) and still in
// the API, not known terminated, and not a terminal one whose termination
// is not under way (a rejected pod). A pod being deleted, evicted, or
// killed for its deadline, stays until its kill succeeds: evicting it
// (again) cuts that kill short (requestEviction). A pod in a terminal
// phase its worker has not synced yet (a restarted kubelet's) of which
// nothing runs is terminated, as upstream's pod workers decide the first
// time they see such a pod (podsync.FoundTerminated), and not ranked.
func (k *Kubelet) activePods(ctx context.Context) []*v1.Pod {
	k.mu.Lock()
	out := make([]*v1.Pod, 0, len(k.pods))
	var unsynced []*v1.Pod
	for uid, r := range k.pods {
		if r.pod == nil || !(r.admitted || r.rejected) {
			continue
		}
		// An admitted pod deleted, evicted or in a terminal phase is
		// being ended by its worker until its kill succeeds
		// (k.terminated).
		_, terminated := k.terminated[uid]
		terminalPhase := podsync.IsTerminalPhase(r.pod.Status.Phase)
		t := eviction.Termination{
			Terminated:           terminated,
			Terminal:             r.rejected || terminalPhase,
			TerminationRequested: r.admitted && (terminalPhase || r.pod.DeletionTimestamp != nil || r.eviction != nil || r.evicted),
		}
		switch {
		case !eviction.Active(t):
		case terminalPhase && !terminated && k.isUnsynced(uid):
			unsynced = append(unsynced, r.pod)
		default:
			out = append(out, r.pod)
		}
	}
	k.mu.Unlock()
	for _, p := range unsynced {
		rs, err := k.podRuntimeState(ctx, p.UID)
		if err != nil {
			// Not known terminated, as upstream's without the pod's
			// runtime status.
			k.log.Warn("eviction manager: pod runtime state", "pod", p.Namespace+"/"+p.Name, "err", err)
		}
		if err != nil || !podsync.FoundTerminated(p, rs) {
			out = append(out, p)
		}
	}
	return out
}

// isUnsynced: uid was adopted at start and its worker has not synced it
// yet. Under mu.
func (k *Kubelet) isUnsynced(uid types.UID) bool {
	_, ok := k.unsynced[uid]
	return ok
}

// evictionTick is one eviction manager interval. It posts node status at
// once when the pressure conditions changed. After an interval that
// evicted pods, it only advances the wait for them (waitForVictims) until
// that is over, and then synchronizes at once. The periodic garbage
// collections are not its: they run on loops of their own
// (garbageCollection).
func (k *Kubelet) evictionTick(ctx context.Context) {
	k.evictMu.Lock()
	defer k.evictMu.Unlock()
	k.nodeGC(ctx, k.clock.Now()) // nodegc.go: the node-level reclaimer, made once
	if !k.waitForVictims() {
		return
	}
	d, changed, err := k.evictions.Synchronize(ctx, k.activePods(ctx), k.clock.Now())
	if err != nil {
		k.log.Warn("eviction manager", "err", err)
		return
	}
	k.logReclaim(d)
	var p Pressure
	for _, c := range d.Conditions {
		switch c {
		case v1.NodeMemoryPressure:
			p.Memory = true
		case v1.NodeDiskPressure:
			p.Disk = true
		case v1.NodePIDPressure:
			p.PID = true
		}
	}
	k.mu.Lock()
	k.pressure = p
	registered := k.node != nil
	k.mu.Unlock()
	if changed {
		k.log.Info("node pressure", "conditions", d.Conditions)
		if registered {
			if err := k.updateNodeStatus(ctx, false); err != nil && ctx.Err() == nil {
				k.log.Error("Unable to update node status", "err", err)
			}
		}
	}
	victims := d.LocalStorage
	if d.Evict != nil {
		victims = append(victims, *d.Evict)
	}
	if len(victims) > 0 {
		k.evictWait = eviction.NewWait(victims)
		k.evictWaiting.Store(true)
		k.waitForVictims()
	}
}

// waitForVictims advances the eviction manager's wait for the pods its
// last interval evicted (eviction.Wait): it hands each to the pod workers
// once the previous one's kill ended, records ExceededGracePeriod on one
// whose kill did not end in time, and reports whether the wait is over
// (or there is none). Under evictMu.
func (k *Kubelet) waitForVictims() bool {
	w := k.evictWait
	if w == nil {
		return true
	}
	for {
		s := w.Step(k.clock.Now(), k.victimState)
		k.evictWakeAt.Store(0)
		switch {
		case s.Request != nil:
			k.requestEviction(s.Request)
		case s.KillTimedOut != nil:
			p := s.KillTimedOut.Pod
			k.log.Info("Eviction manager: pod failed to evict", "pod", p.Namespace+"/"+p.Name, "err", "timeout waiting to terminate pod abnormally")
			k.recorder().Eventf(p, v1.EventTypeWarning, reasonExceededGracePeriod, "Container runtime did not terminate the pod within specified grace period.")
		case s.Over:
			if s.CleanupTimedOut {
				k.log.Info("Eviction manager: timed out waiting for pods to be cleaned up")
			} else {
				k.log.Debug("Eviction manager: pods successfully cleaned up")
			}
			k.evictWait = nil
			k.evictWaiting.Store(false)
			return true
		default:
			k.evictWakeAt.Store(s.WakeAt.UnixNano())
			return false
		}
	}
}

// wakeEvictionWait has housekeeping step the eviction manager's wait now,
// if there is one: a pod's kill ended, or a pod was forgotten.
func (k *Kubelet) wakeEvictionWait() {
	if !k.evictWaiting.Load() {
		return
	}
	select {
	case k.evictWake <- struct{}{}:
	default:
	}
}

// evictionWaitTimer is housekeeping's timer for the eviction manager's
// wait: it fires at the time the wait's last step asked for
// (Kubelet.evictWakeAt); c is nil while none is set.
type evictionWaitTimer struct {
	timer clock.Timer
	at    int64
	c     <-chan time.Time
}

// arm sets the timer to the wait's wake time (none without a wait). A
// time passed already, the clock having moved on since the step, wakes
// housekeeping at once.
func (t *evictionWaitTimer) arm(k *Kubelet) {
	at := int64(0)
	if k.evictWaiting.Load() {
		at = k.evictWakeAt.Load()
	}
	if at == t.at && (at == 0 || t.timer != nil) {
		return
	}
	t.stop()
	t.at = at
	if at == 0 {
		return
	}
	wakeAt := time.Unix(0, at)
	t.timer = k.clock.NewTimer(wakeAt.Sub(k.clock.Now()))
	t.c = t.timer.C()
	if !k.clock.Now().Before(wakeAt) {
		k.wakeEvictionWait()
	}
}

func (t *evictionWaitTimer) stop() {
	if t.timer != nil {
		t.timer.Stop()
	}
	t.timer, t.c, t.at = nil, nil, 0
}

// Upstream's event for a pod whose kill outlasted the wait for it.
const reasonExceededGracePeriod = "ExceededGracePeriod"

// victimState is what the kubelet knows of an evicted pod for the
// eviction manager's wait: killed once terminated (markKilled), finished
// once its final status is written (markFinished); a pod the kubelet has
// forgotten (gone from the API and cleaned up) is both.
func (k *Kubelet) victimState(uid types.UID) eviction.VictimState {
	k.mu.Lock()
	defer k.mu.Unlock()
	if _, ok := k.pods[uid]; !ok {
		return eviction.VictimState{Killed: true, Finished: true}
	}
	t, terminated := k.terminated[uid]
	return eviction.VictimState{Killed: terminated, KilledAt: t.at, Finished: terminated && t.finished}
}

// requestEviction records the Evicted event on the pod, as upstream's
// eviction manager does for every pod it picks, and hands the pod to its
// worker. The pod is marked evicted (its content removed: podGCState)
// if this request begins its termination, by what the kubelet knows of
// it now, as upstream's pod workers decide in the manager's UpdatePod: a
// pod deleted after the request is marked all the same.
func (k *Kubelet) requestEviction(ev *eviction.Eviction) {
	k.mu.Lock()
	rec, ok := k.pods[ev.Pod.UID]
	if ok {
		_, terminated := k.terminated[ev.Pod.UID]
		_, decided := k.decided[ev.Pod.UID]
		requested := rec.evicted || rec.eviction != nil || decided || terminated
		if evictionBeginsTermination(rec.pod, requested) {
			rec.evicted = true
		}
		rec.eviction = ev
		// A sync starting the pod is cut short, as upstream's pod worker
		// cancels it when the eviction's kill makes the pod terminating,
		// and so is a kill under way (its deletion's, its deadline's)
		// whose grace period the eviction's shortens (syncInFlight).
		k.syncs[ev.Pod.UID].evicting(ev.GracePeriodSeconds)
	}
	k.mu.Unlock()
	if !ok {
		return
	}
	// A local storage eviction's event has no annotations (upstream's
	// has none either).
	var ann map[string]string
	if ev.Limit == "" {
		ann = map[string]string{
			"offending_containers":       strings.Join(ev.OffendingContainers, ","),
			"offending_containers_usage": strings.Join(ev.OffendingContainersUsage, ","),
			"starved_resource":           string(evictionResource(ev)),
		}
	}
	k.recorder().AnnotatedEventf(ev.Pod, ann, v1.EventTypeWarning, eviction.ReasonEvicted, "%s", ev.Message)
	signal := string(ev.Threshold.Signal)
	if ev.Limit != "" {
		signal = string(ev.Limit)
	}
	k.log.Info("evicting pod", "pod", ev.Pod.Namespace+"/"+ev.Pod.Name, "signal", signal)
	k.enqueue(ev.Pod.UID, 0)
}

// evictionBeginsTermination: an eviction requested now begins the pod's
// termination (it is marked evicted), as upstream's UpdatePod decides
// for a kill with Evict set: the pod is still in the API, not being
// deleted, not in a terminal phase, and its termination was not
// requested before (terminating: evicted already, given a terminal
// status by the kubelet, killed). Pure.
func evictionBeginsTermination(pod *v1.Pod, terminating bool) bool {
	return pod != nil && !terminating && pod.DeletionTimestamp == nil && !podsync.IsTerminalPhase(pod.Status.Phase)
}

// takeEviction returns the eviction requested for uid and not carried
// out yet (its kill has not succeeded): the latest one requested. It
// stays requested until doneEviction. Called by the pod's worker.
func (k *Kubelet) takeEviction(uid types.UID) (rec *podRecord, pod *v1.Pod, ev *eviction.Eviction) {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec = k.pods[uid]
	if rec == nil || rec.eviction == nil {
		return nil, nil, nil
	}
	return rec, rec.pod, rec.eviction
}

// markDecided records that rec's worker gave its pod a terminal status
// (its deadline, its completion): its termination is requested, and an
// eviction requested from now on does not begin it (requestEviction).
func (k *Kubelet) markDecided(uid types.UID, rec *podRecord) {
	k.mu.Lock()
	if k.pods[uid] == rec {
		if k.decided == nil {
			k.decided = map[types.UID]struct{}{}
		}
		k.decided[uid] = struct{}{}
	}
	k.mu.Unlock()
}

// doneEviction records that rec's eviction needs no more work: its kill
// succeeded, or the pod went away (the clean-up kills it), or a kill
// under way when it was requested (a deletion's, a deadline's, not cut
// short) terminated the pod first.
func (k *Kubelet) doneEviction(rec *podRecord) {
	k.mu.Lock()
	rec.eviction = nil
	k.mu.Unlock()
}

// evictPod runs in the pod's worker, first in every sync of the pod while
// its eviction is not carried out: it records the pod's eviction status,
// then stops the pod's containers and sandboxes within the eviction's
// grace period, then reports the pod Failed with reason Evicted,
// upstream's message and, for a node-pressure eviction, a
// DisruptionTarget condition (reason TerminationByKubelet). syncPod then
// keeps it terminal, the condition with it.
//
// As upstream's SyncTerminatingPod, the eviction's status (its
// podStatusFn: phase Failed, reason Evicted, message, DisruptionTarget)
// is set before the kill, in rec.terminal, the kubelet's record of the
// status it reports (upstream's status manager): a kill that fails leaves
// the eviction recorded. The kill's failure is reported (FailedKillPod)
// and fails the sync, which is retried on the pod workers' back-off with
// the eviction's grace period, nothing else of the pod synced meanwhile
// (no container of it restarted). The API sees the terminal phase only
// once nothing of the pod runs, as upstream's status manager holds a
// terminal phase and its DisruptionTarget back while the pod could have
// running containers.
//
// A pod whose termination was already under way (deleted, past its
// deadline: upstream's eviction manager ranks such pods too) is evicted
// the same way, the eviction's grace period cutting that kill short
// (requestEviction) and its status replacing the deadline's, as
// upstream's pod worker restarts SyncTerminatingPod with the eviction's
// status function; a pod past its active deadline keeps the deadline's
// reason and message (evictionTerminal). A pod the kill under way
// terminated first keeps the status that kill gave it (upstream's pod
// worker drops a terminated pod's kill options, the eviction's status
// function with them), and one whose API phase is already terminal keeps
// that phase. A pod evicted again while its kill is retried takes the
// later eviction's status, as upstream's pod worker applies the last
// status function it was given. The Evicted event is the eviction
// manager's, recorded when it picks the pod (requestEviction), as
// upstream's.
func (k *Kubelet) evictPod(ctx context.Context, uid types.UID) error {
	rec, pod, ev := k.takeEviction(uid)
	if ev == nil {
		return nil
	}
	if pod == nil {
		k.doneEviction(rec)
		return nil
	}
	rs, err := k.podRuntimeState(ctx, uid)
	if err != nil {
		return err
	}
	if rec.x().killed || (rec.lastStatus == nil && podsync.FoundTerminated(pod, rs)) {
		k.doneEviction(rec)
		return nil
	}
	if !podsync.IsTerminalPhase(pod.Status.Phase) {
		// The DisruptionTarget goes with the phase into rec.terminal:
		// every status the kubelet generates for the pod from now on
		// reports it, so neither a sync from an older view of the pod nor
		// a retry after a failed kill or write writes Failed/Evicted
		// without it. Each attempt sets the status of the latest
		// eviction requested, as upstream's SyncTerminatingPod applies
		// the last PodStatusFunc UpdatePod was given
		// (acknowledgeTerminating): a pod picked again while its kill
		// is retried ends with the later eviction's message.
		rec.terminal = evictionTerminal(ev, k.podView(rec, pod), k.clock.Now())
	}
	// As a deletion's kill (terminatePod): cut short by a deletion asking
	// for a shorter grace period, as upstream's pod worker cancels the
	// SyncTerminatingPod in flight whichever asked for the kill, and the
	// grace period kept for a later kill, never longer.
	if err := k.terminatePod(ctx, rec, pod, rs, ev.GracePeriodSeconds); err != nil {
		return fmt.Errorf("evicting pod %s/%s: %w", pod.Namespace, pod.Name, err)
	}
	k.markKilled(uid, rec) // terminated: not killed again (podsync.KillNeeded)
	k.doneEviction(rec)
	now := k.clock.Now()
	if t := rec.terminal; t != nil && t.Condition != nil && t.Condition.Reason == reasonTerminationByKubelet {
		// As upstream's status manager, which sends the DisruptionTarget
		// only with the terminal phase and dates it then.
		t.Condition.LastTransitionTime = metav1.NewTime(now)
		// The deadline may have passed during the kill: the status
		// generated once the pod is killed takes its reason.
		deadlineReason(t, k.podView(rec, pod), now)
	}
	if rs, err = k.podRuntimeState(ctx, uid); err != nil {
		return err
	}
	st := status.GenerateAPIPodStatus(status.Input{
		Pod: k.podView(rec, pod), Runtime: rs, Terminal: rec.terminal, PodIsTerminal: rs.Stopped(),
		HostIPs: []string{k.cfg.NodeIP}, RuntimeType: k.rt.Type(), Now: now,
	})
	return k.writeStatus(ctx, rec, pod, st)
}

// evictionTerminal is the terminal status ev gives pod (as the kubelet
// reports it): Failed, reason Evicted and the eviction's message and,
// for a node-pressure eviction, a DisruptionTarget (reason
// TerminationByKubelet, the pod's generation observed, as upstream's
// eviction manager sets it); a local storage eviction reports none,
// upstream's kubelet adding it only for node-pressure evictions. A pod
// past its active deadline gets the deadline's reason and message
// (deadlineReason) with the eviction's condition. Pure.
func evictionTerminal(ev *eviction.Eviction, pod *v1.Pod, now time.Time) *podsync.Terminal {
	t := &podsync.Terminal{Phase: v1.PodFailed, Reason: eviction.ReasonEvicted, Message: ev.Message}
	if ev.Limit == "" {
		t.Condition = &v1.PodCondition{Type: v1.DisruptionTarget, Status: v1.ConditionTrue, Reason: reasonTerminationByKubelet,
			Message: ev.Message, LastTransitionTime: metav1.NewTime(now), ObservedGeneration: pod.Generation}
	}
	deadlineReason(t, pod, now)
	return t
}

// deadlineReason gives t, an eviction's terminal status, the active
// deadline's reason and message once pod is past its deadline: upstream's
// generateAPIPodStatus lets the active deadline handler (a PodSyncHandler's
// ShouldEvict) override the reason the eviction's status function set,
// and keeps that status's DisruptionTarget, so an evicted pod past its
// deadline ends Failed, DeadlineExceeded, with the eviction's condition.
func deadlineReason(t *podsync.Terminal, pod *v1.Pod, now time.Time) {
	if past, _ := podsync.PastActiveDeadline(pod, now); past {
		t.Reason, t.Message = podsync.ReasonDeadlineExceeded, podsync.MessageDeadlineExceeded
	}
}

func evictionResource(ev *eviction.Eviction) v1.ResourceName {
	switch ev.Threshold.Signal {
	case eviction.SignalMemoryAvailable:
		return v1.ResourceMemory
	case eviction.SignalNodeFsInodesFree, eviction.SignalImageFsInodesFree:
		return "inodes"
	case eviction.SignalPIDAvailable:
		return "pids"
	default:
		return v1.ResourceEphemeralStorage
	}
}

// SetAvailable sets what a simulated node reports available for a signal
// (nil: its own figure again), e.g. memory.available=50Mi; the eviction
// manager acts on it at its next interval (now, if the kubelet runs).
func (k *Kubelet) SetAvailable(s eviction.Signal, q *resource.Quantity) error {
	if k.simEviction == nil {
		return fmt.Errorf("node %s: only a simulated node's resources can be set", k.cfg.NodeName)
	}
	k.simEviction.SetAvailable(s, q)
	k.evictNowIfRunning()
	return nil
}

// evictNowIfRunning runs an eviction interval at once if Run is under way
// and the node is not paused.
func (k *Kubelet) evictNowIfRunning() {
	k.mu.Lock()
	ctx, registered := k.runCtx, k.node != nil
	k.mu.Unlock()
	if ctx != nil && ctx.Err() == nil && registered && !k.paused.Load() {
		k.evictionTick(ctx)
		k.wakeEvictionWait() // housekeeping sets its timer for a wait begun here
	}
}
