package endpoints

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

var (
	errDeleteNow       = errors.New("delete the object now")
	errAlreadyDeleting = errors.New("graceful deletion already pending")
)

// deleteOptions reads DeleteOptions from the body, or from the query when
// there is no body.
func (h *Handler) deleteOptions(w http.ResponseWriter, r *http.Request) (*metav1.DeleteOptions, error) {
	opts := &metav1.DeleteOptions{}
	body, err := h.readBody(w, r)
	if err != nil {
		return nil, err
	}
	if len(body) > 0 {
		info, err := h.opts.Codecs.RequestSerializer(r.Header.Get("Content-Type"))
		if err != nil {
			return nil, err
		}
		gv, err := codec.DecodeDeleteOptions(info.MediaType, body, opts)
		if err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		// As kube-apiserver: the options are audited once decoded
		// (encoded again, not as sent), before they are validated.
		audit.LogRequestOptions(r.Context(), codec.DeleteOptionsJSON(opts, gv))
	}
	// As kube-apiserver, the query's options are read only when there is
	// no body: a body is the options, whatever the query says.
	if q := r.URL.Query(); len(body) == 0 && len(q) > 0 {
		qopts := &metav1.DeleteOptions{}
		if err := h.opts.Codecs.ParameterCodec.DecodeParameters(q, schema.GroupVersion{Version: "v1"}, qopts); err != nil {
			return nil, apierrors.NewBadRequest(err.Error())
		}
		if qopts.GracePeriodSeconds != nil {
			opts.GracePeriodSeconds = qopts.GracePeriodSeconds
		}
		if qopts.PropagationPolicy != nil {
			opts.PropagationPolicy = qopts.PropagationPolicy
		}
		if qopts.OrphanDependents != nil { //nolint:staticcheck // still part of the API
			opts.OrphanDependents = qopts.OrphanDependents //nolint:staticcheck
		}
		if len(qopts.DryRun) > 0 {
			opts.DryRun = qopts.DryRun
		}
	}
	// kube-apiserver drops ignoreStoreReadErrorWithClusterBreakingPotential
	// unless its alpha AllowUnsafeMalformedObjectDeletion gate is on (off
	// by default; not served here), before validating the options.
	opts.IgnoreStoreReadErrorWithClusterBreakingPotential = nil
	if errs := metav1validation.ValidateDeleteOptions(opts); len(errs) > 0 {
		return nil, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: "DeleteOptions"}, "", errs)
	}
	return opts, nil
}

func (h *Handler) delete(w http.ResponseWriter, r *http.Request, info *request.Info) error {
	target, err := h.opts.Codecs.Negotiate(r, nil, false)
	if err != nil {
		return err
	}
	opts, err := h.deleteOptions(w, r)
	if err != nil {
		return err
	}
	key, err := h.objectKey(info.Namespace, info.Name)
	if err != nil {
		return err
	}
	out, deleted, err := h.DeleteObject(r.Context(), info, key, opts)
	if err != nil {
		return err
	}
	code := http.StatusOK
	if !deleted && opts.OrphanDependents != nil && !*opts.OrphanDependents { //nolint:staticcheck
		code = http.StatusAccepted
	}
	done := transformTimer(target)
	resp, err := h.deleteResponse(out, deleted, code)
	done()
	if err != nil {
		return err
	}
	writeResponse(w, r, target, code, resp)
	return nil
}

// deleteResponse: an object still present (graceful deletion, finalizers)
// is returned as is; a removed one as a success Status, except for kinds
// that return the deleted object (Resource.ReturnDeletedObject), stamped
// by the storage with the deletion's revision, as kube-apiserver does.
func (h *Handler) deleteResponse(out runtime.Object, deleted bool, code int) (runtime.Object, error) {
	if !deleted || h.res.ReturnDeletedObject {
		if err := h.opts.Codecs.SetKind(out, h.res.GroupVersion); err != nil {
			return nil, err
		}
		return out, nil
	}
	m := accessor(out)
	return &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess,
		Details:  &metav1.StatusDetails{Name: m.GetName(), Group: h.gr.Group, Kind: h.gr.Resource, UID: m.GetUID()},
	}, nil
}

