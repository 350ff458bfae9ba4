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
//   - an emptyDir volume using more than its sizeLimit, whatever its
//     medium, as upstream's emptyDirLimitEviction compares every
//     emptyDir's measured use (a tmpfs sized within the limit never
//     exceeds it; a memory emptyDir left a plain directory can);
//   - the pod's local ephemeral storage (its containers' writable layers
//     and logs, its local ephemeral volumes: localEphemeralVolume, and
//     the kubelet-managed /etc/hosts file of its pod directory)
//     over the pod's ephemeral-storage limit: its containers' limits
//     summed as for scheduling (init containers by their largest),
//     counted as soon as any container sets one — a container without a
//     limit adds nothing to the sum but its usage still counts;
//   - an app container whose logs and writable layer (the layer only
//     when it is not on a dedicated image filesystem) use more than its
//     own ephemeral-storage limit.
//
// Such pods are evicted at once (a 1 s grace period), all of them in the
// same interval, and then no pod is evicted for a threshold that
// interval. They end Failed (reason Evicted) through the same pod worker
// path as node-pressure evictions, and by KUBELET-5 stay Failed. Unlike node-pressure evictions, upstream's records neither a
// DisruptionTarget condition nor event annotations for them.

// localEphemeralVolume reports whether vol's use counts towards the pod's
// local ephemeral storage (the pod's ephemeral-storage limit, the disk
// signals' ranking), as upstream's IsLocalEphemeralVolume (1.37's
// pkg/volume/util): an emptyDir of the default medium (the node's disk),
// a configMap (its plugin wraps such an emptyDir) and a gitRepo volume
// (upstream's plugin reports no use for it; kubeproof's kubelet sets none
// up). Memory-backed volumes (an emptyDir of medium Memory, and secret,
// downwardAPI and projected volumes, whose plugins wrap one: tmpfs on CRI
// nodes), huge pages emptyDirs and hostPath volumes do not count.
func localEphemeralVolume(vol *v1.Volume) bool {
	return vol.GitRepo != nil ||
		(vol.EmptyDir != nil && vol.EmptyDir.Medium == v1.StorageMediumDefault) ||
		vol.ConfigMap != nil
}

// measuredVolumePlugin is the plugin directory (under the pod's volumes
// directory) whose use a provider measures for vol, "" for a volume the
// local storage limits never look at: every emptyDir (its sizeLimit, any
// medium) and configMap. Upstream's stats measure secret, downwardAPI and
// projected volumes too, but no limit counts them; its gitRepo plugin
// measures nothing.
func measuredVolumePlugin(vol *v1.Volume) string {
	switch {
	case vol.EmptyDir != nil:
		return "kubernetes.io~empty-dir"
	case vol.ConfigMap != nil:
		return "kubernetes.io~configmap"
	}
	return ""
}

// LocalStorage is a pod's measured local storage use in bytes.
type LocalStorage struct {
	// Volumes is the measured use of each emptyDir and configMap volume
	// (measuredVolumePlugin), by volume name (a volume missing here is
	// not measured). Which of them count towards the pod's total is the
	// volume's kind (localEphemeralVolume).
	Volumes map[string]int64
	// Rootfs is each container's writable layer, by container name.
	Rootfs map[string]int64
	// Logs is each container's log files, by container name.
	Logs map[string]int64
	// EtcHosts is the kubelet-managed hosts file of the pod (its pod
	// directory's etc-hosts, mounted on its containers' /etc/hosts; 0
	// when there is none, as on simulated nodes).
	EtcHosts int64
}

// total is pod's local ephemeral storage use: every container's writable
// layer and logs, the pod's local ephemeral volumes and its managed hosts
// file, as upstream's pod stats sum its ephemeral storage (calcEphemeralStorage:
// the containers' rootfs and logs, the ephemeral volumes and the
// etc-hosts file), which its podEphemeralStorageLimitEviction compares
// with the pod's limit.
func (s *LocalStorage) total(pod *v1.Pod) int64 {
	sum := s.EtcHosts
	if len(s.Volumes) > 0 {
		for i := range pod.Spec.Volumes {
			if vol := &pod.Spec.Volumes[i]; localEphemeralVolume(vol) {
				sum += s.Volumes[vol.Name]
			}
		}
	}
	for _, b := range s.Rootfs {
		sum += b
	}
	for _, b := range s.Logs {
		sum += b
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
		out = append(out, Eviction{Pod: ps.Pod, Message: msg, GracePeriodSeconds: ImmediateGracePeriodSeconds,
			KillTimeout: KillTimeout(ImmediateGracePeriodSeconds), Limit: signal})
	}
	return out
}

// exceededLimit is the first local storage limit pod's use exceeds, and
// the eviction message for it.
func exceededLimit(pod *v1.Pod, s *LocalStorage, dedicatedImageFs bool) (LimitSignal, string, bool) {
	for i := range pod.Spec.Volumes {
		vol := &pod.Spec.Volumes[i]
		if vol.EmptyDir == nil || vol.EmptyDir.SizeLimit == nil || vol.EmptyDir.SizeLimit.Sign() <= 0 {
			continue
		}
		used, ok := s.Volumes[vol.Name]
		if ok && used > vol.EmptyDir.SizeLimit.Value() {
			return LimitEmptyDir, fmt.Sprintf("Usage of EmptyDir volume %q exceeds the limit %q. ", vol.Name, vol.EmptyDir.SizeLimit.String()), true
		}
	}
	if limit, ok := podEphemeralLimit(pod); ok && s.total(pod) > limit.Value() {
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
