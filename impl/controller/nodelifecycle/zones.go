package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// ZoneState is a zone's health as kube-controller-manager classifies it
// from its nodes' Ready conditions.
type ZoneState string

// Zone states (upstream's values).
const (
	// ZoneInitial: a zone seen for the first time this pass.
	ZoneInitial ZoneState = "Initial"
	// ZoneNormal: evictions at --node-eviction-rate.
	ZoneNormal ZoneState = "Normal"
	// ZonePartialDisruption: at least --unhealthy-zone-threshold of the
	// zone (and more than two nodes) not Ready; evictions slow to
	// --secondary-node-eviction-rate in a large zone, stop in a small one.
	ZonePartialDisruption ZoneState = "PartialDisruption"
	// ZoneFullDisruption: no node of the zone Ready; evictions at the
	// normal rate, unless every zone is fully disrupted — then the
	// control plane, not the nodes, is presumed broken and evictions stop.
	ZoneFullDisruption ZoneState = "FullDisruption"
)

// Zone labels, and the label that keeps a node out of the zone counts.
const (
	LabelZone                       = corev1.LabelTopologyZone            // topology.kubernetes.io/zone
	LabelRegion                     = corev1.LabelTopologyRegion          // topology.kubernetes.io/region
	labelZoneBeta                   = corev1.LabelFailureDomainBetaZone   // failure-domain.beta.kubernetes.io/zone
	labelRegionBeta                 = corev1.LabelFailureDomainBetaRegion // failure-domain.beta.kubernetes.io/region
	LabelNodeExcludedFromDisruption = "node.kubernetes.io/exclude-disruption"
)

// EvictionPeriod is how often the NoExecute tainting pass runs (upstream's
// NodeEvictionPeriod).
const EvictionPeriod = 100 * time.Millisecond

// ZoneKey is the zone a node counts in: region and zone from the
// topology labels (the beta failure-domain labels when those are absent),
// "" for a node with neither, as upstream's GetZoneKey.
func ZoneKey(node *corev1.Node) string {
	l := node.Labels
	region, zone := l[LabelRegion], l[LabelZone]
	if region == "" {
		region = l[labelRegionBeta]
	}
	if zone == "" {
		zone = l[labelZoneBeta]
	}
	if region == "" && zone == "" {
		return ""
	}
	return region + ":\x00:" + zone
}

// ExcludedFromDisruption reports whether a node is left out of the zone
// counts (node.kubernetes.io/exclude-disruption label).
func ExcludedFromDisruption(node *corev1.Node) bool {
	_, ok := node.Labels[LabelNodeExcludedFromDisruption]
	return ok
}

// EvictionRates are kube-controller-manager's rate flags.
type EvictionRates struct {
	// NodeEvictionRate (--node-eviction-rate, 0.1): nodes per second per
	// zone that get a NoExecute taint while the zone is healthy.
	NodeEvictionRate float32
	// SecondaryNodeEvictionRate (--secondary-node-eviction-rate, 0.01):
	// the rate in a partially disrupted zone larger than
	// LargeClusterSizeThreshold.
	SecondaryNodeEvictionRate float32
	// UnhealthyZoneThreshold (--unhealthy-zone-threshold, 0.55): the
	// fraction of not-Ready nodes that makes a zone partially disrupted.
	UnhealthyZoneThreshold float32
	// LargeClusterSizeThreshold (--large-cluster-size-threshold, 50):
	// zones of at most this many nodes stop evictions when partially
	// disrupted.
	LargeClusterSizeThreshold int32
}

// DefaultEvictionRates are upstream's defaults.
func DefaultEvictionRates() EvictionRates {
	return EvictionRates{NodeEvictionRate: 0.1, SecondaryNodeEvictionRate: 0.01, UnhealthyZoneThreshold: 0.55, LargeClusterSizeThreshold: 50}
}

// ComputeZoneState classifies a zone from its nodes' Ready statuses: none
// True (and at least one node) is full disruption; more than two not True
// making up at least the threshold is partial disruption; else normal.
func ComputeZoneState(ready []corev1.ConditionStatus, unhealthyThreshold float32) (notReady int, state ZoneState) {
	readyNodes := 0
	for _, s := range ready {
		if s == corev1.ConditionTrue {
			readyNodes++
		} else {
			notReady++
		}
	}
	switch {
	case readyNodes == 0 && notReady > 0:
		return notReady, ZoneFullDisruption
	case notReady > 2 && float32(notReady)/float32(notReady+readyNodes) >= unhealthyThreshold:
		return notReady, ZonePartialDisruption
	default:
		return notReady, ZoneNormal
	}
}

// ZoneRate is the NoExecute tainting rate of a zone of size nodes in state.
func (r EvictionRates) ZoneRate(state ZoneState, size int) float32 {
	switch state {
	case ZonePartialDisruption:
		if int32(size) > r.LargeClusterSizeThreshold {
			return r.SecondaryNodeEvictionRate
		}
		return 0
	default: // Normal, FullDisruption (when not every zone is)
		return r.NodeEvictionRate
	}
}