// DeleteObject deletes the object at key as kube-apiserver's generic store
// does: preconditions, checked on the stored object first (its
// rest.BeforeDelete), so a failing one is the answer even to a delete an
// admission plugin would refuse; then the admission chain (mutating, then
// validating plugins) in each write, as deleteGeneric says; graceful
// deletion (deletionTimestamp plus deletionGracePeriodSeconds) for kinds
// with a GracefulDeleter; orphan and foregroundDeletion finalizers
// recorded from the propagation policy; an object with finalizers only
// marked. deleted reports whether the object
// is gone. A resource's ForbidDelete is asked first, before the object is
// read.
func (h *Handler) DeleteObject(ctx context.Context, info *request.Info, key string, opts *metav1.DeleteOptions) (out runtime.Object, deleted bool, err error) {
	if h.res.ForbidDelete != nil {
		if err := h.res.ForbidDelete(info.Name); err != nil {
			return nil, false, err
		}
	}
	return h.deleteObject(ctx, info, key, opts, admitObject)
}

// deleteAdmission says how deleteObject admits a delete.
type deleteAdmission uint8

const (
	// admitObject: a DELETE of the object, admitted under its namespace
	// and name.
	admitObject deleteAdmission = iota
	// admitCollectionItem: an item of a deletecollection, admitted with
	// the request's namespace (info.Namespace) and no name, as
	// kube-apiserver's DeleteCollection handler gives every item its
	// static attributes (rest.AdmissionToValidateObjectDeleteFunc).
	admitCollectionItem
	// admitNone: not admitted (the eviction's delete).
	admitNone
)

// DeleteObjectUnadmitted is DeleteObject without the admission chain, as
// kube-apiserver's eviction REST deletes the pod it evicts
// (rest.ValidateAllObjectFunc): the eviction's create was admitted
// (AdmitCreate).
func (h *Handler) DeleteObjectUnadmitted(ctx context.Context, info *request.Info, key string, opts *metav1.DeleteOptions) (out runtime.Object, deleted bool, err error) {
	return h.deleteObject(ctx, info, key, opts, admitNone)
}

func (h *Handler) deleteObject(ctx context.Context, info *request.Info, key string, opts *metav1.DeleteOptions, admit deleteAdmission) (out runtime.Object, deleted bool, err error) {
	name := info.Name
	dryRun := len(opts.DryRun) > 0
	cur := h.res.New()
	if err := h.store.Get(ctx, key, storage.GetOptions{}, cur); err != nil {
		return nil, false, ToStatusError(err, VerbGet, h.gr, name)
	}
	pre := preconditions(opts)
	if h.isNamespace {
		// kube-apiserver's namespace registry checks the preconditions
		// itself, in its storage's words, on namespaces.
		if err := pre.Check(key, cur); err != nil {
			return nil, false, ToStatusError(err, VerbDelete, h.gr, name)
		}
	} else if err := h.deletePreconditionFailed(cur, opts.Preconditions); err != nil {
		return nil, false, err
	}
	validate := admitNothing
	if admit != admitNone && !h.deleteUnadmitted(cur, opts) {
		admName := name
		if admit == admitCollectionItem {
			admName = ""
		}
		admOpts := opts
		if admit == admitObject {
			admOpts = h.admissionDeleteOptions(cur, opts)
		}
		// A copy: the store's later changes to opts are already in it.
		validate = h.admitDeleteFunc(info, admName, admOpts.DeepCopy())
	}
	if h.isNamespace {
		// A namespace's delete is admitted once, on the namespace as
		// stored, before its registry's own update.
		if err := validate(ctx, cur); err != nil {
			return nil, false, err
		}
		return h.deleteNamespace(ctx, key, cur, opts, pre, dryRun)
	}
	return h.deleteGeneric(ctx, key, name, cur, opts, pre, dryRun, validate)
}

