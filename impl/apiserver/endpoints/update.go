package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metavalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/fieldmanager"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// mode selects which endpoint an update goes through.
type mode int

const (
	modeMain                mode = iota // the resource itself: status is carried over
	modeStatus                          // /status: only status is taken
	modeScale                           // /scale: only spec.replicas is taken
	modeFinalize                        // namespaces/<n>/finalize: only spec.finalizers
	modeEphemeralContainers             // pods/<n>/ephemeralcontainers: only spec.ephemeralContainers
	modeResize                          // pods/<n>/resize: only the containers' resources and resize policies
)

var scaleGVK = autoscalingv1.SchemeGroupVersion.WithKind("Scale")

// UnconditionalUpdater is optionally implemented by a Strategy: false makes
// an update without metadata.resourceVersion a 422 (default true, as for
// almost every built-in kind).
type UnconditionalUpdater interface {
	AllowUnconditionalUpdate() bool
}

func (h *Handler) allowUnconditionalUpdate() bool {
	if u, ok := h.res.Strategy.(UnconditionalUpdater); ok {
		return u.AllowUnconditionalUpdate()
	}
	return true
}

// errDeleteDuringUpdate ends a GuaranteedUpdate whose result is an object
// marked for deletion with no finalizers left: it is deleted instead.
var errDeleteDuringUpdate = errors.New("object has no finalizers left and is being deleted")

// transformFunc computes the requested object from the stored one; it must
// not modify old.
type transformFunc func(old runtime.Object) (runtime.Object, error)

func (h *Handler) getSubresource(w http.ResponseWriter, r *http.Request, info *request.Info, m mode) error {
	target, err := h.opts.Codecs.Negotiate(r, nil, false)
	if err != nil {
		return err
	}
	key, err := h.objectKey(info.Namespace, info.Name)
	if err != nil {
		return err
	}
	out := h.res.New()
	if err := h.store.Get(r.Context(), key, storage.GetOptions{ResourceVersion: r.URL.Query().Get("resourceVersion")}, out); err != nil {
		return err
	}
	done := transformTimer(target)
	obj, err := h.subresourceView(m, out)
	done()
	if err != nil {
		return err
	}
	writeResponse(w, r, target, http.StatusOK, obj)
	return nil
}

// subresourceView is what a subresource endpoint returns for a stored
// object: the Scale for /scale, else the object.
func (h *Handler) subresourceView(m mode, obj runtime.Object) (runtime.Object, error) {
	if m == modeScale {
		s, err := h.res.Scale.Scale(obj)
		if err != nil {
			return nil, err
		}
		s.SetGroupVersionKind(scaleGVK)
		return s, nil
	}
	if err := h.opts.Codecs.SetKind(obj, h.res.GroupVersion); err != nil {
		return nil, err
	}
	return obj, nil
}

func (h *Handler) update(w http.ResponseWriter, r *http.Request, info *request.Info, m mode) error {
	wo, target, body, err := h.readWrite(w, r, "UpdateOptions")
	if err != nil {
		return err
	}
	params, err := parseManagerParams(r, "UpdateOptions", "")
	if err != nil {
		return err
	}
	var transform transformFunc
	switch m {
	case modeScale:
		obj, warns, err := h.decode(r, body, scaleGVK, &autoscalingv1.Scale{}, wo.fieldValidation)
		if err != nil {
			return err
		}
		audit.LogRequestObject(r.Context(), accessor(obj), h.opts.Codecs.RequestObjectJSON(obj, scaleGVK.GroupVersion(), nil))
		recordWarnings(r, warns)
		scale := obj.(*autoscalingv1.Scale)
		transform = func(old runtime.Object) (runtime.Object, error) { return h.applyScale(old, scale, true) }
	case modeFinalize:
		obj, warns, err := h.decode(r, body, h.gvk, h.res.New(), wo.fieldValidation)
		if err != nil {
			return err
		}
		audit.LogRequestObject(r.Context(), accessor(obj), h.opts.Codecs.RequestObjectJSON(obj, h.gvk.GroupVersion(), h.res.Strategy.Default))
		recordWarnings(r, warns)
		ns, ok := obj.(*corev1.Namespace)
		if !ok {
			return apierrors.NewBadRequest("not a Namespace")
		}
		transform = func(old runtime.Object) (runtime.Object, error) {
			cur, ok := old.(*corev1.Namespace)
			if !ok {
				return nil, fmt.Errorf("stored object is %T, not a Namespace", old)
			}
			out := cur.DeepCopy()
			if ns.Name != cur.Name {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", ns.Name, cur.Name))
			}
			if ns.ResourceVersion != "" && ns.ResourceVersion != cur.ResourceVersion {
				return nil, apierrors.NewConflict(h.gr, cur.Name, errors.New(optimisticLockErrorMsg))
			}
			out.Spec.Finalizers = ns.Spec.Finalizers
			return out, nil
		}
	default:
		obj, warns, err := h.decode(r, body, h.gvk, h.res.New(), wo.fieldValidation)
		if err != nil {
			return err
		}
		audit.LogRequestObject(r.Context(), accessor(obj), h.opts.Codecs.RequestObjectJSON(obj, h.gvk.GroupVersion(), h.res.Strategy.Default))
		recordWarnings(r, warns)
		if name := accessor(obj).GetName(); name != info.Name {
			return apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", name, info.Name))
		}
		transform = firstThenDecoded(obj, func() (runtime.Object, error) {
			again, _, err := h.decode(r, body, h.gvk, h.res.New(), wo.fieldValidation)
			return again, err
		})
	}
	if transform, err = h.tracked(m, fieldmanager.ManagerName(params.fieldManager, r.UserAgent()), transform); err != nil {
		return err
	}
	createIfMissing := m == modeMain && h.res.AllowCreateOnUpdate
	out, created, err := h.updateObject(r.Context(), info, m, transform, wo.admission, createIfMissing)
	if err != nil {
		return err
	}
	done := transformTimer(target)
	resp, err := h.subresourceView(m, out)
	done()
	if err != nil {
		return err
	}
	writeResponse(w, r, target, writeCode(created), resp)
	return nil
}

