package nodelifecycle

import (
	"context"
	"log/slog"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// enqueueTainting puts a node that lacks the NoExecute taint it should
// have in its zone's NoExecute tainting queue, unless it is waiting there
// already. A node the tainting pass took earlier is queued again: its
// taint was removed since, or the pass read the node before the write
// reached the cache (the tainting pass then finds nothing to do), as
// upstream's markNodeForTainting removes such a node from its zone's queue
// and adds it back.
func (c *Controller) enqueueTainting(zone, node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if z, ok := c.queued[node]; ok {
		if z == zone && slices.Contains(c.pending[zone], node) {
			return
		}
		c.dequeueLocked(node) // taken by a tainting pass, or moved to another zone
	}
	c.queued[node] = zone
	c.pending[zone] = append(c.pending[zone], node)
}

// dequeueTainting takes a node out of the tainting queue (it is Ready).
func (c *Controller) dequeueTainting(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.dequeueLocked(node)
}

func (c *Controller) dequeueLocked(node string) {
	zone, ok := c.queued[node]
	if !ok {
		return
	}
	delete(c.queued, node)
	c.pending[zone] = slices.DeleteFunc(c.pending[zone], func(n string) bool { return n == node })
}

// ZoneStates returns the zones' current states (for tests and status).
func (c *Controller) ZoneStates() map[string]ZoneState {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make(map[string]ZoneState, len(c.zoneStates))
	for z, s := range c.zoneStates {
		out[z] = s
	}
	return out
}

// handleDisruption applies DecideDisruption after a monitor pass: new
// rates, and on entering full disruption everywhere the removal of every
// not-ready/unreachable NoExecute taint; on leaving it a fresh grace period
// for every node.
func (c *Controller) handleDisruption(ctx context.Context, zones map[string][]corev1.ConditionStatus, nodes []*corev1.Node, now time.Time) {
	c.mu.Lock()
	d := DecideDisruption(c.zoneStates, zones, c.cfg.Rates)
	c.zoneStats = make(map[string]zoneStats, len(zones))
	for zone, ready := range zones {
		unhealthy, _ := ComputeZoneState(ready, c.cfg.Rates.UnhealthyZoneThreshold)
		c.zoneStats[zone] = zoneStats{size: len(ready), unhealthy: unhealthy}
	}
	for zone := range c.buckets {
		if _, ok := d.States[zone]; !ok {
			delete(c.buckets, zone)
			for n, z := range c.queued {
				if z == zone {
					delete(c.queued, n)
				}
			}
			delete(c.pending, zone)
		}
	}
	for zone := range d.States {
		if c.buckets[zone] == nil {
			c.buckets[zone] = NewTokenBucket(c.cfg.Rates.NodeEvictionRate, now)
		}
	}
	for zone, rate := range d.Rates {
		c.buckets[zone].Swap(rate, now)
	}
	for zone, s := range d.States {
		if prev := c.zoneStates[zone]; prev != s && prev != "" {
			slog.Info("node lifecycle: zone changed state", "zone", zone, "from", prev, "to", s)
		}
	}
	c.zoneStates = d.States
	if d.ExitFullDisruption {
		slog.Info("node lifecycle: some nodes are Ready again; leaving full disruption mode")
		for _, h := range c.health {
			h.ProbeTime = now
		}
	}
	var reachable []*corev1.Node
	if d.EnterFullDisruption {
		slog.Info("node lifecycle: every node is not Ready; entering full disruption mode (no evictions)")
		for _, n := range nodes {
			c.dequeueLocked(n.Name)
			reachable = append(reachable, n)
		}
	}
	c.mu.Unlock()
	for _, n := range reachable {
		c.markReachable(ctx, n.Name)
	}
}

// markReachable removes a node's not-ready and unreachable NoExecute
// taints (best effort; the state is re-derived next pass).
func (c *Controller) markReachable(ctx context.Context, name string) {
	node, err := c.client.CoreV1().Nodes().Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return
	}
	keep := slices.DeleteFunc(slices.Clone(node.Spec.Taints), isConditionNoExecute)
	if len(keep) == len(node.Spec.Taints) {
		return
	}
	node.Spec.Taints = keep
	if _, err := c.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err != nil {
		slog.Debug("node lifecycle: could not remove NoExecute taints", "node", name, "err", err)
	}
}