// admitDeleteOf is the delete validation a write runs on the object it
// is about to change or remove: the admission chain, or admitNothing.
type admitDeleteOf func(ctx context.Context, old runtime.Object) error

// admitDeleteFunc is kube-apiserver's rest.AdmissionToValidateObjectDeleteFunc:
// the delete's admission (the mutating plugins, then the validating ones),
// with the request's static attributes and, as its old object, a copy of
// the object the store is about to mark or remove. The generic store runs
// it once in each write of a delete: the update that marks the object
// (graceful deletion, finalizers) and the storage delete that removes it.
func (h *Handler) admitDeleteFunc(info *request.Info, name string, opts *metav1.DeleteOptions) admitDeleteOf {
	return func(ctx context.Context, old runtime.Object) error {
		attrs := h.adm(ctx, admission.Delete, info, info.Namespace, name, nil, old.DeepCopyObject(), admission.RequestOptions{Delete: opts})
		if err := h.opts.Admission.Admit(ctx, attrs); err != nil {
			return err
		}
		return h.opts.Admission.Validate(ctx, attrs)
	}
}

// admitNothing is the delete validation of a delete not admitted: the
// eviction's, one the store answers without admission, or the writes
// after a namespace's single admission.
func admitNothing(context.Context, runtime.Object) error { return nil }

// deleteUnadmitted reports whether kube-apiserver's store answers the
// delete of the stored object cur with opts without admitting it: a
// graceful deletion already pending that opts do not shorten (its generic
// store returns the object as it is), or a namespace already terminating
// that still has spec.finalizers (its registry returns it as it is).
func (h *Handler) deleteUnadmitted(cur runtime.Object, opts *metav1.DeleteOptions) bool {
	m := accessor(cur)
	if m.GetDeletionTimestamp() == nil {
		return false
	}
	if ns, ok := cur.(*corev1.Namespace); ok && h.isNamespace {
		return len(ns.Spec.Finalizers) != 0
	}
	return h.res.GracefulDelete != nil && gracefulDeletionPending(m, opts.GracePeriodSeconds)
}

// gracefulDeletionPending says whether m is in a graceful deletion (a
// deletionTimestamp and a grace period other than 0) that a delete asking
// for grace seconds (nil: none; negative: 1) does not shorten, as
// beforeDelete decides.
func gracefulDeletionPending(m metav1.Object, grace *int64) bool {
	pending := m.GetDeletionGracePeriodSeconds()
	if m.GetDeletionTimestamp() == nil || pending == nil || *pending == 0 {
		return false
	}
	if grace == nil {
		return true
	}
	g := *grace
	if g < 0 {
		g = 1
	}
	return g >= *pending
}

// admissionDeleteOptions are the DeleteOptions kube-apiserver admits the
// delete of the stored object cur with, when a DELETE of the object asked
// for opts: the handler's options, which its store has changed by then. A
// namespace's registry makes the namespace's uid a precondition when none
// was given. The generic store (rest.BeforeDelete; for a namespace, only
// once it is terminating) makes a negative grace period 1 second and has
// a graceful kind's strategy set the grace period of an object not yet
// being deleted (a pod's: its own, 0 when it is unscheduled or terminal).
// A deletecollection's items are admitted with the options as decoded:
// the store deletes each with a copy of them. opts itself is returned
// when nothing changes, a copy otherwise.
func (h *Handler) admissionDeleteOptions(cur runtime.Object, opts *metav1.DeleteOptions) *metav1.DeleteOptions {
	m := accessor(cur)
	noUID := h.isNamespace && (opts.Preconditions == nil || opts.Preconditions.UID == nil)
	// A namespace's first delete is its registry's own update; the
	// generic store only deletes a namespace already terminating.
	store := !h.isNamespace || m.GetDeletionTimestamp() != nil
	negative := store && opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0
	graceful := store && h.res.GracefulDelete != nil && m.GetDeletionTimestamp() == nil
	if !noUID && !negative && !graceful {
		return opts
	}
	o := *opts
	if noUID {
		pre := metav1.Preconditions{}
		if opts.Preconditions != nil {
			pre = *opts.Preconditions
		}
		uid := m.GetUID()
		pre.UID = &uid
		o.Preconditions = &pre
	}
	if negative {
		one := int64(1)
		o.GracePeriodSeconds = &one
	}
	if graceful {
		period := h.res.GracefulDelete.GracePeriod(cur, &o)
		o.GracePeriodSeconds = &period
	}
	return &o
}

