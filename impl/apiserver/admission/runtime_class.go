package admission

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	corev1 "k8s.io/api/core/v1"
	nodev1 "k8s.io/api/node/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// RuntimeClassGetter reads one RuntimeClass; fresh asks for a quorum read
// rather than a possibly cached one. A missing class is a NotFound error.
// The class returned may be shared: callers must not modify it.
type RuntimeClassGetter func(ctx context.Context, name string, fresh bool) (*nodev1.RuntimeClass, error)

// RuntimeClass applies a new pod's spec.runtimeClassName, as
// kube-apiserver's plugin of that name: the class must exist; its
// overhead.podFixed becomes the pod's spec.overhead and its
// scheduling.nodeSelector and tolerations are merged into the pod's
// (mutating phase); the pod's overhead must then be the class's, and a pod
// may carry an overhead only through a class that defines one (validating
// phase, after any webhook). Only pod creates are looked at, as upstream
// (its handler admits Create alone): updates and subresources pass.
type RuntimeClass struct {
	Get RuntimeClassGetter
}

func newRuntimeClassPlugin(d *deps) (any, error) {
	c, err := d.cache(runtimeClassResource, func() runtime.Object { return &nodev1.RuntimeClassList{} })
	if err != nil {
		return nil, err
	}
	return &RuntimeClass{Get: func(ctx context.Context, name string, fresh bool) (*nodev1.RuntimeClass, error) {
		o, err := c.lookup(ctx, "", name, fresh, func() runtime.Object { return &nodev1.RuntimeClass{} })
		if err != nil {
			return nil, err
		}
		return o.(*nodev1.RuntimeClass), nil
	}}, nil
}

// class returns the pod being created and the RuntimeClass it names (nil
// when it names none), or nil, nil for requests the plugin leaves alone.
// A class missing from the cache is looked up again with a quorum read
// before the pod is refused, as upstream's live lookup after its lister.
func (r *RuntimeClass) class(ctx context.Context, a *Attributes) (*corev1.Pod, *nodev1.RuntimeClass, error) {
	pod := podOf(a)
	if pod == nil || a.Operation != Create {
		return nil, nil, nil
	}
	name := pod.Spec.RuntimeClassName
	// An empty name is left to validation (spec.runtimeClassName: Invalid
	// value, 422). kube-apiserver looks "" up, client-go refuses it before
	// any request ("resource name may not be empty") and the answer is a
	// 500; bad input is never a 5xx here, so this deviation is deliberate.
	if name == nil || *name == "" {
		return pod, nil, nil
	}
	rc, err := r.Get(ctx, *name, false)
	if apierrors.IsNotFound(err) {
		rc, err = r.Get(ctx, *name, true)
	}
	if apierrors.IsNotFound(err) {
		return nil, nil, forbidden(a, fmt.Errorf("pod rejected: RuntimeClass %q not found", *name))
	}
	if err != nil {
		// As is, as upstream returns its lookup's error.
		return nil, nil, err
	}
	return pod, rc, nil
}

// Admit implements Mutator.
func (r *RuntimeClass) Admit(ctx context.Context, a *Attributes) error {
	pod, rc, err := r.class(ctx, a)
	if err != nil || pod == nil {
		return err
	}
	spec, err := applyRuntimeClass(&pod.Spec, rc)
	if err != nil {
		return forbidden(a, err)
	}
	pod.Spec.Overhead, pod.Spec.NodeSelector, pod.Spec.Tolerations = spec.Overhead, spec.NodeSelector, spec.Tolerations
	return nil
}

// Validate implements Validator.
func (r *RuntimeClass) Validate(ctx context.Context, a *Attributes) error {
	pod, rc, err := r.class(ctx, a)
	if err != nil || pod == nil {
		return err
	}
	if err := checkOverhead(pod.Spec.Overhead, rc); err != nil {
		return forbidden(a, err)
	}
	return nil
}

// runtimeClassFields are the pod spec fields a RuntimeClass sets.
type runtimeClassFields struct {
	Overhead     corev1.ResourceList
	NodeSelector map[string]string
	Tolerations  []corev1.Toleration
}

