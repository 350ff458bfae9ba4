// Package storage defines the object store the API server is built on: a
// revisioned key-value store of API objects, kept in etcd.
//
// Keys passed to Interface are relative to the store's path prefix (by default
// "/registry"): an object lives at "/<resource>/<namespace>/<name>", a
// cluster-scoped one at "/<resource>/<name>". A resourceVersion is the etcd
// modification revision of the write that produced the object (STORE-1).
//
// Implementations: package etcd3 (direct etcd reads and writes) and package
// cacher (a watch cache in front of etcd3 that serves watches and
// resourceVersion="0" lists from memory).
package storage

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
)

// Interface is the storage of one resource.
type Interface interface {
	// Create stores obj at key only if no object is there: an etcd
	// Txn If(ModRevision(key)==0) Then Put (STORE-2). obj must have an empty
	// resourceVersion. out, if not nil, receives the stored object with its
	// new resourceVersion. A live object at key gives ErrCodeKeyExists.
	Create(ctx context.Context, key string, obj, out runtime.Object) error

	// Get reads the object at key into out. opts.ResourceVersion follows the
	// API's rules: "" is a quorum read, "0" may be served from any cache,
	// anything else means "not older than".
	Get(ctx context.Context, key string, opts GetOptions, out runtime.Object) error

	// GetList lists objects under key (recursively when opts.Recursive) that
	// match opts.Predicate into listObj, a *XxxList. The list's
	// resourceVersion is the revision the list was read at; paginated lists
	// (Predicate.Limit, Predicate.Continue) read every page at the revision of
	// the first one.
	GetList(ctx context.Context, key string, opts ListOptions, listObj runtime.Object) error

	// GuaranteedUpdate reads the current object at key (the watch cache
	// starts from its own copy instead, as kube-apiserver's does: a stale
	// copy only fails the compare-and-swap below), calls tryUpdate on a
	// copy of it, and writes the result with a compare-and-swap on the
	// object's modification revision (Txn If(ModRevision(key)==rv) Then Put,
	// STORE-3). When the CAS fails because another write came first, it reads
	// again and calls tryUpdate again. preconditions (uid, resourceVersion)
	// are checked against every object tryUpdate is called on. When the key
	// does not exist, tryUpdate is called with a zero object only if
	// ignoreNotFound; otherwise ErrCodeKeyNotFound. If tryUpdate returns an
	// object equal in bytes to the stored one nothing is written and dest
	// receives the stored object.
	GuaranteedUpdate(ctx context.Context, key string, dest runtime.Object, ignoreNotFound bool,
		preconditions *Preconditions, tryUpdate UpdateFunc) error

	// Delete removes the object at key with a compare-and-swap on the revision
	// it was read at, after preconditions and validateDeletion accept it.
	// out receives the last state of the object.
	Delete(ctx context.Context, key string, out runtime.Object, preconditions *Preconditions,
		validateDeletion ValidateObjectFunc) error

	// Watch streams changes under key (recursively when opts.Recursive)
	// strictly after opts.ResourceVersion ("" or "0": from now, starting with
	// synthetic ADDED events for the current state when "0" or
	// SendInitialEvents). Events are filtered by opts.Predicate: an object that
	// stops matching is a DELETED for this watcher, one that starts matching an
	// ADDED (STORE-6). A compacted resourceVersion gives ErrCodeExpired, either
	// as the returned error or as an ERROR event carrying a 410 Status.
	Watch(ctx context.Context, key string, opts ListOptions) (watch.Interface, error)
}

// ResourceConfig describes one resource to a store factory.
type ResourceConfig struct {
	// GroupResource names the resource in errors.
	GroupResource schema.GroupResource
	// StorageVersion is the group/version objects are encoded as in etcd.
	StorageVersion schema.GroupVersion
	// ResourcePrefix is the first key segment, e.g. "/pods".
	ResourcePrefix string
	// NewFunc and NewListFunc make empty objects (e.g. &v1.Pod{}, &v1.PodList{}).
	NewFunc     func() runtime.Object
	NewListFunc func() runtime.Object
	// GetAttrs gives the labels and selectable fields of an object; the watch
	// cache indexes by it.
	GetAttrs AttrFunc
	// ObjectMetaFieldsOnly says that GetAttrs gives the object's labels and
	// ObjectMetaFields' fields, nothing else: the watch cache then reads
	// them from the object's metadata itself, without the fields map
	// GetAttrs makes for every object it is given.
	ObjectMetaFieldsOnly bool
	// Namespaced is true for namespaced resources.
	Namespaced bool
	// TTL, if positive, is how long an object is kept after its last
	// write (create or update): then it is deleted, and watches see it
	// DELETED (kube-apiserver's --event-ttl for events). 0 keeps objects
	// until they are deleted.
	TTL time.Duration
}

// Factory builds the storage of one resource. DestroyFunc releases what the
// store holds (watch cache goroutines, watches).
type Factory interface {
	New(cfg ResourceConfig) (Interface, DestroyFunc, error)
}

// DestroyFunc releases a store's resources.
type DestroyFunc func()

// GetOptions are the options of Get.
type GetOptions struct {
	// ResourceVersion: "" quorum read, "0" any, else not older than.
	ResourceVersion string
	// IgnoreNotFound makes a missing key leave out zeroed instead of erroring.
	IgnoreNotFound bool
}

// ListOptions are the options of GetList and Watch.
type ListOptions struct {
	// ResourceVersion and ResourceVersionMatch follow the API's list
	// semantics (see package docs of the implementations).
	ResourceVersion      string
	ResourceVersionMatch metav1.ResourceVersionMatch
	// Predicate selects objects and carries limit/continue.
	Predicate SelectionPredicate
	// Recursive lists/watches every key under the given prefix.
	Recursive bool
	// SendInitialEvents (watch only) requests the watch-list protocol:
	// synthetic ADDED events for the state at ResourceVersion, then a BOOKMARK
	// annotated "k8s.io/initial-events-end": "true".
	SendInitialEvents *bool
}

// UpdateFunc computes the new object from the current one. It must not
// modify input in place; it returns the object to store.
type UpdateFunc func(input runtime.Object) (output runtime.Object, err error)

// ValidateObjectFunc checks an object before a destructive write.
type ValidateObjectFunc func(ctx context.Context, obj runtime.Object) error