// deletePreconditionFailed is kube-apiserver's early check of a delete's
// preconditions against the object it read (its generic store's
// BeforeDelete, before the storage enforces them again): the uid, then the
// resourceVersion, each a 409 Conflict whose resource is the object's kind
// (Operation cannot be fulfilled on ConfigMap "c": ...), not its resource.
func (h *Handler) deletePreconditionFailed(cur runtime.Object, p *metav1.Preconditions) error {
	if p == nil {
		return nil
	}
	m := accessor(cur)
	kind := schema.GroupResource{Group: h.gvk.Group, Resource: h.gvk.Kind}
	if p.UID != nil && *p.UID != m.GetUID() {
		return apierrors.NewConflict(kind, m.GetName(), fmt.Errorf(
			"the UID in the precondition (%s) does not match the UID in record (%s). The object might have been deleted and then recreated", *p.UID, m.GetUID()))
	}
	if p.ResourceVersion != nil && *p.ResourceVersion != m.GetResourceVersion() {
		return apierrors.NewConflict(kind, m.GetName(), fmt.Errorf(
			"the ResourceVersion in the precondition (%s) does not match the ResourceVersion in record (%s). The object might have been modified", *p.ResourceVersion, m.GetResourceVersion()))
	}
	return nil
}

func preconditions(opts *metav1.DeleteOptions) *storage.Preconditions {
	if opts.Preconditions == nil {
		return nil
	}
	return &storage.Preconditions{UID: opts.Preconditions.UID, ResourceVersion: opts.Preconditions.ResourceVersion}
}

// deleteGeneric is the generic store's delete of cur: an update marking
// it first when it is deleted gracefully, has finalizers or gets
// garbage-collection ones, then (unless that leaves it in place) the
// storage delete. validate, the delete's admission, runs in each of these
// writes on the object as it then is (a dry run's marking update stands
// for both), as kube-apiserver's store runs its delete validation.
func (h *Handler) deleteGeneric(ctx context.Context, key, name string, cur runtime.Object, opts *metav1.DeleteOptions, pre *storage.Preconditions, dryRun bool, validate admitDeleteOf) (runtime.Object, bool, error) {
	probe := cur.DeepCopyObject()
	graceful, pending, _ := h.beforeDelete(probe, opts)
	if pending {
		return cur, false, nil
	}
	m := accessor(cur)
	updateFinalizers, _ := deletionFinalizers(m, opts)
	marked, written := false, false
	if graceful || len(m.GetFinalizers()) != 0 || updateFinalizers {
		out, deleteNow, wrote, err := h.markForDeletion(ctx, key, name, opts, pre, dryRun, validate)
		if err != nil || !deleteNow {
			return out, false, err
		}
		if wrote && pre != nil && pre.ResourceVersion != nil {
			rv := accessor(out).GetResourceVersion()
			pre = &storage.Preconditions{UID: pre.UID, ResourceVersion: &rv}
		}
		cur, marked, written = out, true, wrote
	}
	if dryRun {
		if !marked {
			if err := validate(ctx, cur); err != nil {
				return nil, false, err
			}
		}
		return cur, true, nil
	}
	out := h.res.New()
	err := h.store.Delete(ctx, key, out, pre, func(ctx context.Context, obj runtime.Object) error {
		// Finalizers someone added since the object was read keep it;
		// the garbage collector's that this delete takes off do not (the
		// store removes the object as stored, as kube-apiserver's).
		if _, left := deletionFinalizers(accessor(obj), opts); len(left) != 0 {
			return apierrors.NewConflict(h.gr, name, errors.New(optimisticLockErrorMsg))
		}
		return validate(ctx, obj)
	})
	if err != nil {
		if written && storage.IsNotFound(err) {
			// As kube-apiserver's store after it marked an object for a
			// delete with no grace period: another delete removed it in
			// between, and this one answers as if it had (the object as
			// it marked it).
			return cur, true, nil
		}
		return nil, false, ToStatusError(err, VerbDelete, h.gr, name)
	}
	return out, true, nil
}

