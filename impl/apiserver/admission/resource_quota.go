package admission

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
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
	// Usage recounts the namespace's current usage of the named resources
	// by the objects a quota with the given scopes covers (for a quota
	// whose status no one has computed yet).
	Usage(ctx context.Context, namespace string, q *corev1.ResourceQuota) (corev1.ResourceList, error)
}

// ResourceQuota keeps every namespace within its ResourceQuotas. Before a
// write that upstream's quota evaluators evaluate (quotaHandles) is
// admitted, the usage it adds is added to status.used of every quota that
// covers the new object — object counts, a pod's requests and limits, a
// service's load balancer and node ports; on an update, only what the new
// object uses beyond the stored one, for quotas that also covered the
// stored one (quotaCharges) — with a compare-and-swap on the quota
// object, retried on conflict: a write that would take any quota over
// status.hard is refused, so concurrent writes can never exceed a quota.
// status.hard follows spec.hard; a quota whose status was never computed
// is first recounted.
//
// Usage is given back when objects are deleted, pods finish or an update
// lowers usage by the resource quota controller
// (impl/controller/resourcequota), which recounts status.used as
// Kubernetes' does.
type ResourceQuota struct {
	Store QuotaStore
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
	return &ResourceQuota{Store: &storeQuotas{quotas: q, cache: c, stores: d.stores}}, nil
}

var serviceResource = corev1.Resource("services")

// quotaHandles tells which writes upstream's quota admission evaluates,
// by the Handles of the evaluator for the resource: pods on create, on an
// update that moves the pod into or out of the Terminating scope
// (activeDeadlineSeconds set or removed; obj and old are the new and
// stored pod) and on an update of their resize subresource (in-place
// resize; this API does not serve it yet); services on create and
// update, any subresource (a type change changes their usage); events
// never (ignored by quota); every other resource, counted by object, on
// create.
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
	return op == Create
}

// Validate implements Validator.
func (p *ResourceQuota) Validate(ctx context.Context, a *Attributes) error {
	gr := a.Resource.GroupResource()
	if a.Namespace == "" || a.Object == nil || !quotaHandles(gr, a.Operation, a.Subresource, a.Object, a.OldObject) {
		return nil
	}
	// Every create counts (count/<resource>), so the quotas are read
	// first: most namespaces have none, and then the usage is not needed.
	quotas, err := p.Store.List(ctx, a.Namespace)
	if err != nil {
		return fmt.Errorf("checking resource quotas: %w", err)
	}
	if len(quotas) == 0 {
		return nil
	}
	sort.Slice(quotas, func(i, j int) bool { return quotas[i].Name < quotas[j].Name })
	charges, err := quotaCharges(quotas, gr, a.Operation, a.Object, a.OldObject, time.Now())
	if err != nil {
		return forbidden(a, err)
	}
	// As upstream, a status write is charged but never refused.
	enforce := a.Subresource != "status"
	var charged []quotaCharge
	for _, c := range charges {
		if err := p.charge(ctx, a, c.quota, c.delta, enforce); err != nil {
			p.refund(ctx, a.Namespace, charged)
			return err
		}
		// A dry run is checked, never written: nothing to give back.
		if !a.DryRun {
			charged = append(charged, c)
		}
	}
	return nil
}

// quotaCharge is what one write adds to one quota's usage.
type quotaCharge struct {
	quota string
	delta corev1.ResourceList
}

