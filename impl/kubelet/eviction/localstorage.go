package eviction

import (
	"fmt"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// Local storage capacity isolation: besides the node-pressure thresholds,
// every interval the eviction manager evicts the pods whose local storage
// use is over what their spec allows, as upstream's kubelet does with
// LocalStorageCapacityIsolation (on by default):
//
//   - a disk-backed emptyDir volume using more than its sizeLimit
//     (memory-backed ones are tmpfs, sized and charged to the pod's
//     memory; they are not checked here);
//   - the pod's local ephemeral storage (its containers' writable layers
//     and logs and its disk-backed emptyDirs) over the pod's
//     ephemeral-storage limit: its containers' limits summed as for
//     scheduling (init containers by their largest), counted as soon as
//     any container sets one — a container without a limit adds nothing
//     to the sum but its usage still counts;
//   - an app container whose logs and writable layer (the layer only
//     when it is not on a dedicated image filesystem) use more than its
//     own ephemeral-storage limit.
//
// Such pods are evicted at once (a 1 s grace period), all of them in the
// same interval, and then no pod is evicted for a threshold that
// interval. They end Failed (reason Evicted) through the same pod worker
// path as node-pressure evictions, and by KUBELET-5 stay Failed. Unlike node-pressure evictions, upstream's records neither a
// DisruptionTarget condition nor event annotations for them.

// diskBackedEmptyDir reports whether vol is an emptyDir on the node's
// disk: the default medium (upstream's local ephemeral volumes; memory
// and huge pages media are not local storage).
func diskBackedEmptyDir(vol *v1.Volume) bool {
	return vol.EmptyDir != nil && vol.EmptyDir.Medium == v1.StorageMediumDefault
}

// LocalStorage is a pod's measured local storage use in bytes.
type LocalStorage struct {
	// Volumes is the use of each disk-backed emptyDir volume, by volume
	// name (a volume missing here is not measured).
	Volumes map[string]int64
	// Rootfs is each container's writable layer, by container name.
	Rootfs map[string]int64
	// Logs is each container's log files, by container name.
	Logs map[string]int64
}

// total is the pod's local ephemeral storage use: every container's
// writable layer and logs and the emptyDir volumes.
func (s *LocalStorage) total() int64 {
	var sum int64
	for _, m := range []map[string]int64{s.Volumes, s.Rootfs, s.Logs} {
		for _, b := range m {
			sum += b
		}
	}
	return sum
}

// LimitSignal names which local storage limit a pod was evicted for (the
// names upstream's eviction metrics use).
type LimitSignal string

// The local storage limits.
const (
	LimitEmptyDir           LimitSignal = "emptydirfs.limit"
	LimitPodEphemeral       LimitSignal = "ephemeralpodfs.limit"
	LimitContainerEphemeral LimitSignal = "ephemeralcontainerfs.limit"
)

// ImmediateGracePeriodSeconds is the grace period of an eviction for a
// hard threshold or a local storage limit, as upstream's kubelet (its
// "immediate" eviction still gives the containers a second).
const ImmediateGracePeriodSeconds = 1

// LocalStorageEvictions are the pods to evict for going over a local
// storage limit, each with the first limit it exceeds (emptyDir volumes
// in spec order, then the pod's total, then its app containers in spec
// order). Pods without measured storage and critical pods are skipped.
// dedicatedImageFs: the writable layers are on a filesystem of their
// own, and a container's own limit counts only its logs. Pure.
func LocalStorageEvictions(pods []PodStats, dedicatedImageFs bool) []Eviction {
	var out []Eviction
	for _, ps := range pods {
		if ps.Storage == nil || IsCritical(ps.Pod) {
			continue
		}
		signal, msg, ok := exceededLimit(ps.Pod, ps.Storage, dedicatedImageFs)
		if !ok {
			continue
		}
		out = append(out, Eviction{Pod: ps.Pod, Message: msg, GracePeriodSeconds: ImmediateGracePeriodSeconds, Limit: signal})
	}
	return out
}

// exceededLimit is the first local storage limit pod's use exceeds, and
// the eviction message for it.
func exceededLimit(pod *v1.Pod, s *LocalStorage, dedicatedImageFs bool) (LimitSignal, string, bool) {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if !diskBackedEmptyDir(vol) || vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.Sign() <= 0 {
			continue
		}
		used, ok := s.Volumes[vol.Name]
		if ok && used > vol.EmptyDir.SizeLimit.Value() {
			return LimitEmptyDir, fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", vol.Name, vol.EmptyDir.SizeLimit.String()), true
		}
	}
	if limit, ok := podEphemeralLimit(pod); ok && s.total() > limit.Value() {
		return LimitPodEphemeral, fmt.Sprintf("Pod ephemeral local storage usage exceeds the total limit of containers %s. ", limit.String()), true
	}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		limit, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]
		if !ok || limit.IsZero() {
			continue
		}
		used := s.Logs[c.Name]
		if !dedicatedImageFs {
			used += s.Rootfs[c.Name]
		}
		if used > limit.Value() {
			return LimitContainerEphemeral, fmt.Sprintf("Container %s exceeded its local ephemeral storage limit %q. ", c.Name, limit.String()), true
		}
	}
	return "", "", false
}

// podEphemeralLimit is the pod's ephemeral-storage limit as the
// scheduler sums limits: app containers and restartable (sidecar) init
// containers add up; a regular init container runs alone with the
// sidecars started before it, and the pod's limit is the largest of
// those and the sum. ok is false when no container sets the limit.
func podEphemeralLimit(pod *v1.Pod) (resource.Quantity, bool) {
	found := false
	get := func(c *v1.Container) resource.Quantity {
		q, ok := c.Resources.Limits[v1.ResourceEphemeralStorage]
		if !ok {
			return resource.Quantity{}
		}
		found = true
		return q.DeepCopy()
	}
	larger := func(a, b resource.Quantity) resource.Quantity {
		if b.Cmp(a) > 0 {
			return b
		}
		return a
	}
	var sidecars, initMax resource.Quantity
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		q := get(c)
		if c.RestartPolicy != nil && *c.RestartPolicy == v1.ContainerRestartPolicyAlways {
			sidecars.Add(q)
			initMax = larger(initMax, sidecars.DeepCopy())
		} else {
			q.Add(sidecars)
			initMax = larger(initMax, q)
		}
	}
	sum := sidecars.DeepCopy()
	for i := range pod.Spec.Containers {
		sum.Add(get(&pod.Spec.Containers[i]))
	}
	return larger(sum, initMax), found
}