// markForDeletion writes deletionTimestamp, the grace period and the
// garbage-collection finalizers with a compare-and-swap, admitting the
// delete (validate) on each object it tries to change. deleteNow is true
// when the object should now be removed (no finalizers, zero grace);
// written whether it wrote the object (or, in a dry run, would have) on
// the way: not when a delete without graceful deletion leaves no
// finalizer, which is removed as stored, as kube-apiserver's
// updateForGracefulDeletionAndFinalizers answers errDeleteNow without
// writing its finalizer change (a Background delete dropping an Orphan
// delete's finalizer).
func (h *Handler) markForDeletion(ctx context.Context, key, name string, opts *metav1.DeleteOptions, pre *storage.Preconditions, dryRun bool, validate admitDeleteOf) (out runtime.Object, deleteNow, written bool, err error) {
	var lastGrace int64
	var lastGraceful, pendingFinalizers bool
	try := func(existing runtime.Object) (runtime.Object, error) {
		if err := validate(ctx, existing); err != nil {
			return nil, err
		}
		obj := existing.DeepCopyObject()
		o := *opts
		graceful, pending, err := h.beforeDelete(obj, &o)
		if err != nil {
			return nil, err
		}
		if pending {
			return nil, errAlreadyDeleting
		}
		m := accessor(obj)
		update, fins := deletionFinalizers(m, &o)
		if update {
			m.SetFinalizers(fins)
		}
		pendingFinalizers = len(m.GetFinalizers()) != 0
		lastGraceful = graceful
		if !graceful {
			if !pendingFinalizers {
				return nil, errDeleteNow
			}
			// kube-apiserver's markAsDeleting: the first mark bumps the
			// generation; the timestamp only ever moves earlier.
			now := metav1.NewTime(h.now().Truncate(time.Second))
			if m.GetDeletionTimestamp() == nil && m.GetGeneration() > 0 {
				m.SetGeneration(m.GetGeneration() + 1)
			}
			if ts := m.GetDeletionTimestamp(); ts == nil || ts.After(now.Time) {
				m.SetDeletionTimestamp(&now)
			}
			zero := int64(0)
			m.SetDeletionGracePeriodSeconds(&zero)
			return obj, nil
		}
		if g := m.GetDeletionGracePeriodSeconds(); g != nil {
			lastGrace = *g
		}
		return obj, nil
	}
	if dryRun {
		cur := h.res.New()
		if err = h.store.Get(ctx, key, storage.GetOptions{}, cur); err == nil {
			if err = pre.Check(key, cur); err == nil {
				out, err = try(cur)
				if errors.Is(err, errDeleteNow) {
					out = cur
				}
			}
		}
	} else {
		out = h.res.New()
		err = h.store.GuaranteedUpdate(ctx, key, out, false, pre, try)
	}
	switch {
	case err == nil:
		if pendingFinalizers || (lastGraceful && lastGrace > 0) {
			return out, false, true, nil
		}
		return out, true, true, nil
	case errors.Is(err, errDeleteNow):
		if dryRun {
			return out, true, false, nil
		}
		cur := h.res.New()
		if err := h.store.Get(ctx, key, storage.GetOptions{}, cur); err != nil {
			return nil, false, false, ToStatusError(err, VerbGet, h.gr, name)
		}
		return cur, true, false, nil
	case errors.Is(err, errAlreadyDeleting):
		cur := h.res.New()
		if err := h.store.Get(ctx, key, storage.GetOptions{}, cur); err != nil {
			return nil, false, false, ToStatusError(err, VerbGet, h.gr, name)
		}
		return cur, false, false, nil
	}
	return nil, false, false, ToStatusError(err, VerbUpdate, h.gr, name)
}