// firstThenDecoded is the transform of a PUT: the first attempt of the
// update takes the request's decoded object itself, and any later one (the
// stored object changed in between; an attempt changes the object it is
// given) a fresh decode of the same body, instead of every attempt taking
// a deep copy.
func firstThenDecoded(obj runtime.Object, decode func() (runtime.Object, error)) transformFunc {
	used := false
	return func(runtime.Object) (runtime.Object, error) {
		if !used {
			used = true
			return obj, nil
		}
		return decode()
	}
}

// writeCode is the status of a successful update or patch: 201 when it
// created the object.
func writeCode(created bool) int {
	if created {
		return http.StatusCreated
	}
	return http.StatusOK
}

// applyScale sets the replicas a Scale asks for on a copy of old, in
// kube-apiserver's order: a PUT's Scale uid is a storage precondition
// checked first (uidPreconditionFailed); then the replicas are validated;
// then a patched (or applied) Scale's uid must still be the object's (a
// 409 on <resource>/scale, as its scaleUpdatedObjectInfo); last the
// resourceVersion.
func (h *Handler) applyScale(old runtime.Object, scale *autoscalingv1.Scale, put bool) (runtime.Object, error) {
	om := accessor(old)
	if scale.Name != om.GetName() {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", scale.Name, om.GetName()))
	}
	if put && scale.UID != "" && scale.UID != om.GetUID() {
		return nil, h.uidPreconditionFailed(om, scale.UID)
	}
	if scale.Spec.Replicas < 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: "autoscaling", Kind: "Scale"}, scale.Name, field.ErrorList{
			field.Invalid(field.NewPath("spec", "replicas"), scale.Spec.Replicas, "must be greater than or equal to 0")})
	}
	if scale.UID != "" && scale.UID != om.GetUID() {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: h.gr.Group, Resource: h.gr.Resource + "/scale"}, om.GetName(),
			fmt.Errorf("Precondition failed: UID in precondition: %v, UID in object meta: %v", scale.UID, om.GetUID()))
	}
	if scale.ResourceVersion != "" && scale.ResourceVersion != om.GetResourceVersion() {
		return nil, apierrors.NewConflict(h.gr, om.GetName(), errors.New(optimisticLockErrorMsg))
	}
	return h.res.Scale.SetReplicas(old.DeepCopyObject(), scale.Spec.Replicas)
}

// uidPreconditionFailed is kube-apiserver's answer to a PUT whose uid is
// not the stored object's: its storage checks the uid precondition before
// anything else of the update and fails with an invalid-object storage
// error (code 4, resourceVersion 0) on the object's etcd key, which the
// registry answers as a 409 Conflict.
func (h *Handler) uidPreconditionFailed(om metav1.Object, uid types.UID) error {
	prefix := storage.NormalizePrefix(h.opts.StoragePathPrefix)
	// The stored object's name and namespace are valid: no error here.
	key, _ := h.objectKey(om.GetNamespace(), om.GetName())
	return apierrors.NewConflict(h.gr, om.GetName(), fmt.Errorf(
		"StorageError: invalid object, Code: 4, Key: %s%s, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: UID in precondition: %v, UID in object meta: %v",
		prefix, key, uid, om.GetUID()))
}

// createAttempts bounds how often a write that creates a missing object
// (createIfMissing) goes back to updating because another client created
// the object first.
const createAttempts = 3

