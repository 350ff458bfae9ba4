package admission

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	resourcehelper "k8s.io/component-helpers/resource"

	quotaeval "github.com/kubeproof/kubeproof/impl/quota"
)

// QuotaStore is what ResourceQuota needs of storage.
type QuotaStore interface {
	// List returns the namespace's quotas (a cached read is fine: Update
	// decides on the current object).
	List(ctx context.Context, namespace string) ([]corev1.ResourceQuota, error)
	// Update applies tryUpdate to the current quota and writes the result
	// with a compare-and-swap on its resourceVersion, calling tryUpdate
	// again on the newer object when another write came first.
	Update(ctx context.Context, namespace, name string, tryUpdate func(*corev1.ResourceQuota) (*corev1.ResourceQuota, error)) error
}

// ResourceQuota keeps every namespace within its ResourceQuotas, judged
// as upstream's CheckRequest by what the resource quota controller last
// wrote: status.hard and status.used, never spec.hard. Before a write
// that upstream's quota evaluators evaluate (quotaHandles) is admitted,
// the usage it adds is added to status.used of every quota that covers
// the new object and whose status.hard names a resource of its kind —
// object counts, a pod's requests and limits, a service's load balancer
// and node ports; on an update, only what the new object uses beyond the
// stored one, for quotas that also covered the stored one (quotaCharges)
// — with a compare-and-swap on the quota object, retried on conflict: a
// write that would take any quota over status.hard is refused, so
// concurrent writes can never exceed a quota. As upstream, a quota whose
// status the controller has not written yet limits nothing (status.hard
// empty: the write is admitted and not charged; the controller's recount
// counts it), and one whose status.hard names a resource of the write's
// kind without a status.used entry for it refuses the write with 403
// "status unknown for quota: <name>, resources: <names>" until the
// controller catches up; clients retry.
//
// Usage is given back when objects are deleted, pods finish or an update
// lowers usage by the resource quota controller
// (impl/controller/resourcequota), which recounts status.used as
// Kubernetes' does.
type ResourceQuota struct {
	Store QuotaStore
	// LimitedResources (ResourceQuota's configuration, limitedResources)
	// name resources whose consumption needs a covering quota.
	LimitedResources []LimitedResource
}

// LimitedResource is one entry of ResourceQuota's limitedResources: a
// write of APIGroup/Resource that consumes (usage above zero) a resource
// name containing one of MatchContains is refused unless some quota
// restricts that name ("insufficient quota to consume: <names>"), even
// where the namespace has no quota; a pod in one of MatchScopes needs a
// quota whose scopes name that scope ("insufficient quota to match these
// scopes: ...").
type LimitedResource struct {
	APIGroup      string                                     `json:"apiGroup,omitempty"`
	Resource      string                                     `json:"resource"`
	MatchContains []string                                   `json:"matchContains,omitempty"`
	MatchScopes   []corev1.ScopedResourceSelectorRequirement `json:"matchScopes,omitempty"`
}

func newResourceQuota(d *deps) (any, error) {
	q, err := d.store(quotaResource)
	if err != nil {
		return nil, err
	}
	c, err := d.cache(quotaResource, func() runtime.Object { return &corev1.ResourceQuotaList{} })
	if err != nil {
		return nil, err
	}
	return &ResourceQuota{Store: &storeQuotas{quotas: q, cache: c}, LimitedResources: d.opts.QuotaLimitedResources}, nil
}

var serviceResource = corev1.Resource("services")