// beforeDelete is kube-apiserver's rest.BeforeDelete: it decides whether a
// deletion is graceful and, if so, sets deletionTimestamp and
// deletionGracePeriodSeconds on obj. pending is true when a graceful
// deletion is already under way and this request does not shorten it.
func (h *Handler) beforeDelete(obj runtime.Object, opts *metav1.DeleteOptions) (graceful, pending bool, err error) {
	m := accessor(obj)
	if opts.GracePeriodSeconds != nil && *opts.GracePeriodSeconds < 0 {
		one := int64(1)
		opts.GracePeriodSeconds = &one
	}
	if h.res.GracefulDelete == nil {
		return false, false, nil
	}
	if m.GetDeletionTimestamp() != nil {
		cur := m.GetDeletionGracePeriodSeconds()
		if cur == nil || *cur == 0 {
			return false, false, nil
		}
		if opts.GracePeriodSeconds == nil || *opts.GracePeriodSeconds >= *cur {
			return false, true, nil
		}
		period := *opts.GracePeriodSeconds
		ts := metav1.NewTime(m.GetDeletionTimestamp().Add(-time.Duration(*cur) * time.Second).Add(time.Duration(period) * time.Second))
		m.SetDeletionTimestamp(&ts)
		m.SetDeletionGracePeriodSeconds(&period)
		return true, false, nil
	}
	// As kube-apiserver's pod strategy (CheckGracefulDelete), the delete
	// of an object not yet being deleted is graceful even when its period
	// is 0: the store marks the object (deletionTimestamp, grace period 0)
	// and then removes it at once.
	period := h.res.GracefulDelete.GracePeriod(obj, opts)
	ts := metav1.NewTime(h.now().Truncate(time.Second).Add(time.Duration(period) * time.Second))
	m.SetDeletionTimestamp(&ts)
	m.SetDeletionGracePeriodSeconds(&period)
	if g := m.GetGeneration(); g > 0 {
		m.SetGeneration(g + 1)
	}
	return true, false, nil
}

// deletionFinalizers computes the finalizers a deletion with opts leaves on
// m: orphan for Orphan (or orphanDependents=true), foregroundDeletion for
// Foreground; neither for Background. Without an explicit policy, a
// finalizer already present decides. update is false when nothing changes.
func deletionFinalizers(m metav1.Object, opts *metav1.DeleteOptions) (update bool, finalizers []string) {
	orphan, foreground := false, false
	explicit := false
	if opts.OrphanDependents != nil { //nolint:staticcheck
		orphan, explicit = *opts.OrphanDependents, true //nolint:staticcheck
	} else if opts.PropagationPolicy != nil {
		explicit = true
		switch *opts.PropagationPolicy {
		case metav1.DeletePropagationOrphan:
			orphan = true
		case metav1.DeletePropagationForeground:
			foreground = true
		}
	}
	if !explicit {
		for _, f := range m.GetFinalizers() {
			switch f {
			case metav1.FinalizerOrphanDependents:
				orphan = true
			case metav1.FinalizerDeleteDependents:
				foreground = true
			}
		}
	}
	var out []string
	for _, f := range m.GetFinalizers() {
		if f != metav1.FinalizerOrphanDependents && f != metav1.FinalizerDeleteDependents {
			out = append(out, f)
		}
	}
	if orphan {
		out = append(out, metav1.FinalizerOrphanDependents)
	}
	if foreground {
		out = append(out, metav1.FinalizerDeleteDependents)
	}
	old := slices.Clone(m.GetFinalizers())
	slices.Sort(old)
	old = slices.Compact(old)
	nw := slices.Clone(out)
	slices.Sort(nw)
	nw = slices.Compact(nw)
	if slices.Equal(old, nw) {
		return false, m.GetFinalizers()
	}
	return true, out
}

