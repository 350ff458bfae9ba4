package kubelet

import (
	"context"
	"fmt"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/kubelet/eviction"
	"github.com/kubeproof/kubeproof/impl/kubelet/gc"
)

// The kubelet's garbage collection of images and dead containers
// (impl/kubelet/gc): the eviction manager's node-level reclaimer before
// disk evictions, and the periodic image GC of the eviction
// configuration's policy (off unless --image-gc-high-threshold says
// otherwise). Both run from the eviction interval, under evictMu.

// nodeGC returns the collector, made (and its first image detection run,
// which counts images already present as old) at the first eviction
// interval; nil if the runtime cannot list and remove images.
func (k *Kubelet) nodeGC(ctx context.Context, now time.Time) *gc.Collector {
	if c, ok := k.evictions.NodeReclaimer().(*gc.Collector); ok {
		return c
	}
	rt, ok := k.rt.(gc.Runtime)
	if !ok {
		return nil
	}
	c := gc.NewCollector(rt, k.evictions.Config().ImageGC, k.nodeEvent, k.log)
	if err := c.Detect(ctx, now); err != nil {
		k.log.Info("image garbage collector: first detection", "err", err)
	}
	k.evictions.SetNodeReclaimer(c)
	return c
}

// collectGarbage runs the periodic image GC when it is due, measuring the
// image filesystem through the eviction provider.
func (k *Kubelet) collectGarbage(ctx context.Context, now time.Time) {
	c := k.nodeGC(ctx, now)
	if c == nil {
		return
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