// updateObject runs an update through the stored object's compare-and-swap
// loop (STORE-3): transform, then the update checks, admission and
// validation on every attempt. An update that leaves a deleted object with
// no finalizers removes it. A dry run (opts, the request's options, say
// so; admission gets them) runs everything but the write. When the
// object does not exist and createIfMissing, transform's result on an
// empty object is created instead (created is then true).
func (h *Handler) updateObject(ctx context.Context, info *request.Info, m mode, transform transformFunc, opts admission.RequestOptions, createIfMissing bool) (out runtime.Object, created bool, err error) {
	for attempt := 1; ; attempt++ {
		out, err = h.updateExisting(ctx, info, m, transform, opts)
		if !createIfMissing || !storage.IsNotFound(err) {
			return out, false, toStatus(err, VerbUpdate, h.gr, info.Name)
		}
		obj, err := transform(h.res.New())
		if err != nil {
			return nil, false, err
		}
		if nm := accessor(obj).GetName(); nm != info.Name {
			return nil, false, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", nm, info.Name))
		}
		accessor(obj).SetResourceVersion("")
		out, err = h.createTracked(ctx, info, obj, opts)
		if apierrors.IsAlreadyExists(err) && attempt < createAttempts {
			continue // created meanwhile: update it
		}
		return out, err == nil, err
	}
}

// toStatus is ToStatusError, keeping nil nil.
func toStatus(err error, verb string, gr schema.GroupResource, name string) error {
	if err == nil {
		return nil
	}
	return ToStatusError(err, verb, gr, name)
}

// updateExisting is updateObject for an object that exists; a missing one
// is storage's not-found error.
func (h *Handler) updateExisting(ctx context.Context, info *request.Info, m mode, transform transformFunc, opts admission.RequestOptions) (runtime.Object, error) {
	dryRun := len(opts.DryRun) > 0
	key, err := h.objectKey(info.Namespace, info.Name)
	if err != nil {
		return nil, err
	}
	if m == modeMain {
		var finish func()
		ctx, finish = h.beginWrite(ctx, dryRun)
		defer finish()
	}
	var toDelete runtime.Object
	var deleteRV string
	var deleteUID types.UID
	try := func(old runtime.Object) (runtime.Object, error) {
		obj, err := transform(old)
		if err != nil {
			return nil, err
		}
		if obj, err = h.prepareUpdate(ctx, info, m, obj, old, opts); err != nil {
			return nil, err
		}
		if h.shouldDeleteDuringUpdate(obj, old) {
			toDelete = obj
			deleteRV = accessor(old).GetResourceVersion()
			deleteUID = accessor(old).GetUID()
			return nil, errDeleteDuringUpdate
		}
		return obj, nil
	}
	if dryRun {
		cur := h.res.New()
		if err := h.store.Get(ctx, key, storage.GetOptions{}, cur); err != nil {
			return nil, err
		}
		obj, err := try(cur)
		if errors.Is(err, errDeleteDuringUpdate) {
			return toDelete, nil
		}
		if err != nil {
			return nil, err
		}
		return h.dryRunUpdate(ctx, key, cur, obj)
	}
	out := h.res.New()
	err = h.store.GuaranteedUpdate(ctx, key, out, false, nil, try)
	if errors.Is(err, errDeleteDuringUpdate) {
		pre := &storage.Preconditions{UID: &deleteUID, ResourceVersion: &deleteRV}
		if err := h.store.Delete(ctx, key, h.res.New(), pre, nil); err != nil && !storage.IsNotFound(err) {
			return nil, ToStatusError(err, VerbDelete, h.gr, info.Name)
		}
		return toDelete, nil
	}
	if err != nil {
		return nil, err
	}
	return out, nil
}