// deleteNamespace: the first delete moves a namespace to Terminating (with
// a deletionTimestamp); it is removed only once its spec.finalizers (the
// namespace controller's) and metadata.finalizers are gone.
func (h *Handler) deleteNamespace(ctx context.Context, key string, cur runtime.Object, opts *metav1.DeleteOptions, pre *storage.Preconditions, dryRun bool) (runtime.Object, bool, error) {
	ns, ok := cur.(*corev1.Namespace)
	if !ok {
		return nil, false, apierrors.NewInternalError(errors.New("stored namespace has the wrong type"))
	}
	uid := ns.UID
	if pre == nil {
		pre = &storage.Preconditions{}
	}
	if pre.UID == nil {
		pre.UID = &uid
	}
	if ns.DeletionTimestamp == nil {
		try := func(existing runtime.Object) (runtime.Object, error) {
			n := existing.(*corev1.Namespace).DeepCopy()
			if n.DeletionTimestamp == nil {
				now := metav1.NewTime(h.now().Truncate(time.Second))
				n.DeletionTimestamp = &now
			}
			n.Status.Phase = corev1.NamespaceTerminating
			if update, fins := deletionFinalizers(n, opts); update {
				n.Finalizers = fins
			}
			return n, nil
		}
		if dryRun {
			out, err := try(cur)
			return out, false, err
		}
		out := h.res.New()
		if err := h.store.GuaranteedUpdate(ctx, key, out, false, pre, try); err != nil {
			return nil, false, ToStatusError(err, VerbUpdate, h.gr, ns.Name)
		}
		return out, false, nil
	}
	if len(ns.Spec.Finalizers) != 0 {
		return cur, false, nil
	}
	return h.deleteGeneric(ctx, key, ns.Name, cur, opts, pre, dryRun, admitNothing)
}

func (h *Handler) deleteCollection(w http.ResponseWriter, r *http.Request, info *request.Info) error {
	target, err := h.opts.Codecs.Negotiate(r, nil, false)
	if err != nil {
		return err
	}
	// As kube-apiserver's DeleteCollection, the list options are read
	// (and refused) before the body.
	_, sopts, err := h.listOptions(r, info, false)
	if err != nil {
		return err
	}
	opts, err := h.deleteOptions(w, r)
	if err != nil {
		return err
	}
	key, err := h.listKey(info.Namespace)
	if err != nil {
		return err
	}
	list := h.res.NewList()
	if err := h.store.GetList(r.Context(), key, sopts, list); err != nil {
		return err
	}
	items, err := extractList(list)
	if err != nil {
		return err
	}
	for _, item := range items {
		m := accessor(item)
		// iinfo keeps the request's namespace: each item is admitted
		// with it and no name (admitCollectionItem).
		iinfo := *info
		iinfo.Name, iinfo.Verb = m.GetName(), "delete"
		// The request's namespace, as kube-apiserver's store deletes each
		// item by name in it: the empty one of /namespaces//pods lists
		// every namespace's and deletes none (objectKey's 400).
		ikey, err := h.objectKey(info.Namespace, m.GetName())
		if err != nil {
			return err
		}
		o := opts.DeepCopy()
		_, _, err = h.deleteObject(r.Context(), &iinfo, ikey, o, admitCollectionItem)
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	// As kube-apiserver's generic store, the answer is the list read to
	// find the objects (its resourceVersion, each item as listed, one gone
	// meanwhile included), not what the deletions returned.
	done := transformTimer(target)
	err = h.opts.Codecs.SetKind(list, h.res.GroupVersion)
	done()
	if err != nil {
		return err
	}
	writeResponse(w, r, target, http.StatusOK, list)
	return nil
}