// quotaHandles tells which writes the quota admission evaluates. As in
// kube-apiserver since 1.33, the plugin skips no subresource itself (only
// cluster-scoped writes and namespace creates; connects and deletes never
// reach it): the evaluator of the resource decides, by its Handles. The
// pod evaluator takes a create and an update into or out of the
// Terminating scope (activeDeadlineSeconds set or removed; obj and old are
// the new and stored pod) of the pod itself, and an update of pods/resize
// (in-place resize, charged by its growth) — never status, binding,
// eviction or ephemeralcontainers; the service evaluator every create and
// update, of any subresource (a type change changes the usage;
// services/status is charged, never refused: Validate); events are
// ignored; every other resource's object-count evaluator a create.
//
// One choice is ours: a create of a subresource of such a resource —
// serviceaccounts/token, the only one served — is not evaluated (a
// TokenRequest creates no service account). Upstream's object-count
// evaluator, in every version read, does not look at the subresource, so
// kube-apiserver may charge a TokenRequest to count/serviceaccounts; that
// is unconfirmed.
func quotaHandles(gr schema.GroupResource, op Operation, subresource string, obj, old runtime.Object) bool {
	switch gr {
	case podResource:
		switch subresource {
		case "":
			if op == Update {
				pod, ok1 := obj.(*corev1.Pod)
				oldPod, ok2 := old.(*corev1.Pod)
				if ok1 && ok2 && quotaeval.IsTerminating(pod) != quotaeval.IsTerminating(oldPod) {
					return true
				}
			}
			return op == Create
		case "resize":
			return op == Update
		}
		return false
	case serviceResource:
		return op == Create || op == Update
	case corev1.Resource("events"), schema.GroupResource{Group: "events.k8s.io", Resource: "events"}:
		return false
	}
	// A subresource's create (serviceaccounts/token) is not counted: see
	// above.
	return op == Create && subresource == ""
}

// Validate implements Validator.
func (p *ResourceQuota) Validate(ctx context.Context, a *Attributes) error {
	gr := a.Resource.GroupResource()
	// A Namespace's create is admitted in the namespace it names: upstream
	// leaves it alone as it does every cluster-scoped write.
	if a.Namespace == "" || a.Object == nil || (a.Operation == Create && gr == nsResource) ||
		!quotaHandles(gr, a.Operation, a.Subresource, a.Object, a.OldObject) {
		return nil
	}
	// Every create counts (count/<resource>), so the quotas are read
	// first: most namespaces have none, and then the usage is not needed.
	quotas, err := p.Store.List(ctx, a.Namespace)
	if err != nil {
		return fmt.Errorf("checking resource quotas: %w", err)
	}
	if len(quotas) == 0 && len(p.LimitedResources) == 0 {
		return nil
	}
	sort.Slice(quotas, func(i, j int) bool { return quotas[i].Name < quotas[j].Name })
	w, err := newQuotaWrite(gr, a.Operation, a.Object, a.OldObject, time.Now())
	if err != nil {
		return forbidden(a, err)
	}
	charges, err := w.charges(quotas)
	if err != nil {
		return forbidden(a, err)
	}
	if names, scopes := w.uncoveredLimited(quotas, p.LimitedResources); len(names) > 0 {
		return forbidden(a, fmt.Errorf("insufficient quota to consume: %s", strings.Join(names, ",")))
	} else if len(scopes) > 0 {
		// kube-apiserver answers this with a plain error (a 500 whose
		// message is just this); a 403 here, its message as upstream's.
		msg := fmt.Sprintf("insufficient quota to match these scopes: %v", scopes)
		se := forbidden(a, errors.New(msg))
		se.ErrStatus.Message = msg
		return se
	}
	// As upstream, a status write is charged but never refused.
	enforce := a.Subresource != "status"
	var charged []quotaCharge
	for _, c := range charges {
		delta, err := p.charge(ctx, a, w, c.quota, enforce)
		if err != nil {
			p.refund(ctx, a.Namespace, charged)
			return err
		}
		// A dry run is checked, never written: nothing to give back.
		if len(delta) > 0 {
			charged = append(charged, quotaCharge{quota: c.quota, delta: delta})
		}
	}
	return nil
}

// quotaCharge is what one write adds to one quota's usage.
type quotaCharge struct {
	quota string
	delta corev1.ResourceList
}

// quotaWrite is one write as the quota evaluators see it: the object, and
// on an update the stored one, with their usage.
type quotaWrite struct {
	gr          schema.GroupResource
	obj, old    runtime.Object
	usage, prev corev1.ResourceList
}

func newQuotaWrite(gr schema.GroupResource, op Operation, obj, old runtime.Object, now time.Time) (*quotaWrite, error) {
	w := &quotaWrite{gr: gr, obj: obj, usage: quotaeval.ObjectUsage(gr, obj, now)}
	if op == Update {
		if old == nil {
			return nil, errors.New("unable to get previous usage since prior version of object was not found")
		}
		w.old, w.prev = old, quotaeval.ObjectUsage(gr, old, now)
	}
	return w, nil
}

