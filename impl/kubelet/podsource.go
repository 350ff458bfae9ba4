package kubelet

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"
)

// trimSourcePod is the pod source's informer transform (the kubelet's own
// watch and the PodDispatcher's shared one): a pod loses
// metadata.managedFields, which the kubelet never reads. Everything else
// stays — the kubelet reads nearly all of a pod's spec, and its status
// writes (pods/status) carry the pod's labels and annotations, which the
// API server takes from the request, while managedFields sent to a
// subresource are ignored. It changes the freshly decoded object in place;
// tombstones pass through.
func trimSourcePod(obj any) (any, error) {
	if p, ok := obj.(*v1.Pod); ok {
		p.ManagedFields = nil
	}
	return obj, nil
}

var _ cache.TransformFunc = trimSourcePod
