package admission

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// StoreGetter gives plugins the API server's own stores and their key
// layout (*apiserver.Server implements it).
type StoreGetter interface {
	Store(gr schema.GroupResource) (storage.Interface, bool)
	ObjectKey(gr schema.GroupResource, namespace, name string) string
	ListKey(gr schema.GroupResource, namespace string) string
}

// objectStore reads and writes one resource through a StoreGetter.
type objectStore struct {
	gr    schema.GroupResource
	store storage.Interface
	keys  StoreGetter
}

func storeFor(sg StoreGetter, gr schema.GroupResource) (objectStore, error) {
	if sg == nil {
		return objectStore{}, fmt.Errorf("admission: no stores given, %s needed", gr)
	}
	s, ok := sg.Store(gr)
	if !ok {
		return objectStore{}, fmt.Errorf("admission: resource %s is not served", gr)
	}
	return objectStore{gr: gr, store: s, keys: sg}, nil
}

func (s objectStore) key(namespace, name string) string {
	return s.keys.ObjectKey(s.gr, namespace, name)
}

// listKey is the prefix of a namespace's objects, or of all of them.
func (s objectStore) listKey(namespace string) string {
	return s.keys.ListKey(s.gr, namespace)
}

// get reads one object; fresh asks for a quorum read, otherwise a cached
// state is good enough. A missing object is a NotFound API error.
func (s objectStore) get(ctx context.Context, namespace, name string, fresh bool, out runtime.Object) error {
	rv := "0"
	if fresh {
		rv = ""
	}
	if err := s.store.Get(ctx, s.key(namespace, name), storage.GetOptions{ResourceVersion: rv}, out); err != nil {
		if storage.IsNotFound(err) {
			return apierrors.NewNotFound(s.gr, name)
		}
		return fmt.Errorf("reading %s %s/%s: %w", s.gr, namespace, name, err)
	}
	return nil
}

// view hands fn the object a cached read (resourceVersion "0") finds
// without copying it when the store is the watch cache: fn must not change
// it, and what it keeps of it is shared with every other reader. Other
// stores read into a newOut object. It is get for the plugins' reads that
// only look at a few fields (a copy of a pod is ~5 KB per call).
func (s objectStore) view(ctx context.Context, namespace, name string, newOut func() runtime.Object, fn func(runtime.Object)) error {
	v, ok := s.store.(viewer)
	if !ok {
		out := newOut()
		if err := s.get(ctx, namespace, name, false, out); err != nil {
			return err
		}
		fn(out)
		return nil
	}
	if err := v.View(ctx, s.key(namespace, name), storage.GetOptions{ResourceVersion: "0"}, newOut, fn); err != nil {
		if storage.IsNotFound(err) {
			return apierrors.NewNotFound(s.gr, name)
		}
		return fmt.Errorf("reading %s %s/%s: %w", s.gr, namespace, name, err)
	}
	return nil
}

// viewer is a store that hands a read object over without copying it
// (the watch cache, cacher.Cacher.View).
type viewer interface {
	View(ctx context.Context, key string, opts storage.GetOptions, newOut func() runtime.Object, view func(runtime.Object)) error
}

// list reads every object of a namespace ("" for all) into listObj.
func (s objectStore) list(ctx context.Context, namespace string, fresh bool, listObj runtime.Object) error {
	rv := "0"
	if fresh {
		rv = ""
	}
	opts := storage.ListOptions{ResourceVersion: rv, Recursive: true, Predicate: storage.Everything()}
	if err := s.store.GetList(ctx, s.listKey(namespace), opts, listObj); err != nil {
		return fmt.Errorf("listing %s in %q: %w", s.gr, namespace, err)
	}
	return nil
}

// The resources plugins read and write.
var (
	podResource           = corev1.Resource("pods")
	nsResource            = corev1.Resource("namespaces")
	nodeResource          = corev1.Resource("nodes")
	saResource            = corev1.Resource("serviceaccounts")
	limitRangeResource    = corev1.Resource("limitranges")
	quotaResource         = corev1.Resource("resourcequotas")
	priorityClassResource = schema.GroupResource{Group: "scheduling.k8s.io", Resource: "priorityclasses"}
	runtimeClassResource  = schema.GroupResource{Group: "node.k8s.io", Resource: "runtimeclasses"}
)

// podOf returns the pod of a write to the pods resource itself (not a
// subresource), or nil.
func podOf(a *Attributes) *corev1.Pod {
	if a.Resource.GroupResource() != podResource || a.Subresource != "" {
		return nil
	}
	p, _ := a.Object.(*corev1.Pod)
	return p
}

func notFound(gr schema.GroupResource, name string) error {
	return apierrors.NewNotFound(gr, name)
}