// quotaCharges is the pure decision of what a write of obj (old: the
// stored object of an update) adds to each of quotas, as upstream's
// CheckRequest: every quota that covers obj must accept obj's constraints
// (quotaConstraints) and is charged obj's usage of what it limits; on an update, a quota that also covered old is
// charged only the growth, each resource's new usage less its old (never
// below zero), and a quota that did not is charged all of it. Resources a
// write does not add to (zero) are left out, as are quotas with nothing
// left to charge.
func quotaCharges(quotas []corev1.ResourceQuota, gr schema.GroupResource, op Operation, obj, old runtime.Object, now time.Time) ([]quotaCharge, error) {
	usage := quotaeval.ObjectUsage(gr, obj, now)
	var prev corev1.ResourceList
	if op == Update {
		if old == nil {
			return nil, errors.New("unable to get previous usage since prior version of object was not found")
		}
		prev = quotaeval.ObjectUsage(gr, old, now)
	}
	var out []quotaCharge
	for i := range quotas {
		q := &quotas[i]
		if !quotaeval.Covers(q, gr, obj) {
			continue
		}
		if err := quotaConstraints(q, obj); err != nil {
			return nil, err
		}
		delta := usage
		if prev != nil && quotaeval.Covers(q, gr, old) {
			delta = growth(usage, prev)
		}
		charge := corev1.ResourceList{}
		for n, v := range delta {
			if _, limited := q.Spec.Hard[n]; limited && v.Sign() != 0 {
				charge[n] = v.DeepCopy()
			}
		}
		if len(charge) > 0 {
			out = append(out, quotaCharge{quota: q.Name, delta: charge})
		}
	}
	return out, nil
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

// charge adds delta to one quota's status.used, or (enforce) refuses the
// write. A quota whose status was never computed is recounted first.
func (p *ResourceQuota) charge(ctx context.Context, a *Attributes, name string, delta corev1.ResourceList, enforce bool) error {
	var recount corev1.ResourceList
	recounted := false
	for {
		var refusal error
		err := p.Store.Update(ctx, a.Namespace, name, func(q *corev1.ResourceQuota) (*corev1.ResourceQuota, error) {
			refusal = nil
			if q.DeletionTimestamp != nil {
				return nil, errQuotaGone
			}
			if !recounted && needsRecount(q) {
				return nil, errNeedsRecount
			}
			next, err := chargeQuota(q, delta, recount, enforce)
			if err != nil {
				refusal = err
				return nil, err
			}
			if a.DryRun {
				return nil, errDryRunCharged
			}
			return next, nil
		})
		switch {
		case err == nil, errors.Is(err, errDryRunCharged), errors.Is(err, errQuotaGone):
			return nil
		case refusal != nil:
			return forbidden(a, refusal)
		case errors.Is(err, errNeedsRecount) && !recounted:
			if recount, err = p.recount(ctx, a.Namespace, name); err != nil {
				return err
			}
			recounted = true
			continue
		}
		return fmt.Errorf("charging quota %s: %w", name, err)
	}
}

func (p *ResourceQuota) recount(ctx context.Context, namespace, name string) (corev1.ResourceList, error) {
	quotas, err := p.Store.List(ctx, namespace)
	if err != nil {
		return nil, fmt.Errorf("recounting quota %s: %w", name, err)
	}
	for i := range quotas {
		if quotas[i].Name == name {
			used, err := p.Store.Usage(ctx, namespace, &quotas[i])
			if err != nil {
				return nil, fmt.Errorf("recounting quota %s: %w", name, err)
			}
			return used, nil
		}
	}
	return corev1.ResourceList{}, nil
}

var (
	errNeedsRecount  = errors.New("quota status not computed")
	errDryRunCharged = errors.New("dry run: quota checked, not charged")
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

// needsRecount: status.hard does not follow spec.hard, or a hard resource
// has no usage yet.
func needsRecount(q *corev1.ResourceQuota) bool {
	if !apiequality.Semantic.DeepEqual(q.Status.Hard, q.Spec.Hard) {
		return true
	}
	for n := range q.Spec.Hard {
		if _, ok := q.Status.Used[n]; !ok {
			return true
		}
	}
	return false
}

// chargeQuota is the pure decision: q with delta added to status.used, or
// (enforce) the "exceeded quota" refusal. recount, when not nil, is the
// counted usage: it fills resources q has no usage for yet and raises
// usage that is below it, but never lowers what was charged.
func chargeQuota(q *corev1.ResourceQuota, delta, recount corev1.ResourceList, enforce bool) (*corev1.ResourceQuota, error) {
	next := q.DeepCopy()
	next.Status.Hard = q.Spec.Hard.DeepCopy()
	used := corev1.ResourceList{}
	for n := range next.Status.Hard {
		u, ok := q.Status.Used[n]
		r, counted := recount[n]
		switch {
		case ok && counted && r.Cmp(u) > 0:
			// Never below what was charged: charges of creates not yet
			// stored are not in a recount.
			used[n] = r.DeepCopy()
		case ok:
			used[n] = u.DeepCopy()
		case counted:
			used[n] = r.DeepCopy()
		default:
			used[n] = resource.MustParse("0")
		}
	}
	var requested, usedNow, limited []string
	for _, n := range sortedNames(delta) {
		hard, ok := next.Status.Hard[n]
		if !ok {
			continue
		}
		u, d := used[n], delta[n]
		after := u.DeepCopy()
		after.Add(d)
		if enforce && after.Cmp(hard) > 0 {
			requested = append(requested, fmt.Sprintf("%s=%s", n, d.String()))
			usedNow = append(usedNow, fmt.Sprintf("%s=%s", n, u.String()))
			limited = append(limited, fmt.Sprintf("%s=%s", n, hard.String()))
		}
		used[n] = after
	}
	if len(requested) > 0 {
		return nil, fmt.Errorf("exceeded quota: %s, requested: %s, used: %s, limited: %s", q.Name,
			strings.Join(requested, ","), strings.Join(usedNow, ","), strings.Join(limited, ","))
	}
	next.Status.Used = used
	return next, nil
}

// usageOf is what obj of resource gr uses, counted as the quota
// controller counts it (impl/quota).
func usageOf(gr schema.GroupResource, obj runtime.Object) corev1.ResourceList {
	return quotaeval.ObjectUsage(gr, obj, time.Now())
}

// quotaConstraints: a quota on a pod's cpu or memory requires every
// container to say how much it requests (or limits) — unless the pod has
// pod-level resources, as upstream's pod evaluator (PodLevelResources being
// on by default).
func quotaConstraints(q *corev1.ResourceQuota, obj runtime.Object) error {
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
		for n := range q.Spec.Hard {
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
	for _, n := range sortedNames(q.Spec.Hard) {
		if cs, ok := missing[n]; ok {
			parts = append(parts, fmt.Sprintf("%s for: %s", n, strings.Join(cs, ",")))
		}
	}
	return fmt.Errorf("failed quota: %s: must specify %s", q.Name, strings.Join(parts, "; "))
}