// quotaCharges is the pure decision of what a write of obj (old: the
// stored object of an update) adds to each of quotas, as upstream's
// CheckRequest (chargeFor for each quota, in order; the first refusal
// wins). Quotas with nothing to charge are left out.
func quotaCharges(quotas []corev1.ResourceQuota, gr schema.GroupResource, op Operation, obj, old runtime.Object, now time.Time) ([]quotaCharge, error) {
	w, err := newQuotaWrite(gr, op, obj, old, now)
	if err != nil {
		return nil, err
	}
	return w.charges(quotas)
}

// charges is quotaCharges of the write.
func (w *quotaWrite) charges(quotas []corev1.ResourceQuota) ([]quotaCharge, error) {
	var out []quotaCharge
	for i := range quotas {
		charge, err := w.chargeFor(&quotas[i])
		if err != nil {
			return nil, err
		}
		if len(charge) > 0 {
			out = append(out, quotaCharge{quota: quotas[i].Name, delta: charge})
		}
	}
	return out, nil
}

// chargeFor is what the write adds to q, as upstream's CheckRequest
// judges one quota by its status: q restricts the names of its
// status.hard that the write's resource matches (quota.MatchingResources);
// it applies when it restricts any and covers obj (its scopes, Covers).
// Then obj must meet q's constraints (quotaConstraints), and every
// restricted name must have a status.used entry, else the write is
// refused: "status unknown for quota: <name>, resources: <restricted>".
// The charge is obj's usage of the status.hard names — on an update, for
// a quota that also covered old, the growth only (each resource's new
// usage less its old, never below zero) — without zeros.
func (w *quotaWrite) chargeFor(q *corev1.ResourceQuota) (corev1.ResourceList, error) {
	restricted := quotaeval.MatchingResources(w.gr, q.Status.Hard)
	if len(restricted) == 0 || !quotaeval.Covers(q, w.gr, w.obj) {
		return nil, nil
	}
	if err := quotaConstraints(q, restricted, w.obj); err != nil {
		return nil, err
	}
	var unknown bool
	for _, n := range restricted {
		if _, ok := q.Status.Used[n]; !ok {
			unknown = true
		}
	}
	if unknown {
		names := make([]string, len(restricted))
		for i, n := range restricted {
			names[i] = string(n)
		}
		return nil, fmt.Errorf("status unknown for quota: %s, resources: %s", q.Name, strings.Join(names, ","))
	}
	delta := w.usage
	if w.prev != nil && quotaeval.Covers(q, w.gr, w.old) {
		delta = growth(w.usage, w.prev)
	}
	charge := corev1.ResourceList{}
	for n, v := range delta {
		if _, limited := q.Status.Hard[n]; limited && v.Sign() != 0 {
			charge[n] = v.DeepCopy()
		}
	}
	return charge, nil
}

