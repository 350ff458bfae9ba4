package kubelet

import (
	"context"
	"fmt"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
	"github.com/kubeproof/kubeproof/impl/kubelet/podsync"
)

// The kubelet's garbage collection of images and dead containers
// (impl/kubelet/gc): the eviction manager's node-level reclaimer before
// disk evictions, the periodic container GC (every gc.ContainerPeriod,
// Config.ContainerGC's policy) and the periodic image GC of the eviction
// configuration's policy (`kubeproof kubelet` sets it from
// --image-gc-high-threshold/--image-gc-low-threshold, 85/80 by default as
// upstream; a zero policy, as `kubeproof up`'s simulated nodes have, or a
// high threshold of 100 turns it off). The periodic collections run on
// loops of their own (garbageCollection, as upstream's
// StartGarbageCollection), so a collection that kills a container in the
// unknown state (its preStop hook, its stop: up to twice its pod's grace
// period) holds up neither the eviction manager nor housekeeping, nor
// they it; the eviction manager calls the collector itself, under
// evictMu, only to reclaim disk.

// nodeGC returns the collector, made (and its first image detection run,
// which counts images already present as old) at the first eviction
// interval or collection, whichever comes first; nil if the runtime
// cannot list and remove images. Under gcMu: the collection loops and
// the eviction manager call it concurrently.
func (k *Kubelet) nodeGC(ctx context.Context, now time.Time) *gc.Collector {
	k.gcMu.Lock()
	defer k.gcMu.Unlock()
	if c, ok := k.evictions.NodeReclaimer().(*gc.Collector); ok {
		return c
	}
	rt, ok := k.rt.(gc.Runtime)
	if !ok {
		return nil
	}
	c := gc.NewCollector(rt, k.evictions.Config().ImageGC, k.nodeEvent, k.log)
	policy := gc.DefaultContainerPolicy
	if k.cfg.ContainerGC != nil {
		policy = *k.cfg.ContainerGC
	}
	// A simulated runtime writes no log files: the pod logs directory on
	// this machine is not its to clean.
	logsDir := k.cfg.PodLogsDir
	if k.rt.Type() == "sim" {
		logsDir = ""
	}
	c.SetContainerGC(policy, k.podGCState, logsDir)
	// A container in the unknown state is killed as upstream's
	// killContainer without its pod: event, preStop hook, stop.
	c.SetUnknownKill(k.killUnknownContainer)
	// The records of the images a collection removed go with them.
	c.SetPostGCHook(k.prunePullRecords)
	if err := c.Detect(ctx, now); err != nil {
		k.log.Info("image garbage collector: first detection", "err", err)
	}
	k.evictions.SetNodeReclaimer(c)
	return c
}

// garbageCollection starts the periodic collections on wg, each on a
// loop of its own as upstream's StartGarbageCollection: the container
// collection at once and then every gc.ContainerPeriod, the image
// collection, when the policy enables it, at once and then every
// gc.Period; each period counted from the end of the previous run, as
// wait.Until's. Both end with ctx.
func (k *Kubelet) garbageCollection(ctx context.Context, wg *sync.WaitGroup) {
	wg.Go(func() { k.gcLoop(ctx, gc.ContainerPeriod, k.collectContainers) })
	if k.evictions.Config().ImageGC.Enabled() {
		wg.Go(func() { k.gcLoop(ctx, gc.Period, k.collectImages) })
	}
}

// gcLoop runs collect, then again a period after it ended, until ctx
// ends; not while the kubelet is paused. It stops if the runtime cannot
// be collected (nodeGC nil).
func (k *Kubelet) gcLoop(ctx context.Context, period time.Duration, collect func(context.Context, time.Time) bool) {
	for {
		if !k.paused.Load() && !collect(ctx, k.clock.Now()) {
			return
		}
		t := k.clock.NewTimer(period)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		}
	}
}

// collectContainers runs the periodic container collection when it is
// due; false if the runtime cannot be collected.
func (k *Kubelet) collectContainers(ctx context.Context, now time.Time) bool {
	c := k.nodeGC(ctx, now)
	if c == nil {
		return false
	}
	c.MaybeCollectContainers(ctx, now)
	return true
}

// collectImages runs the periodic image collection when it is due,
// measuring the image filesystem through the eviction provider; false if
// the runtime cannot be collected.
func (k *Kubelet) collectImages(ctx context.Context, now time.Time) bool {
	c := k.nodeGC(ctx, now)
	if c == nil {
		return false
	}
	c.MaybeCollect(ctx, func(ctx context.Context) (int64, int64, error) {
		obs, _, err := k.evictions.Provider().Observe(ctx, nil)
		if err != nil {
			return 0, 0, err
		}
		o, ok := obs[eviction.SignalImageFsAvailable]
		if !ok {
			return 0, 0, fmt.Errorf("no image filesystem observation")
		}
		return o.Capacity, o.Available, nil
	}, now)
	return true
}

// podGCState is what the container GC may remove of a pod (by UID):
//   - a pod the kubelet does not know, once its source has delivered every
//     pod, is gone: all of it goes (before that it may yet arrive);
//   - a deleted pod's record stays until cleanupPod has stopped and
//     removed everything of it, which the GC leaves to it;
//   - an evicted pod goes once its terminal status is in the API (its
//     container statuses are kept from then on, whatever the runtime
//     holds), as upstream removes evicted pods' content; only a pod whose
//     termination the eviction began (rec.evicted: not one already being
//     deleted, terminal or past its deadline), as upstream's pod workers'
//     ShouldPodContentBeRemoved;
//   - other pods in a terminal phase are terminated (their dead
//     containers go only when the eviction manager reclaims disk), and
//     the rest are active.
func (k *Kubelet) podGCState(uid string) gc.PodGCState {
	k.mu.Lock()
	defer k.mu.Unlock()
	rec, ok := k.pods[types.UID(uid)]
	switch {
	case !ok && k.sourceSynced:
		return gc.PodRemovable
	case !ok || rec.pod == nil || !podsync.IsTerminalPhase(rec.pod.Status.Phase):
		return gc.PodActive
	case rec.evicted:
		return gc.PodRemovable
	}
	return gc.PodTerminated
}

// logReclaim logs what a node-level reclaim did.
func (k *Kubelet) logReclaim(d eviction.Decision) {
	r := d.Reclaim
	if r == nil {
		return
	}
	k.log.Info("node-level reclaim before eviction", "signal", d.Threshold.Signal, "deadContainersRemoved", r.ContainersRemoved,
		"imageBytesFreed", r.ImageBytesFreed, "sufficed", r.Sufficed, "err", r.Err)
}

// nodeEvent records an event on the Node (upstream's reference: kind
// Node, the node name as its UID).
func (k *Kubelet) nodeEvent(eventType, reason, message string) {
	ref := &v1.ObjectReference{Kind: "Node", Name: k.cfg.NodeName, UID: types.UID(k.cfg.NodeName)}
	k.recorder().Eventf(ref, eventType, reason, "%s", message)
}
