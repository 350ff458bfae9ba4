package admission

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// DefaultTolerationSeconds adds, to every pod created or updated that does
// not already tolerate them, NoExecute tolerations of the node.kubernetes.io/not-ready
// and node.kubernetes.io/unreachable taints for a bounded time (300 s by
// default, kube-apiserver's --default-not-ready-toleration-seconds and
// --default-unreachable-toleration-seconds), so the node lifecycle
// controller evicts pods from a failed node after that time.
type DefaultTolerationSeconds struct {
	NotReadySeconds, UnreachableSeconds int64
}

func newDefaultTolerationSeconds(d *deps) (any, error) {
	p := &DefaultTolerationSeconds{NotReadySeconds: d.opts.NotReadyTolerationSeconds, UnreachableSeconds: d.opts.UnreachableTolerationSeconds}
	if p.NotReadySeconds == 0 {
		p.NotReadySeconds = 300
	}
	if p.UnreachableSeconds == 0 {
		p.UnreachableSeconds = 300
	}
	return p, nil
}

// Admit implements Mutator.
func (p *DefaultTolerationSeconds) Admit(_ context.Context, a *Attributes) error {
	pod := podOf(a)
	if pod == nil || (a.Operation != Create && a.Operation != Update) {
		return nil
	}
	pod.Spec.Tolerations = defaultTolerations(pod.Spec.Tolerations, p.NotReadySeconds, p.UnreachableSeconds)
	return nil
}

// defaultTolerations is the pure decision: tols plus the missing defaults.
// A toleration with an empty key (all taints) or an empty effect (all
// effects) already covers a taint.
func defaultTolerations(tols []corev1.Toleration, notReady, unreachable int64) []corev1.Toleration {
	covers := func(key string) bool {
		for _, t := range tols {
			if (t.Key == key || t.Key == "") && (t.Effect == corev1.TaintEffectNoExecute || t.Effect == "") {
				return true
			}
		}
		return false
	}
	add := func(key string, seconds int64) {
		if !covers(key) {
			tols = append(tols, corev1.Toleration{
				Key: key, Operator: corev1.TolerationOpExists,
				Effect: corev1.TaintEffectNoExecute, TolerationSeconds: &seconds,
			})
		}
	}
	add(corev1.TaintNodeNotReady, notReady)
	add(corev1.TaintNodeUnreachable, unreachable)
	return tols
}