// uncoveredLimited is upstream's check of limitedResources, after the
// quotas' own (CheckRequest): when the write adds usage (addsUsage),
// names are the resource names its object consumes that match a limited
// resource of its kind (limitedByDefault: usage above zero, the name
// containing a matchContains string) and that no quota covering the
// object restricts, sorted; scopes are the matchScopes of any limited
// resource (whatever its resource, as upstream) the object is in whose
// scope no quota's scope selector matching the object names.
func (w *quotaWrite) uncoveredLimited(quotas []corev1.ResourceQuota, limited []LimitedResource) (names []string, scopes []corev1.ScopedResourceSelectorRequirement) {
	if len(limited) == 0 || !w.addsUsage(quotas) {
		return nil, nil
	}
	covered := map[corev1.ResourceName]bool{}
	coveredScopes := map[corev1.ResourceQuotaScope]bool{}
	for i := range quotas {
		q := &quotas[i]
		selectors := make([]corev1.ScopedResourceSelectorRequirement, 0, len(q.Spec.Scopes))
		for _, s := range q.Spec.Scopes {
			selectors = append(selectors, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
		}
		if q.Spec.ScopeSelector != nil {
			selectors = append(selectors, q.Spec.ScopeSelector.MatchExpressions...)
		}
		for _, sel := range selectors {
			if quotaeval.MatchesScope(w.gr, w.obj, sel) {
				coveredScopes[sel.ScopeName] = true
			}
		}
		restricted := quotaeval.MatchingResources(w.gr, q.Status.Hard)
		if len(restricted) == 0 || !quotaeval.Covers(q, w.gr, w.obj) {
			continue
		}
		for _, n := range restricted {
			covered[n] = true
		}
	}
	need := map[string]bool{}
	for _, l := range limited {
		for _, sel := range l.MatchScopes {
			if quotaeval.MatchesScope(w.gr, w.obj, sel) && !coveredScopes[sel.ScopeName] {
				scopes = append(scopes, sel)
			}
		}
		if (schema.GroupResource{Group: l.APIGroup, Resource: l.Resource}) != w.gr {
			continue
		}
		for n, v := range w.usage {
			if v.Sign() == 1 && !covered[n] && slices.ContainsFunc(l.MatchContains, func(m string) bool { return strings.Contains(string(n), m) }) {
				need[string(n)] = true
			}
		}
	}
	return slices.Sorted(maps.Keys(need)), scopes
}

// addsUsage tells whether the write adds usage in the sense upstream's
// CheckRequest gives it before checking limitedResources, quota by quota:
// when some quota covers the new object and restricts a name of its
// resource (as chargeFor), the write adds usage if it adds any to one of
// them — on an update the growth to a quota that also covered the stored
// object, the whole usage to one it enters — counting every resource the
// object uses, not only the quota's names; when no quota does, if the
// object as a whole uses more than the stored one (all of its usage on a
// create). So an update that uses no more than before but brings the
// object into a quota's scope adds usage.
func (w *quotaWrite) addsUsage(quotas []corev1.ResourceQuota) bool {
	grown := w.usage
	if w.prev != nil {
		grown = growth(w.usage, w.prev)
	}
	covered := false
	for i := range quotas {
		q := &quotas[i]
		if len(quotaeval.MatchingResources(w.gr, q.Status.Hard)) == 0 || !quotaeval.Covers(q, w.gr, w.obj) {
			continue
		}
		covered = true
		delta := w.usage
		if w.prev != nil && quotaeval.Covers(q, w.gr, w.old) {
			delta = grown
		}
		if nonZero(delta) {
			return true
		}
	}
	return !covered && nonZero(grown)
}

// nonZero tells whether any quantity of l is not zero.
func nonZero(l corev1.ResourceList) bool {
	return slices.ContainsFunc(slices.Collect(maps.Values(l)), func(q resource.Quantity) bool { return q.Sign() != 0 })
}

// growth is usage less prev, resource by resource, never below zero.
func growth(usage, prev corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{}
	for n, v := range usage {
		d := v.DeepCopy()
		if p, ok := prev[n]; ok {
			d.Sub(p)
		}
		if d.Sign() > 0 {
			out[n] = d
		}
	}
	return out
}

// errQuotaGone ends a charge against a quota deleted meanwhile.
var errQuotaGone = errors.New("quota deleted")

// charge adds what the write adds to one quota's status.used, or
// (enforce) refuses the write. The charge is decided again on the current
// quota (chargeFor), as upstream's retry judges a quota that changed
// since it was listed anew; it returns what was charged.
func (p *ResourceQuota) charge(ctx context.Context, a *Attributes, w *quotaWrite, name string, enforce bool) (corev1.ResourceList, error) {
	var refusal error
	var charged corev1.ResourceList
	err := p.Store.Update(ctx, a.Namespace, name, func(q *corev1.ResourceQuota) (*corev1.ResourceQuota, error) {
		refusal, charged = nil, nil
		if q.DeletionTimestamp != nil {
			return nil, errQuotaGone
		}
		delta, err := w.chargeFor(q)
		if err == nil && len(delta) == 0 {
			return nil, errNothingToCharge
		}
		var next *corev1.ResourceQuota
		if err == nil {
			next, err = chargeQuota(q, delta, enforce)
		}
		if err != nil {
			refusal = err
			return nil, err
		}
		if a.DryRun {
			return nil, errDryRunCharged
		}
		charged = delta
		return next, nil
	})
	switch {
	case err == nil:
		return charged, nil
	case errors.Is(err, errDryRunCharged), errors.Is(err, errQuotaGone), errors.Is(err, errNothingToCharge):
		return nil, nil
	case refusal != nil:
		return nil, forbidden(a, refusal)
	}
	return nil, fmt.Errorf("charging quota %s: %w", name, err)
}

var (
	errDryRunCharged   = errors.New("dry run: quota checked, not charged")
	errNothingToCharge = errors.New("quota no longer charged")
)

// refund takes their charges back from quotas charged before a later one
// refused.
func (p *ResourceQuota) refund(ctx context.Context, namespace string, charged []quotaCharge) {
	for _, c := range charged {
		_ = p.Store.Update(ctx, namespace, c.quota, func(q *corev1.ResourceQuota) (*corev1.ResourceQuota, error) {
			next := q.DeepCopy()
			for n, d := range c.delta {
				if u, ok := next.Status.Used[n]; ok {
					u.Sub(d)
					if u.Sign() < 0 {
						u = resource.MustParse("0")
					}
					next.Status.Used[n] = u
				}
			}
			return next, nil
		})
	}
}

// chargeQuota is the pure decision: q with delta (names of its
// status.hard, each with a status.used entry: chargeFor) added to
// status.used, or (enforce) the "exceeded quota" refusal when any would
// then be above status.hard. status.hard is left as the controller wrote
// it.
func chargeQuota(q *corev1.ResourceQuota, delta corev1.ResourceList, enforce bool) (*corev1.ResourceQuota, error) {
	next := q.DeepCopy()
	if next.Status.Used == nil {
		next.Status.Used = corev1.ResourceList{}
	}
	var requested, usedNow, limited []string
	for _, n := range sortedNames(delta) {
		hard, ok := q.Status.Hard[n]
		if !ok {
			continue
		}
		u, d := q.Status.Used[n], delta[n]
		after := u.DeepCopy()
		after.Add(d)
		if enforce && after.Cmp(hard) > 0 {
			requested = append(requested, fmt.Sprintf("%s=%s", n, d.String()))
			usedNow = append(usedNow, fmt.Sprintf("%s=%s", n, u.String()))
			limited = append(limited, fmt.Sprintf("%s=%s", n, hard.String()))
		}
		next.Status.Used[n] = after
	}
	if len(requested) > 0 {
		return nil, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
			strings.Join(requested, ","), strings.Join(usedNow, ","), strings.Join(limited, ","))
	}
	return next, nil
}

