package admission

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	resourcehelper "k8s.io/component-helpers/resource"
)

// limitRangerAnnotation records on a pod which defaults LimitRanger set.
const limitRangerAnnotation = "kubernetes.io/limit-ranger"

// LimitRangeLister lists a namespace's LimitRanges.
type LimitRangeLister func(ctx context.Context, namespace string) ([]corev1.LimitRange, error)

// LimitRanger applies the namespace's LimitRanges to new pods and to
// pods/resize updates: containers without a limit or request for a
// resource get the Container item's default / defaultRequest (recorded in
// the kubernetes.io/limit-ranger annotation, which a resize does not
// keep), then every Container and Pod item's min, max and
// maxLimitRequestRatio are enforced (403 listing every violation).
type LimitRanger struct {
	List LimitRangeLister
}

func newLimitRanger(d *deps) (any, error) {
	c, err := d.cache(limitRangeResource, func() runtime.Object { return &corev1.LimitRangeList{} })
	if err != nil {
		return nil, err
	}
	return &LimitRanger{List: func(ctx context.Context, namespace string) ([]corev1.LimitRange, error) {
		objs, err := c.list(ctx, namespace)
		return typed[corev1.LimitRange](objs), err
	}}, nil
}

// applies: pod creates, and updates through pods/resize (in-place
// resize), as upstream's LimitRanger; other pod updates cannot change the
// containers' resources, and other subresources are not its business.
func (p *LimitRanger) applies(a *Attributes) *corev1.Pod {
	switch {
	case a.Operation == Create:
		return podOf(a)
	case a.Operation == Update && a.Subresource == "resize" && a.Resource.GroupResource() == podResource:
		pod, _ := a.Object.(*corev1.Pod)
		return pod
	}
	return nil
}

// Admit implements Mutator.
func (p *LimitRanger) Admit(ctx context.Context, a *Attributes) error {
	pod := p.applies(a)
	if pod == nil {
		return nil
	}
	ranges, err := p.List(ctx, a.Namespace)
	if err != nil {
		return fmt.Errorf("applying limit ranges: %w", err)
	}
	for i := range ranges {
		applyLimitRangeDefaults(pod, &ranges[i])
	}
	return nil
}

// Validate implements Validator.
func (p *LimitRanger) Validate(ctx context.Context, a *Attributes) error {
	pod := p.applies(a)
	if pod == nil {
		return nil
	}
	ranges, err := p.List(ctx, a.Namespace)
	if err != nil {
		return fmt.Errorf("checking limit ranges: %w", err)
	}
	var errs []error
	for i := range ranges {
		errs = append(errs, checkLimitRange(pod, &ranges[i])...)
	}
	if len(errs) > 0 {
		return forbidden(a, utilerrors.NewAggregate(errs))
	}
	return nil
}

// applyLimitRangeDefaults fills missing container limits and requests from
// lr's Container items.
func applyLimitRangeDefaults(pod *corev1.Pod, lr *corev1.LimitRange) {
	limits, requests := corev1.ResourceList{}, corev1.ResourceList{}
	for _, item := range lr.Spec.Limits {
		if item.Type != corev1.LimitTypeContainer {
			continue
		}
		for n, q := range item.Default {
			limits[n] = q.DeepCopy()
		}
		for n, q := range item.DefaultRequest {
			requests[n] = q.DeepCopy()
		}
	}
	if len(limits) == 0 && len(requests) == 0 {
		return
	}
	var notes []string
	fill := func(c *corev1.Container, kind string) {
		var setReq, setLim []string
		if c.Resources.Limits == nil {
			c.Resources.Limits = corev1.ResourceList{}
		}
		if c.Resources.Requests == nil {
			c.Resources.Requests = corev1.ResourceList{}
		}
		for n, q := range limits {
			if _, ok := c.Resources.Limits[n]; !ok {
				c.Resources.Limits[n] = q.DeepCopy()
				setLim = append(setLim, string(n))
			}
		}
		for n, q := range requests {
			if _, ok := c.Resources.Requests[n]; !ok {
				c.Resources.Requests[n] = q.DeepCopy()
				setReq = append(setReq, string(n))
			}
		}
		sort.Strings(setReq)
		sort.Strings(setLim)
		if len(setReq) > 0 {
			notes = append(notes, fmt.Sprintf("%s request for %s %s", strings.Join(setReq, ", "), kind, c.Name))
		}
		if len(setLim) > 0 {
			notes = append(notes, fmt.Sprintf("%s limit for %s %s", strings.Join(setLim, ", "), kind, c.Name))
		}
	}
	for i := range pod.Spec.InitContainers {
		fill(&pod.Spec.InitContainers[i], "init container")
	}
	for i := range pod.Spec.Containers {
		fill(&pod.Spec.Containers[i], "container")
	}
	if len(notes) > 0 {
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[limitRangerAnnotation] = "LimitRanger plugin set: " + strings.Join(notes, "; ")
	}
}

