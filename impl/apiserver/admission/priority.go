package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1 "k8s.io/api/scheduling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
)

// PriorityClassLister lists the stored PriorityClasses; fresh asks for a
// quorum read rather than a possibly cached one.
type PriorityClassLister func(ctx context.Context, fresh bool) ([]schedulingv1.PriorityClass, error)

// Priority resolves a new pod's spec.priorityClassName (or the cluster's
// globalDefault class) into spec.priority and spec.preemptionPolicy, and
// keeps a single globalDefault PriorityClass, as kube-apiserver's plugin.
type Priority struct {
	List PriorityClassLister
}

func newPriority(d *deps) (any, error) {
	c, err := d.cache(priorityClassResource, func() runtime.Object { return &schedulingv1.PriorityClassList{} })
	if err != nil {
		return nil, err
	}
	return &Priority{List: func(ctx context.Context, fresh bool) ([]schedulingv1.PriorityClass, error) {
		objs, err := c.read(ctx, "", fresh)
		return typed[schedulingv1.PriorityClass](objs), err
	}}, nil
}

// Admit implements Mutator.
func (p *Priority) Admit(ctx context.Context, a *Attributes) error {
	pod := podOf(a)
	if pod == nil {
		return nil
	}
	switch a.Operation {
	case Create:
	case Update:
		// The priority was set at create; an update that drops it keeps it.
		if old, ok := a.OldObject.(*corev1.Pod); ok {
			if pod.Spec.Priority == nil {
				pod.Spec.Priority = old.Spec.Priority
			}
			if pod.Spec.PreemptionPolicy == nil {
				pod.Spec.PreemptionPolicy = old.Spec.PreemptionPolicy
			}
		}
		return nil
	default:
		return nil
	}
	if pod.Spec.PriorityClassName == "" && pod.Spec.Priority != nil && *pod.Spec.Priority == 0 &&
		(pod.Spec.PreemptionPolicy == nil || *pod.Spec.PreemptionPolicy == corev1.PreemptLowerPriority) {
		// impl/registry's pod defaulting fills priority 0 and
		// PreemptLowerPriority into pods that name no class (standing in
		// for this plugin); that is not a priority the client chose, so
		// the global default class still applies.
		pod.Spec.Priority, pod.Spec.PreemptionPolicy = nil, nil
	}
	classes, err := p.List(ctx, false)
	if err != nil {
		// In kube-apiserver's words for a lister failing.
		if pod.Spec.PriorityClassName == "" {
			return fmt.Errorf("failed to get default priority class: %w", err)
		}
		return fmt.Errorf("failed to get PriorityClass with name %s: %w", pod.Spec.PriorityClassName, err)
	}
	name, value, policy, err := resolvePriority(pod.Spec.PriorityClassName, classes)
	if apierrors.IsNotFound(err) {
		return forbidden(a, fmt.Errorf("no PriorityClass with name %v was found", pod.Spec.PriorityClassName))
	}
	if err != nil {
		return err
	}
	if pod.Spec.Priority != nil && *pod.Spec.Priority != value {
		return forbidden(a, fmt.Errorf("the integer value of priority (%d) must not be provided in pod spec; priority admission controller computed %d from the given PriorityClass name", *pod.Spec.Priority, value))
	}
	if pod.Spec.PreemptionPolicy != nil && *pod.Spec.PreemptionPolicy != policy {
		return forbidden(a, fmt.Errorf("the string value of PreemptionPolicy (%s) must not be provided in pod spec; priority admission controller computed %s from the given PriorityClass name", *pod.Spec.PreemptionPolicy, policy))
	}
	pod.Spec.PriorityClassName = name
	pod.Spec.Priority = &value
	pod.Spec.PreemptionPolicy = &policy
	return nil
}

// resolvePriority is the pure decision: the class name, priority and
// preemption policy a pod naming className gets, from the stored classes
// alone (the system classes too: the API server creates them at start, as
// kube-apiserver's plugin reads them from its lister only). An empty
// className takes the global default class (defaultClass), or priority 0
// and PreemptLowerPriority when there is none. An unknown class is
// NotFound.
func resolvePriority(className string, classes []schedulingv1.PriorityClass) (string, int32, corev1.PreemptionPolicy, error) {
	policyOf := func(pc *schedulingv1.PriorityClass) corev1.PreemptionPolicy {
		if pc.PreemptionPolicy != nil {
			return *pc.PreemptionPolicy
		}
		return corev1.PreemptLowerPriority
	}
	if className == "" {
		def := defaultClass(classes)
		if def == nil {
			return "", 0, corev1.PreemptLowerPriority, nil
		}
		return def.Name, def.Value, policyOf(def), nil
	}
	for i := range classes {
		if classes[i].Name == className {
			return className, classes[i].Value, policyOf(&classes[i]), nil
		}
	}
	return "", 0, "", apierrors.NewNotFound(priorityClassResource, className)
}

// defaultClass is the global default class: when more than one is marked
// (two creates racing), the one of lowest value, as kube-apiserver picks.
// nil when there is none. Pure.
func defaultClass(classes []schedulingv1.PriorityClass) *schedulingv1.PriorityClass {
	var def *schedulingv1.PriorityClass
	for i := range classes {
		if classes[i].GlobalDefault && (def == nil || classes[i].Value < def.Value) {
			def = &classes[i]
		}
	}
	return def
}

// Validate implements Validator: at most one PriorityClass is the
// globalDefault.
func (p *Priority) Validate(ctx context.Context, a *Attributes) error {
	if a.Resource.GroupResource() != priorityClassResource || a.Subresource != "" || (a.Operation != Create && a.Operation != Update) {
		return nil
	}
	pc, ok := a.Object.(*schedulingv1.PriorityClass)
	if !ok || !pc.GlobalDefault {
		return nil
	}
	// A quorum read: two defaults must not slip through a lagging cache.
	classes, err := p.List(ctx, true)
	if err != nil {
		return fmt.Errorf("failed to get default priority class: %w", err)
	}
	// As kube-apiserver: a create is refused whenever a default exists
	// (even under its own name, before the store would say it exists), an
	// update unless the default is the class updated.
	if def := defaultClass(classes); def != nil && (a.Operation == Create || def.Name != pc.Name) {
		return forbidden(a, fmt.Errorf("PriorityClass %v is already marked as default. Only one default can exist", def.Name))
	}
	return nil
}