// prepareUpdate is kube-apiserver's BeforeUpdate plus admission: checks
// identity and preconditions, defaults, carries over what a client cannot
// change, lets the store fill what depends on its configuration
// (FieldInitializer), validates. Admission is given the request's options
// opts.
func (h *Handler) prepareUpdate(ctx context.Context, info *request.Info, m mode, obj, old runtime.Object, opts admission.RequestOptions) (runtime.Object, error) {
	if m != modeFinalize {
		// kube-apiserver defaults objects as it decodes them from storage,
		// so a default that applies only after admission changed the
		// object (a pod's requests copied from the limits LimitRanger added)
		// is on the old object too and does not read as a change. The
		// stored object may be shared (watch cache): default a copy.
		old = old.DeepCopyObject()
		h.res.Strategy.Default(old)
	}
	om, nm := accessor(old), accessor(obj)
	name := om.GetName()
	if nm.GetName() != name {
		return nil, apierrors.NewBadRequest(fmt.Sprintf("the name of the object (%s) does not match the name on the URL (%s)", nm.GetName(), name))
	}
	if h.res.Namespaced {
		switch nm.GetNamespace() {
		case "":
			nm.SetNamespace(om.GetNamespace())
		case om.GetNamespace():
		default:
			return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	} else {
		nm.SetNamespace("")
	}
	// A PUT's uid is a precondition (kube-apiserver's UpdatedObjectInfo
	// holds the request's object), checked by its storage before the
	// resourceVersion; a patch has none there, so another uid in its
	// result is the immutable-field 422 of the metadata validation below.
	if uid := nm.GetUID(); uid != "" && uid != om.GetUID() && info.Verb != "patch" {
		return nil, h.uidPreconditionFailed(om, uid)
	}
	if rv := nm.GetResourceVersion(); rv != "" {
		if rv != om.GetResourceVersion() {
			return nil, apierrors.NewConflict(h.gr, name, errors.New(optimisticLockErrorMsg))
		}
	} else if m == modeMain && !h.allowUnconditionalUpdate() {
		// As kube-apiserver's generic store: the resource stands where the
		// kind would, and the missing version is the number 0.
		qualified := schema.GroupKind{Group: h.gr.Group, Kind: h.gr.Resource}
		return nil, apierrors.NewInvalid(qualified, name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "resourceVersion"), uint64(0), "must be specified for an update")})
	} else {
		nm.SetResourceVersion(om.GetResourceVersion())
	}
	if m != modeFinalize {
		h.res.Strategy.Default(obj)
	}
	ns := om.GetNamespace()
	if h.isNamespace {
		// A Namespace's update (status and finalize too) is admitted in
		// the namespace it names, as kube-apiserver's request info makes
		// /namespaces/{name}'s namespace its name.
		ns = name
	}
	if err := h.opts.Admission.Admit(ctx, h.adm(ctx, admission.Update, info, ns, name, obj, old, opts)); err != nil {
		return nil, err
	}
	if c := h.opts.WriteCheck; c != nil && m == modeMain {
		if err := c(ctx, info, h.gr, obj, old); err != nil {
			return nil, err
		}
	}
	nm.SetGeneration(om.GetGeneration())
	switch m {
	case modeStatus:
		h.res.Status.PrepareForUpdate(ctx, obj, old)
	case modeEphemeralContainers:
		h.res.EphemeralContainers.PrepareForUpdate(ctx, obj, old)
	case modeResize:
		h.res.Resize.PrepareForUpdate(ctx, obj, old)
	case modeMain, modeScale:
		h.res.Strategy.PrepareForUpdate(ctx, obj, old)
	}
	if nm.GetUID() == "" {
		nm.SetUID(om.GetUID())
	}
	nm.SetCreationTimestamp(om.GetCreationTimestamp())
	if om.GetDeletionTimestamp() != nil {
		nm.SetDeletionTimestamp(om.GetDeletionTimestamp())
	}
	if om.GetDeletionGracePeriodSeconds() != nil && nm.GetDeletionGracePeriodSeconds() == nil {
		nm.SetDeletionGracePeriodSeconds(om.GetDeletionGracePeriodSeconds())
	}
	nm.SetSelfLink("")
	if m == modeMain {
		if err := h.initUpdate(ctx, obj, old); err != nil {
			return nil, err
		}
	}
	errs := metavalidation.ValidateObjectMetaAccessorUpdate(nm, om, field.NewPath("metadata"))
	switch m {
	case modeStatus:
		errs = append(errs, h.res.Status.ValidateUpdate(ctx, obj, old)...)
	case modeEphemeralContainers:
		errs = append(errs, h.res.EphemeralContainers.ValidateUpdate(ctx, obj, old)...)
	case modeResize:
		errs = append(errs, h.res.Resize.ValidateUpdate(ctx, obj, old)...)
	case modeMain, modeScale:
		errs = append(errs, h.res.Strategy.ValidateUpdate(ctx, obj, old)...)
	}
	if len(errs) > 0 {
		return nil, apierrors.NewInvalid(h.gvk.GroupKind(), name, errs)
	}
	if err := h.opts.Admission.Validate(ctx, h.adm(ctx, admission.Update, info, ns, name, obj, old, opts)); err != nil {
		return nil, err
	}
	return obj, nil
}

// shouldDeleteDuringUpdate: a deleted object whose last finalizer was just
// removed goes (unless it is in graceful deletion, as pods are; a namespace
// also waits for its spec.finalizers).
func (h *Handler) shouldDeleteDuringUpdate(obj, old runtime.Object) bool {
	nm, om := accessor(obj), accessor(old)
	if nm.GetDeletionTimestamp() == nil || len(nm.GetFinalizers()) != 0 {
		return false
	}
	if g := om.GetDeletionGracePeriodSeconds(); g != nil && *g != 0 {
		return false
	}
	if ns, ok := obj.(*corev1.Namespace); ok && len(ns.Spec.Finalizers) != 0 {
		return false
	}
	return true
}
