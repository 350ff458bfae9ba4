package endpoints

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/faults"
	"github.com/kubeproof/kubeproof/impl/storage"
)

var bindingGR = schema.GroupResource{Resource: "pods/binding"}

// bind serves POST pods/<name>/binding and the legacy POST
// namespaces/<ns>/bindings (isLegacyBindings), which kube-apiserver serves
// with the same storage: it sets spec.nodeName of an
// unbound pod with a compare-and-swap (STORE-3), clears its
// status.nominatedNodeName, adds the Binding's annotations and labels
// (after admission: PodTopologyLabels adds the node's zone and region) and
// marks it PodScheduled=True. A pod that is already bound, or being
// deleted, is a 409 Conflict: a pod is bound at most once (SCHED-1).
func (h *Handler) bind(w http.ResponseWriter, r *http.Request, info *request.Info) error {
	wo, target, body, err := h.readWrite(w, r, "CreateOptions")
	if err != nil {
		return err
	}
	obj, warnings, err := h.decode(r, body, corev1.SchemeGroupVersion.WithKind("Binding"), &corev1.Binding{}, wo.fieldValidation)
	if err != nil {
		return err
	}
	recordWarnings(r, warnings)
	audit.LogRequestObject(r.Context(), accessor(obj), h.opts.Codecs.RequestObjectJSON(obj, corev1.SchemeGroupVersion, nil))
	b := obj.(*corev1.Binding)
	if b.Namespace == "" {
		b.Namespace = info.Namespace
	}
	if b.Namespace != info.Namespace {
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	legacy := isLegacyBindings(info)
	name := info.Name
	if legacy {
		// A create on a collection: the pod is the one the Binding names,
		// as kube-apiserver's create handler takes an unnamed request's
		// name from its object.
		name = b.Name
	}
	if b.Name != name {
		return apierrors.NewBadRequest("name in URL does not match name in Binding object")
	}
	var errs field.ErrorList
	if b.Target.Kind != "" && b.Target.Kind != "Node" {
		errs = append(errs, field.NotSupported(field.NewPath("target", "kind"), b.Target.Kind, []string{"Node", "<empty>"}))
	}
	if b.Target.Name == "" {
		errs = append(errs, field.Required(field.NewPath("target", "name"), ""))
	}
	if len(errs) > 0 {
		return apierrors.NewInvalid(schema.GroupKind{Kind: "Binding"}, b.Name, errs)
	}
	ctx := r.Context()
	if err := h.opts.Admission.Admit(ctx, h.bindingAdm(ctx, info, b, wo.admission)); err != nil {
		return err
	}
	if err := h.opts.Admission.Validate(ctx, h.bindingAdm(ctx, info, b, wo.admission)); err != nil {
		return err
	}
	key, err := h.objectKey(info.Namespace, name)
	if err != nil {
		return err
	}
	var pre *storage.Preconditions
	if b.UID != "" || b.ResourceVersion != "" {
		pre = &storage.Preconditions{}
		if b.UID != "" {
			uid := b.UID
			pre.UID = &uid
		}
		if b.ResourceVersion != "" {
			rv := b.ResourceVersion
			pre.ResourceVersion = &rv
		}
	}
	assign := func(existing runtime.Object) (runtime.Object, error) {
		cur, ok := existing.(*corev1.Pod)
		if !ok {
			return nil, fmt.Errorf("stored object is %T, not a Pod", existing)
		}
		if cur.DeletionTimestamp != nil {
			return nil, apierrors.NewConflict(bindingGR, cur.Name, fmt.Errorf("pod %s is being deleted, cannot be assigned to a host", cur.Name))
		}
		// Mutation faults.BindingOverwritesBinding drops this check (SCHED-1).
		if cur.Spec.NodeName != "" && !faults.Enabled(faults.BindingOverwritesBinding) {
			return nil, apierrors.NewConflict(bindingGR, cur.Name, fmt.Errorf("pod %v is already assigned to node %q", cur.Name, cur.Spec.NodeName))
		}
		if len(cur.Spec.SchedulingGates) != 0 {
			return nil, apierrors.NewConflict(bindingGR, cur.Name, fmt.Errorf("pod %v has non-empty .spec.schedulingGates", cur.Name))
		}
		// A copy of what the binding changes (existing must not change);
		// the rest is shared with existing, which nothing changes.
		pod := new(corev1.Pod)
		*pod = *cur
		pod.Status.Conditions = slices.Clone(cur.Status.Conditions)
		pod.Spec.NodeName = b.Target.Name
		// ClearingNominatedNodeNameAfterBinding (beta, on since 1.35): the
		// nomination goes in the same write, whichever node it named.
		pod.Status.NominatedNodeName = ""
		if len(b.Annotations) > 0 {
			pod.Annotations = maps.Clone(cur.Annotations)
		}
		for k, v := range b.Annotations {
			if pod.Annotations == nil {
				pod.Annotations = map[string]string{}
			}
			pod.Annotations[k] = v
		}
		// PodTopologyLabelsAdmission (beta, on since 1.35): every label of
		// the Binding (the PodTopologyLabels admission plugin puts the
		// node's zone and region there) overwrites the pod's, in the same
		// write.
		if len(b.Labels) > 0 {
			pod.Labels = maps.Clone(cur.Labels)
			if pod.Labels == nil {
				pod.Labels = make(map[string]string, len(b.Labels))
			}
			maps.Copy(pod.Labels, b.Labels)
		}
		setPodScheduled(pod, metav1.NewTime(h.now().Truncate(time.Second)))
		return pod, nil
	}
	if wo.dryRun {
		cur := h.res.New()
		if err := h.store.Get(ctx, key, storage.GetOptions{}, cur); err != nil {
			return err
		}
		if err := pre.Check(key, cur); err != nil {
			return err
		}
		if _, err := assign(cur); err != nil {
			return err
		}
	} else if err := h.store.GuaranteedUpdate(ctx, key, h.res.New(), false, pre, assign); err != nil {
		var se *apierrors.StatusError
		if errors.As(err, &se) || storage.CodeOf(err) == storage.ErrCodeKeyNotFound {
			return ToStatusError(err, VerbUpdate, h.gr, name)
		}
		return apierrors.NewConflict(bindingGR, name, err)
	}
	writeResponse(w, r, target, http.StatusCreated, &metav1.Status{
		TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"},
		Status:   metav1.StatusSuccess, Code: http.StatusCreated,
	})
	return nil
}

// legacyBindingsGVR is core/v1 bindings, kube-apiserver's older way to
// bind a pod: a create of a Binding in the pod's namespace naming the pod
// in its metadata.name.
var legacyBindingsGVR = corev1.SchemeGroupVersion.WithResource("bindings")

// isLegacyBindings reports whether info addresses the legacy bindings
// resource rather than the pods/binding subresource.
func isLegacyBindings(info *request.Info) bool {
	return info.Resource == legacyBindingsGVR.Resource
}

// routeLegacyBindings is kube-apiserver's router for the legacy bindings
// resource, a namespaced creater only: its one route is POST
// /api/v1/namespaces/<ns>/bindings; another method there is the router's
// 405, any other path its 404 (an object's, the cross-namespace
// collection, the watch paths).
func (h *Handler) routeLegacyBindings(info *request.Info) (serveFunc, error) {
	if !h.isPod || info.Namespace == "" || !info.UnderNamespace || info.Name != "" || info.Subresource != "" {
		return nil, notFoundPath()
	}
	if info.Verb != "create" {
		if info.Verb == "watch" && isWatchPath(info) {
			return nil, notFoundPath()
		}
		return nil, MethodNotAllowed()
	}
	return h.bind, nil
}

// bindingGVK is the kind of a binding request's object.
var bindingGVK = corev1.SchemeGroupVersion.WithKind("Binding")

// bindingAdm is the admission attributes of a binding: kube-apiserver
// admits the subresource as pods/binding and the legacy resource as
// bindings, both of kind Binding, the kind of the request's object (its
// create handler admits with the kind its storage makes, and
// BindingREST's is a Binding), not the pod's.
func (h *Handler) bindingAdm(ctx context.Context, info *request.Info, b *corev1.Binding, opts admission.RequestOptions) *admission.Attributes {
	a := h.adm(ctx, admission.Create, info, b.Namespace, b.Name, b, nil, opts)
	a.Kind = bindingGVK
	if isLegacyBindings(info) {
		a.Resource = legacyBindingsGVR
	}
	return a
}

// setPodScheduled sets condition PodScheduled=True, keeping the transition
// time when it already was.
func setPodScheduled(pod *corev1.Pod, now metav1.Time) {
	for i := range pod.Status.Conditions {
		c := &pod.Status.Conditions[i]
		if c.Type != corev1.PodScheduled {
			continue
		}
		if c.Status != corev1.ConditionTrue {
			c.Status = corev1.ConditionTrue
			c.LastTransitionTime = now
			c.Reason, c.Message = "", ""
		}
		return
	}
	pod.Status.Conditions = append(pod.Status.Conditions, corev1.PodCondition{
		Type: corev1.PodScheduled, Status: corev1.ConditionTrue, LastTransitionTime: now,
	})
}
