package kubelet

import (
	v1 "k8s.io/api/core/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/kubeproof/kubeproof/impl/intern"
)

// sourceTransform returns the pod source's informer transform (the
// kubelet's own watch and the PodDispatcher's shared one). A pod loses
// metadata.managedFields, which the kubelet never reads, and shares its
// repeated values (labels, resources, tolerations, names; see impl/intern)
// with the other pods through table. Everything else stays: the kubelet
// reads nearly all of a pod's spec, and its status writes (pods/status)
// carry the pod's labels and annotations, which the API server takes from
// the request, while managedFields sent to a subresource are ignored. It
// changes the freshly decoded object in place; tombstones pass through.
func sourceTransform(table *intern.Table) cache.TransformFunc {
	return func(obj any) (any, error) {
		if p, ok := obj.(*v1.Pod); ok {
			p.ManagedFields = nil
			table.Pod(p)
		}
		return obj, nil
	}
}

// kubeletTable is shared by the pod sources of every kubelet in this
// process (kubeproof up runs many): their pods repeat the same namespaces,
// images and labels.
var kubeletTable = intern.New()
