package resourcequota

import (
	"slices"
	"strconv"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	quotaeval "github.com/kubeproof/kubeproof/impl/quota"
)

// Observed is what the controller sees of one namespace: its objects by
// resource, the revision each resource's objects were observed at, and
// the time (for pods whose deletion grace period is over).
type Observed struct {
	Objects map[schema.GroupResource][]runtime.Object
	// Revisions holds, for a resource of Objects, a revision its objects
	// are no older than: every change up to it is in them (0 or absent:
	// unknown).
	Revisions map[schema.GroupResource]uint64
	Now       time.Time
}

// Lagging lists, in the order of q's names, the resources whose observed
// objects must not lower q's usage: Usage would put one of their names
// below q's status.used, and they were observed at a revision
// (observed.Revisions) older than q's resourceVersion, so status.used may
// hold admission's charges for objects that the observation has not seen
// yet. Usage that does not go down, or goes down from objects observed at
// q's revision or later, lags nothing. A quota whose resourceVersion is
// not a number (not from this API server: client-go's fake clientset)
// orders nothing and lags nothing.
func Lagging(q *corev1.ResourceQuota, observed Observed) []schema.GroupResource {
	rv, err := strconv.ParseUint(q.ResourceVersion, 10, 64)
	if err != nil {
		return nil
	}
	used := Usage(q, observed)
	var out []schema.GroupResource
	for _, n := range sortedNames(used) {
		gr := trackedResource(n)
		if observed.Revisions[gr] >= rv || slices.Contains(out, gr) {
			continue
		}
		cur, ok := q.Status.Used[n]
		if u := used[n]; ok && u.Cmp(cur) < 0 {
			out = append(out, gr)
		}
	}
	return out
}

var podResource = corev1.Resource("pods")

// Usage is the pure decision of the controller: what the observed objects
// that q covers use of every resource in q's spec.hard whose objects were
// observed (a key of observed.Objects, even with no objects: zero); names
// of resources not observed are left out. It counts as the
// ResourceQuota admission plugin charges a create (status.used is the sum
// of the charges of the objects that exist), except that a pod
// stops using compute resources and "pods" once it is terminal or its
// deletion grace period has passed; its count/pods stays until it is gone.
func Usage(q *corev1.ResourceQuota, observed Observed) corev1.ResourceList {
	used := corev1.ResourceList{}
	for n := range q.Spec.Hard {
		if _, ok := observed.Objects[trackedResource(n)]; ok {
			used[n] = *resource.NewQuantity(0, resource.DecimalSI)
		}
	}
	for _, gr := range Tracked(q) {
		for _, obj := range observed.Objects[gr] {
			if !quotaeval.Covers(q, gr, obj) {
				continue
			}
			for n, v := range quotaeval.ObjectUsage(gr, obj, observed.Now) {
				if u, ok := used[n]; ok {
					u.Add(v)
					used[n] = u
				}
			}
		}
	}
	return used
}

// Tracked lists the resources whose objects q counts, in spec.hard's
// order of names: count/<resource>[.<group>] and the legacy count names
// count their resource; every other name (pods, cpu, requests.*,
// limits.*, …) is a pod's usage.
func Tracked(q *corev1.ResourceQuota) []schema.GroupResource {
	seen := map[schema.GroupResource]bool{}
	var out []schema.GroupResource
	for _, n := range sortedNames(q.Spec.Hard) {
		gr := trackedResource(n)
		if !seen[gr] {
			seen[gr] = true
			out = append(out, gr)
		}
	}
	return out
}

// NextStatus is the status the controller writes for q: hard copied from
// spec.hard, used recomputed by Usage for the observed resources and kept
// as it was (zero if absent) for resources the controller does not
// observe, so it never gives back what only the admission plugin counts.
func NextStatus(q *corev1.ResourceQuota, observed Observed) corev1.ResourceQuotaStatus {
	used := Usage(q, observed)
	for n := range q.Spec.Hard {
		if _, ok := used[n]; ok {
			continue
		}
		if u, ok := q.Status.Used[n]; ok {
			used[n] = u.DeepCopy()
		} else {
			used[n] = *resource.NewQuantity(0, resource.DecimalSI)
		}
	}
	return corev1.ResourceQuotaStatus{Hard: q.Spec.Hard.DeepCopy(), Used: used}
}

func trackedResource(n corev1.ResourceName) schema.GroupResource {
	if gr, ok := quotaeval.CountedResource(n); ok {
		return gr
	}
	return podResource
}