// checkLimitRange returns every violation of lr by pod.
func checkLimitRange(pod *corev1.Pod, lr *corev1.LimitRange) []error {
	var errs []error
	check := func(kind string, item *corev1.LimitRangeItem, requests, limits corev1.ResourceList) {
		for _, n := range sortedNames(item.Min) {
			if err := minConstraint(kind, n, item.Min[n], requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
		for _, n := range sortedNames(item.Max) {
			if err := maxConstraint(kind, n, item.Max[n], requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
		for _, n := range sortedNames(item.MaxLimitRequestRatio) {
			if err := ratioConstraint(kind, n, item.MaxLimitRequestRatio[n], requests, limits); err != nil {
				errs = append(errs, err)
			}
		}
	}
	for i := range lr.Spec.Limits {
		item := &lr.Spec.Limits[i]
		switch item.Type {
		case corev1.LimitTypeContainer:
			for j := range pod.Spec.InitContainers {
				r := &pod.Spec.InitContainers[j].Resources
				check("Container", item, r.Requests, r.Limits)
			}
			for j := range pod.Spec.Containers {
				r := &pod.Spec.Containers[j].Resources
				check("Container", item, r.Requests, r.Limits)
			}
		case corev1.LimitTypePod:
			check("Pod", item, podTotals(pod, false), podTotals(pod, true))
		}
	}
	return errs
}

// podTotals are the pod's requests (or limits) as kube-apiserver's
// LimitRanger adds them up for a Pod item: app containers and sidecars
// (restartable init containers) summed, raised to the peak while a regular
// init container runs (it plus the sidecars before it), by the same
// component-helpers PodRequests/PodLimits the quota counts with
// (impl/quota); a pod-level cpu or memory value (spec.resources,
// PodLevelResources being on by default) replaces the sum, upstream's
// LimitRanger taking no other pod-level resource. Only the spec counts:
// neither the overhead nor status resources, as upstream's.
func podTotals(pod *corev1.Pod, limits bool) corev1.ResourceList {
	opts := resourcehelper.PodResourcesOptions{ExcludeOverhead: true, SkipPodLevelResources: true}
	total := resourcehelper.PodRequests(pod, opts)
	if limits {
		total = resourcehelper.PodLimits(pod, opts)
	}
	if pod.Spec.Resources != nil {
		podLevel := pod.Spec.Resources.Requests
		if limits {
			podLevel = pod.Spec.Resources.Limits
		}
		for n, q := range podLevel {
			if n == corev1.ResourceCPU || n == corev1.ResourceMemory {
				total[n] = q.DeepCopy()
			}
		}
	}
	return total
}

func sortedNames(l corev1.ResourceList) []corev1.ResourceName {
	out := make([]corev1.ResourceName, 0, len(l))
	for n := range l {
		out = append(out, n)
	}
	sort.Slice(out, func(i, j int) bool { return out[i] < out[j] })
	return out
}

func minConstraint(kind string, n corev1.ResourceName, min resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[n]
	lim, hasLim := limits[n]
	switch {
	case !hasReq:
		return fmt.Errorf("minimum %s usage per %s is %s.  No request is specified", n, kind, min.String())
	case req.Cmp(min) < 0:
		return fmt.Errorf("minimum %s usage per %s is %s, but request is %s", n, kind, min.String(), req.String())
	case hasLim && lim.Cmp(min) < 0:
		return fmt.Errorf("minimum %s usage per %s is %s, but limit is %s", n, kind, min.String(), lim.String())
	}
	return nil
}

func maxConstraint(kind string, n corev1.ResourceName, max resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[n]
	lim, hasLim := limits[n]
	switch {
	case !hasLim:
		return fmt.Errorf("maximum %s usage per %s is %s.  No limit is specified", n, kind, max.String())
	case lim.Cmp(max) > 0:
		return fmt.Errorf("maximum %s usage per %s is %s, but limit is %s", n, kind, max.String(), lim.String())
	case hasReq && req.Cmp(max) > 0:
		return fmt.Errorf("maximum %s usage per %s is %s, but request is %s", n, kind, max.String(), req.String())
	}
	return nil
}

func ratioConstraint(kind string, n corev1.ResourceName, ratio resource.Quantity, requests, limits corev1.ResourceList) error {
	req, hasReq := requests[n]
	lim, hasLim := limits[n]
	switch {
	case !hasReq || req.IsZero():
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no request is specified or request is 0", n, kind, ratio.String())
	case !hasLim || lim.IsZero():
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but no limit is specified or limit is 0", n, kind, ratio.String())
	}
	observed := float64(lim.MilliValue()) / float64(req.MilliValue())
	if observed > float64(ratio.MilliValue())/1000 {
		return fmt.Errorf("%s max limit to request ratio per %s is %s, but provided ratio is %f", n, kind, ratio.String(), observed)
	}
	return nil
}