// DisruptionDecision is what one pass over the zones changes.
type DisruptionDecision struct {
	// States are the zones' states after the pass (vanished zones dropped).
	States map[string]ZoneState
	// Rates are the zones whose tainting rate changes, with the new rate.
	Rates map[string]float32
	// EnterFullDisruption: every zone just became fully disrupted; all
	// NoExecute condition taints are removed and tainting stops.
	EnterFullDisruption bool
	// ExitFullDisruption: some node is Ready again after every zone was
	// fully disrupted; every node gets a fresh grace period.
	ExitFullDisruption bool
}

// DecideDisruption is kube-controller-manager's handleDisruption: from the
// previous zone states and this pass's Ready statuses by zone, the new
// states and the tainting rates that change.
func DecideDisruption(prev map[string]ZoneState, zones map[string][]corev1.ConditionStatus, r EvictionRates) DisruptionDecision {
	newStates := map[string]ZoneState{}
	allAreFull := true
	for zone, ready := range zones {
		_, s := ComputeZoneState(ready, r.UnhealthyZoneThreshold)
		if s != ZoneFullDisruption {
			allAreFull = false
		}
		newStates[zone] = s
	}
	states := map[string]ZoneState{}
	allWereFull := true
	for zone, s := range prev {
		if _, ok := zones[zone]; !ok {
			continue // the zone has no node left
		}
		states[zone] = s
		if s != ZoneFullDisruption {
			allWereFull = false
		}
	}
	for zone := range zones {
		if _, ok := states[zone]; !ok {
			states[zone] = ZoneInitial
			allWereFull = false
		}
	}
	d := DisruptionDecision{States: states, Rates: map[string]float32{}}
	switch {
	case allAreFull && allWereFull:
		// Still fully disrupted everywhere (or no zone at all): nothing changes.
	case allAreFull:
		d.EnterFullDisruption = true
		for zone := range states {
			d.Rates[zone] = 0
			states[zone] = ZoneFullDisruption
		}
	case allWereFull:
		d.ExitFullDisruption = true
		for zone := range states {
			d.Rates[zone] = r.ZoneRate(newStates[zone], len(zones[zone]))
			states[zone] = newStates[zone]
		}
	default:
		for zone, s := range states {
			if s == newStates[zone] {
				continue
			}
			d.Rates[zone] = r.ZoneRate(newStates[zone], len(zones[zone]))
			states[zone] = newStates[zone]
		}
	}
	return d
}

// TokenBucket is a zone's NoExecute tainting limiter: QPS tokens a second,
// a burst of one, starting full, as upstream's (client-go's token bucket
// with burst 1). QPS 0 never admits. It is a plain value driven by the
// time passed in.
type TokenBucket struct {
	QPS    float32
	tokens float64
	last   time.Time
}

// NewTokenBucket returns a full bucket.
func NewTokenBucket(qps float32, now time.Time) *TokenBucket {
	return &TokenBucket{QPS: qps, tokens: 1, last: now}
}

func (b *TokenBucket) refill(now time.Time) {
	if now.After(b.last) {
		b.tokens = min(1, b.tokens+now.Sub(b.last).Seconds()*float64(b.QPS))
		b.last = now
	}
}

// TryAccept takes a token if one is available at now.
func (b *TokenBucket) TryAccept(now time.Time) bool {
	if b.QPS <= 0 {
		return false
	}
	b.refill(now)
	if b.tokens >= 1 {
		b.tokens--
		return true
	}
	return false
}

// Swap changes the rate at now, as upstream's SwapLimiter: an unchanged
// rate keeps the bucket; otherwise the new bucket starts full unless the
// old one had no token left.
func (b *TokenBucket) Swap(qps float32, now time.Time) {
	if b.QPS == qps {
		return
	}
	empty := !b.TryAccept(now)
	b.QPS, b.tokens, b.last = qps, 1, now
	if qps > 0 && empty {
		b.tokens = 0
	}
}

// isConditionNoExecute reports whether t is the not-ready or unreachable
// NoExecute taint, the ones whose addition is rate limited.
func isConditionNoExecute(t corev1.Taint) bool {
	return t.Effect == corev1.TaintEffectNoExecute && (t.Key == TaintNotReady || t.Key == TaintUnreachable)
}

// GateNoExecute splits a node's desired taints (DecideNode's) into what is
// written now and whether the node must wait in its zone's queue for a
// not-ready/unreachable NoExecute taint: adding one to a node that has
// neither waits for a token; swapping one for the other, removing them,
// and every other taint change happen at once, as upstream. taints is nil
// when nothing is to be written now.
func GateNoExecute(current, desired []corev1.Taint) (taints []corev1.Taint, queue bool) {
	if desired == nil {
		return nil, false
	}
	had := false
	for _, t := range current {
		if isConditionNoExecute(t) {
			had = true
		}
	}
	var now []corev1.Taint
	for _, t := range desired {
		if isConditionNoExecute(t) && !had {
			queue = true
			continue
		}
		now = append(now, t)
	}
	if !queue {
		return desired, false
	}
	if now == nil {
		now = []corev1.Taint{}
	}
	if taintsEqual(current, now) {
		return nil, true
	}
	return now, true
}
