package nodelifecycle

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/faults"
)

// DefaultTolerations stands in for the DefaultTolerationSeconds admission
// plugin for pods that reached the cluster without it: a pod with no
// toleration at all for the not-ready / unreachable NoExecute taints is
// treated as tolerating them for these many seconds (negative: no default,
// such pods are evicted at once). Pods admitted by an API server that runs
// the plugin already carry these tolerations; nothing changes for them.
type DefaultTolerations struct {
	NotReadySeconds    int64
	UnreachableSeconds int64
}

// EvictionKind is the taint manager's verdict for one pod.
type EvictionKind int

// Verdicts.
const (
	// Keep: no NoExecute taint applies, or all are tolerated forever.
	Keep EvictionKind = iota
	// EvictNow: some NoExecute taint is not tolerated, or its tolerationSeconds ran out.
	EvictNow
	// EvictAt: every taint is tolerated, the shortest for tolerationSeconds.
	EvictAt
)

// Eviction is the decision for one pod.
type Eviction struct {
	Kind EvictionKind
	At   time.Time
}

func effectiveTolerations(pod *corev1.Pod, d DefaultTolerations) []corev1.Toleration {
	tols := pod.Spec.Tolerations
	for _, def := range []struct {
		key     string
		seconds int64
	}{{TaintNotReady, d.NotReadySeconds}, {TaintUnreachable, d.UnreachableSeconds}} {
		if def.seconds < 0 {
			continue
		}
		probe := corev1.Taint{Key: def.key, Effect: corev1.TaintEffectNoExecute}
		covered := false
		for i := range tols {
			if tolerates(tols[i], &probe) {
				covered = true
			}
		}
		if !covered {
			s := def.seconds
			tols = append(append([]corev1.Toleration(nil), tols...), corev1.Toleration{
				Key: def.key, Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &s})
		}
	}
	return tols
}

// DecideEviction is the NoExecute taint manager's decision for a pod on a
// node with taints (GC-1: a pod is deleted because its node is tainted): a NoExecute taint the pod does not
// tolerate evicts it now; otherwise it may stay for the smallest
// tolerationSeconds among the tolerations used, counted from since (when
// the taint manager first saw the pod under these taints); tolerations
// without seconds tolerate forever.
func DecideEviction(pod *corev1.Pod, taints []corev1.Taint, defaults DefaultTolerations, since, now time.Time) Eviction {
	if pod.DeletionTimestamp != nil || pod.Spec.NodeName == "" {
		return Eviction{Kind: Keep}
	}
	tols := effectiveTolerations(pod, defaults)
	var min *time.Duration
	applies := false
	for i := range taints {
		t := &taints[i]
		if t.Effect != corev1.TaintEffectNoExecute {
			continue
		}
		applies = true
		tolerated := false
		for j := range tols {
			if !tolerates(tols[j], t) {
				continue
			}
			tolerated = true
			if s := tols[j].TolerationSeconds; s != nil {
				d := time.Duration(max(*s, 0)) * time.Second
				if min == nil || d < *min {
					min = &d
				}
			}
		}
		if !tolerated || faults.Enabled(faults.NodeLifecycleEvictsTolerated) { // mutation: tolerations ignored (GC-1)
			return Eviction{Kind: EvictNow}
		}
	}
	if !applies || min == nil {
		return Eviction{Kind: Keep}
	}
	at := since.Add(*min)
	if !now.Before(at) {
		return Eviction{Kind: EvictNow}
	}
	return Eviction{Kind: EvictAt, At: at}
}

// tolerates reports whether tol matches taint (the Equal and Exists
// operators, empty key with Exists matching every key, empty effect
// matching every effect).
func tolerates(tol corev1.Toleration, taint *corev1.Taint) bool {
	if tol.Effect != "" && tol.Effect != taint.Effect {
		return false
	}
	if tol.Key != "" && tol.Key != taint.Key {
		return false
	}
	switch tol.Operator {
	case corev1.TolerationOpExists:
		return true
	case "", corev1.TolerationOpEqual:
		return tol.Key != "" && tol.Value == taint.Value
	}
	return false
}