// applyRuntimeClass is the mutating decision: the overhead, node selector
// and tolerations a pod with spec gets from rc (nil: the pod names no
// class). It modifies neither spec nor rc. Refusals are upstream's:
//   - an overhead already set that is not the class's;
//   - a nodeSelector key the class sets to another value.
//
// Tolerations are merged as upstream's tolerations.MergeTolerations.
func applyRuntimeClass(spec *corev1.PodSpec, rc *nodev1.RuntimeClass) (runtimeClassFields, error) {
	out := runtimeClassFields{Overhead: spec.Overhead, NodeSelector: spec.NodeSelector, Tolerations: spec.Tolerations}
	if rc == nil {
		return out, nil
	}
	if rc.Overhead != nil {
		if spec.Overhead != nil && !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, spec.Overhead) {
			return out, errOverheadMismatch
		}
		out.Overhead = rc.Overhead.PodFixed.DeepCopy()
	}
	if s := rc.Scheduling; s != nil {
		if spec.NodeSelector == nil {
			out.NodeSelector = maps.Clone(s.NodeSelector)
		} else {
			merged := maps.Clone(spec.NodeSelector)
			// In key order, so that of several conflicts the same one is
			// reported each time (upstream's follows map order).
			for _, k := range slices.Sorted(maps.Keys(s.NodeSelector)) {
				v := s.NodeSelector[k]
				if podValue, ok := merged[k]; ok && podValue != v {
					return out, fmt.Errorf("conflict: runtimeClass.scheduling.nodeSelector[%s] = %s; pod.spec.nodeSelector[%s] = %s", k, v, k, podValue)
				}
				merged[k] = v
			}
			out.NodeSelector = merged
		}
		out.Tolerations = mergeTolerations(spec.Tolerations, s.Tolerations)
	}
	return out, nil
}

var errOverheadMismatch = errors.New("pod rejected: Pod's Overhead doesn't match RuntimeClass's defined Overhead")

// checkOverhead is the validating decision on a pod's final overhead: the
// class's podFixed when the class defines an overhead, none otherwise.
func checkOverhead(overhead corev1.ResourceList, rc *nodev1.RuntimeClass) error {
	if rc != nil && rc.Overhead != nil {
		if !apiequality.Semantic.DeepEqual(rc.Overhead.PodFixed, overhead) {
			return errOverheadMismatch
		}
		return nil
	}
	if overhead != nil {
		return errors.New("pod rejected: Pod Overhead set without corresponding RuntimeClass defined Overhead")
	}
	return nil
}

// mergeTolerations is first followed by second with every toleration that
// another one tolerates a superset of left out (of two equal ones the
// first is kept), as upstream's tolerations.MergeTolerations.
func mergeTolerations(first, second []corev1.Toleration) []corev1.Toleration {
	all := make([]corev1.Toleration, 0, len(first)+len(second))
	all = append(append(all, first...), second...)
	var merged []corev1.Toleration
	for i, t := range all {
		redundant := slices.ContainsFunc(merged, func(kept corev1.Toleration) bool { return toleratesSuperset(kept, t) })
		for _, later := range all[i+1:] {
			if redundant {
				break
			}
			redundant = !apiequality.Semantic.DeepEqual(t, later) && toleratesSuperset(later, t)
		}
		if !redundant {
			merged = append(merged, t)
		}
	}
	return merged
}

// toleratesSuperset reports whether ss tolerates every taint t tolerates
// (upstream's isSuperset).
func toleratesSuperset(ss, t corev1.Toleration) bool {
	if apiequality.Semantic.DeepEqual(t, ss) {
		return true
	}
	// An empty key with Exists matches every key.
	if t.Key != ss.Key && (ss.Key != "" || ss.Operator != corev1.TolerationOpExists) {
		return false
	}
	// An empty effect matches every effect.
	if t.Effect != ss.Effect && ss.Effect != "" {
		return false
	}
	if ss.Effect == corev1.TaintEffectNoExecute && ss.TolerationSeconds != nil {
		if t.TolerationSeconds == nil || *t.TolerationSeconds > *ss.TolerationSeconds {
			return false
		}
	}
	switch ss.Operator {
	case corev1.TolerationOpEqual, "":
		return t.Operator == corev1.TolerationOpEqual && t.Value == ss.Value
	case corev1.TolerationOpExists:
		return true
	}
	return false
}
