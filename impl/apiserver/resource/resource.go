// Package resource is the contract between the API server's generic REST
// handlers (package apiserver) and the per-kind behaviour of each served
// resource (package registry): how objects are defaulted, validated, prepared
// for create and update, selected by fields, shown as tables, and which
// subresources they have.
//
// The handlers know nothing about any particular kind; everything
// kind-specific is a value of the types below, registered in one place
// (registry.All).
package resource

import (
	"context"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// Resource is one served REST resource, e.g. apps/v1 deployments.
type Resource struct {
	// GroupVersion the resource is served at (also its storage version).
	GroupVersion schema.GroupVersion
	// Name is the plural resource name ("deployments"); SingularName "deployment".
	Name         string
	SingularName string
	// Kind is the object kind ("Deployment"); lists are Kind+"List".
	Kind       string
	Namespaced bool
	ShortNames []string
	// Categories, e.g. "all" for `kubectl get all`.
	Categories []string
	// Verbs served on the main resource, as in discovery
	// (create, delete, deletecollection, get, list, patch, update, watch).
	Verbs []string

	New     func() runtime.Object
	NewList func() runtime.Object

	// Strategy is the per-kind behaviour of the main resource.
	Strategy Strategy
	// Status, if not nil, serves the /status subresource.
	Status StatusStrategy
	// Approval, if not nil, serves the /approval subresource
	// (certificatesigningrequests): updates of the approval conditions,
	// with the same update machinery as /status.
	Approval StatusStrategy
	// EphemeralContainers, if not nil, serves pods' /ephemeralcontainers
	// subresource: updates that take spec.ephemeralContainers only, with
	// the same update machinery as /status.
	EphemeralContainers StatusStrategy
	// Resize, if not nil, serves pods' /resize subresource (in-place
	// resize): updates that take the containers' resources and resize
	// policies only, with the same update machinery as /status.
	Resize StatusStrategy
	// Scale, if not nil, serves the /scale subresource (autoscaling/v1 Scale).
	Scale ScaleAccessor
	// GracefulDelete, if not nil, decides the grace period of deletions (pods).
	GracefulDelete GracefulDeleter
	// ReturnDeletedObject makes a delete that removes the object answer
	// with the object (its resourceVersion the deletion's revision), as
	// kube-apiserver's stores of pods, namespaces, services and service
	// accounts do; the other kinds answer with a success Status naming the
	// object.
	ReturnDeletedObject bool
	// AllowCreateOnUpdate makes an update (PUT) of a missing object create
	// it. Kubernetes allows it for a few kinds only (events, leases, limit
	// ranges, the RBAC kinds); the others answer 404. Server-side apply
	// creates missing objects of every kind.
	AllowCreateOnUpdate bool
	// KeptForEventTTL makes objects go the API server's EventTTL after
	// their last write (kube-apiserver's --event-ttl, for events).
	KeptForEventTTL bool
	// SharedStorage, if not nil, makes this resource a second view of
	// another resource's stored objects (events.k8s.io/v1 events are
	// core/v1 events), converted on the way in and out.
	SharedStorage *SharedStorage
	// ForbidDelete, if not nil, is asked before a DELETE of one object
	// reads it: a non-nil error (a Kubernetes Status error) is the answer,
	// as kube-apiserver's priorityclasses storage refuses to delete the
	// system classes. A deletecollection's items are not asked, as that
	// storage's DeleteCollection goes around its own Delete.
	ForbidDelete func(name string) error
	// Computed makes the resource's objects computed by the API server on
	// each read instead of stored (core/v1 componentstatuses, the health
	// of the control plane's components): the server serves it from a
	// read-only store of its own (package componentstatus), not from
	// storage, and counts no objects of it.
	Computed bool
	// Bootstrap, if not nil, names objects the API server creates when
	// they are missing before it serves, as one of kube-apiserver's
	// post-start hooks.
	Bootstrap *Bootstrap
}

// Bootstrap is objects a resource's storage creates at start (the system
// PriorityClasses): each is read, and created through the create path
// (defaults, admission, validation) when not found; one that exists is
// left as it is, whatever it holds.
type Bootstrap struct {
	// Hook is the kube-apiserver post-start hook doing it, listed by the
	// health endpoints as "poststarthook/<Hook>".
	Hook string
	// Objects returns new copies of the objects to create.
	Objects func() []runtime.Object
}

// SharedStorage is how a resource is served from another resource's
// storage: one key space, two kinds.
type SharedStorage struct {
	// Of is the resource whose objects are stored.
	Of schema.GroupVersionResource
	// ToStorage converts a served object to the stored kind and FromStorage
	// back; both keep all metadata.
	ToStorage, FromStorage func(runtime.Object) (runtime.Object, error)
	// FieldLabel maps a field selector label of the served kind to the
	// stored kind's ("regarding.name" → "involvedObject.name"); labels the
	// kinds share map to themselves.
	FieldLabel func(string) string
}

// GroupVersionResource of r.
func (r *Resource) GroupVersionResource() schema.GroupVersionResource {
	return r.GroupVersion.WithResource(r.Name)
}

// GroupVersionKind of r's objects.
func (r *Resource) GroupVersionKind() schema.GroupVersionKind {
	return r.GroupVersion.WithKind(r.Kind)
}

// Strategy is the per-kind behaviour of a resource's main endpoint.
type Strategy interface {
	// Default fills unset fields with Kubernetes' defaults (as upstream's
	// SetDefaults_* functions do for this kind).
	Default(obj runtime.Object)
	// PrepareForCreate clears what a client may not set on create (status)
	// and sets metadata.generation to 1 for kinds that have a spec.
	PrepareForCreate(ctx context.Context, obj runtime.Object)
	// PrepareForUpdate carries over from old what a client may not change
	// through the main endpoint (status) and bumps metadata.generation when
	// the spec changed.
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	// Validate checks a new object; errors carry field paths.
	Validate(ctx context.Context, obj runtime.Object) field.ErrorList
	// ValidateUpdate checks an update, including immutable fields.
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
	// GetAttrs gives labels and selectable fields (storage.DefaultAttrs plus
	// the kind's own fields).
	GetAttrs(obj runtime.Object) (labels.Set, fields.Set, error)
	// ConvertToTable renders an object or a list of them for kubectl get.
	ConvertToTable(ctx context.Context, obj runtime.Object, opts *metav1.TableOptions) (*metav1.Table, error)
}

// StatusStrategy is the behaviour of a /status subresource: only status
// changes are taken; the rest is carried over from the stored object.
type StatusStrategy interface {
	PrepareForUpdate(ctx context.Context, obj, old runtime.Object)
	ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList
}

// ScaleAccessor reads and writes the replica count behind /scale.
type ScaleAccessor interface {
	// Scale returns the Scale view of obj.
	Scale(obj runtime.Object) (*autoscalingv1.Scale, error)
	// SetReplicas sets spec.replicas of obj (a copy) to replicas.
	SetReplicas(obj runtime.Object, replicas int32) (runtime.Object, error)
}

// GracefulDeleter decides how long a deleted object lingers with a
// deletionTimestamp before it is removed (pods, whose kubelet stops them
// first). The delete of an object not yet being deleted is always
// graceful, as kube-apiserver's pod strategy (CheckGracefulDelete): the
// store marks the object with its period, and removes it at once when the
// period is 0.
type GracefulDeleter interface {
	// GracePeriod returns the grace period for deleting obj with options.
	GracePeriod(obj runtime.Object, options *metav1.DeleteOptions) (seconds int64)
}

// AttrFunc adapts a Strategy's GetAttrs to storage.AttrFunc.
func AttrFunc(s Strategy) storage.AttrFunc {
	return s.GetAttrs
}

// ObjectMetaFieldsOnly reports whether s's GetAttrs gives the object's
// labels and storage.ObjectMetaFields alone (see
// storage.ResourceConfig.ObjectMetaFieldsOnly); a strategy says so with an
// ObjectMetaFieldsOnly method.
func ObjectMetaFieldsOnly(s Strategy) bool {
	o, ok := s.(interface{ ObjectMetaFieldsOnly() bool })
	return ok && o.ObjectMetaFieldsOnly()
}