// usageOf is what obj of resource gr uses, counted as the quota
// controller counts it (impl/quota).
func usageOf(gr schema.GroupResource, obj runtime.Object) corev1.ResourceList {
	return quotaeval.ObjectUsage(gr, obj, time.Now())
}

// quotaConstraints: a quota restricting a pod's cpu or memory (restricted:
// names of its status.hard) requires every container to say how much it
// requests (or limits) — unless the pod has pod-level resources, as
// upstream's pod evaluator (PodLevelResources being on by default).
func quotaConstraints(q *corev1.ResourceQuota, restricted []corev1.ResourceName, obj runtime.Object) error {
	pod, ok := obj.(*corev1.Pod)
	if !ok || resourcehelper.IsPodLevelResourcesSet(pod) {
		return nil
	}
	type need struct {
		limits bool
		name   corev1.ResourceName
	}
	required := map[corev1.ResourceName]need{
		"cpu": {false, corev1.ResourceCPU}, "requests.cpu": {false, corev1.ResourceCPU},
		"memory": {false, corev1.ResourceMemory}, "requests.memory": {false, corev1.ResourceMemory},
		"limits.cpu": {true, corev1.ResourceCPU}, "limits.memory": {true, corev1.ResourceMemory},
	}
	missing := map[corev1.ResourceName][]string{}
	check := func(c *corev1.Container) {
		for _, n := range restricted {
			r, ok := required[n]
			if !ok {
				continue
			}
			list := c.Resources.Requests
			if r.limits {
				list = c.Resources.Limits
			}
			if _, ok := list[r.name]; !ok {
				missing[n] = append(missing[n], c.Name)
			}
		}
	}
	for i := range pod.Spec.InitContainers {
		check(&pod.Spec.InitContainers[i])
	}
	for i := range pod.Spec.Containers {
		check(&pod.Spec.Containers[i])
	}
	if len(missing) == 0 {
		return nil
	}
	var parts []string
	for _, n := range restricted {
		if cs, ok := missing[n]; ok {
			parts = append(parts, fmt.Sprintf("%s for: %s", n, strings.Join(cs, ",")))
		}
	}
	return fmt.Errorf("failed quota: %s: must specify %s", q.Name, strings.Join(parts, "; "))
}
