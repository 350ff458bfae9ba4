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
// the request, while managedFields sent to a subresource are ignored.
//
// prior, if not nil, returns the version of the pod the informer holds
// (nil if none): a new version takes that one's UID and name strings
// (intern.SharePrior), so the maps that components key by a pod's UID or
// name when they first see it hold the same copy as the cache instead of
// one per version. It changes the freshly decoded object in place;
// tombstones pass through.
func sourceTransform(table *intern.Table, prior func(*v1.Pod) *v1.Pod) cache.TransformFunc {
	return func(obj any) (any, error) {
		if p, ok := obj.(*v1.Pod); ok {
			p.ManagedFields = nil
			table.Pod(p)
			if prior != nil {
				if old := prior(p); old != nil {
					intern.SharePrior(p, old)
				}
			}
		}
		return obj, nil
	}
}

// storePrior is a sourceTransform prior reading store, the informer's own.
func storePrior(store cache.Store) func(*v1.Pod) *v1.Pod {
	return func(p *v1.Pod) *v1.Pod {
		obj, ok, err := store.GetByKey(p.Namespace + "/" + p.Name)
		if err != nil || !ok {
			return nil
		}
		old, _ := obj.(*v1.Pod)
		return old
	}
}

// setSourceTransform installs the pod source's transform on inf, which has
// not started yet: strings shared through kubeletTable and with the
// version inf's own store holds.
func setSourceTransform(inf cache.SharedIndexInformer) {
	_ = inf.SetTransform(sourceTransform(kubeletTable, storePrior(inf.GetStore()))) // not started yet: cannot fail
}

// kubeletTable is shared by the pod sources of every kubelet in this
// process (kubeproof up runs many): their pods repeat the same namespaces,
// images and labels.
var kubeletTable = intern.New()