// TaintingStep is what the tainting pass does with a node it took from
// its zone's queue (DecideTainting).
type TaintingStep int

const (
	// TaintingApply: the node is not Ready; give it its NoExecute taint.
	TaintingApply TaintingStep = iota
	// TaintingDrop: the node is gone or Ready again; it leaves the queue.
	TaintingDrop
	// TaintingRetry: the node could not be read, or has no Ready
	// condition; it goes back to the end of its zone's queue.
	TaintingRetry
)

// DecideTainting is the tainting pass's decision for a queued node read
// as node (getErr the read's error), as upstream 1.37's
// doNoExecuteTaintingPass: a node Ready False or Unknown is tainted; a
// read failing other than not found, or a node with no Ready condition,
// is tried again (upstream after 50 ms, its queue ordered by that time
// putting the node behind those queued before; ours at the back of the
// zone's queue, so on a later pass, EvictionPeriod apart); a node not
// found, or Ready True, is dropped.
func DecideTainting(node *corev1.Node, getErr error) TaintingStep {
	switch {
	case apierrors.IsNotFound(getErr):
		return TaintingDrop
	case getErr != nil || node == nil:
		return TaintingRetry
	}
	ready := readyCondition(node.Status.Conditions)
	switch {
	case ready == nil:
		return TaintingRetry
	case ready.Status == corev1.ConditionFalse || ready.Status == corev1.ConditionUnknown:
		return TaintingApply
	}
	return TaintingDrop // Ready True (or a status that is none of the three)
}

// TaintingPass adds the NoExecute taints to queued nodes, as many per zone
// as the zone's token bucket admits now (upstream's
// doNoExecuteTaintingPass, every EvictionPeriod), each as DecideTainting
// says. A failed write puts the node back at the front.
func (c *Controller) TaintingPass(ctx context.Context) {
	now := c.clock.Now()
	type item struct{ zone, node string }
	var work []item
	c.mu.Lock()
	for zone, q := range c.pending {
		b := c.buckets[zone]
		// A node leaves the FIFO but stays in queued until it is Ready
		// again (upstream's RemoveFromQueue); a monitor pass finding it
		// without its taint queues it again (enqueueTainting).
		for len(q) > 0 && b != nil && b.TryAccept(now) {
			work = append(work, item{zone, q[0]})
			q = q[1:]
		}
		c.pending[zone] = q
	}
	c.mu.Unlock()
	for _, w := range work {
		node, err := c.client.CoreV1().Nodes().Get(ctx, w.node, metav1.GetOptions{})
		switch DecideTainting(node, err) {
		case TaintingDrop:
			c.dequeueTainting(w.node) // a later monitor pass re-queues it if need be
			continue
		case TaintingRetry:
			slog.Debug("node lifecycle: queued node not read or without a Ready condition; retried next pass", "node", w.node, "err", err)
			c.mu.Lock()
			if z, ok := c.queued[w.node]; ok && z == w.zone && !slices.Contains(c.pending[w.zone], w.node) {
				c.pending[w.zone] = append(c.pending[w.zone], w.node)
			}
			c.mu.Unlock()
			continue
		}
		ready := conditionStatus(node.Status.Conditions, corev1.NodeReady)
		taints, changed := desiredTaints(node.Spec.Taints, node.Status.Conditions, ready, node.Spec.Unschedulable, now)
		if !changed {
			continue
		}
		node.Spec.Taints = taints
		if _, err := c.client.CoreV1().Nodes().Update(ctx, node, metav1.UpdateOptions{}); err == nil {
			c.mu.Lock()
			c.evictions[w.zone]++
			c.mu.Unlock()
		} else {
			slog.Debug("node lifecycle: NoExecute taint failed; requeued", "node", w.node, "err", err)
			c.mu.Lock()
			if z, ok := c.queued[w.node]; ok && z == w.zone && !slices.Contains(c.pending[w.zone], w.node) {
				c.pending[w.zone] = append([]string{w.node}, c.pending[w.zone]...)
			}
			c.mu.Unlock()
		}
	}
}
