package endpoints

import (
	"context"
	"fmt"
	"net/http"
	"reflect"
	"strconv"
	"sync"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/fieldmanager"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// Server-side apply and managed fields: every update and patch records its
// manager in metadata.managedFields (operation Update), an apply patch
// (application/apply-patch+yaml) merges the applied configuration with
// structured-merge-diff and records it as operation Apply. Package
// fieldmanager does the field bookkeeping; this file connects it to the
// write paths.

// fieldManagerKey identifies a field manager: the same kind written
// through the same endpoint with the same strategy type behaves the same in
// every server of the process, so they share one.
type fieldManagerKey struct {
	gvk      schema.GroupVersionKind
	mode     mode
	strategy reflect.Type
	// scale is set for the manager of autoscaling/v1 Scale objects that
	// applies to /scale work with.
	scale bool
}

var fieldManagers sync.Map // fieldManagerKey -> *fieldmanager.Manager

// fieldManager returns the field manager of the endpoint m writes through.
func (h *Handler) fieldManager(m mode) (*fieldmanager.Manager, error) {
	key := fieldManagerKey{gvk: h.gvk, mode: m, strategy: reflect.TypeOf(h.res.Strategy)}
	if fm, ok := fieldManagers.Load(key); ok {
		return fm.(*fieldmanager.Manager), nil
	}
	fm, err := h.newFieldManager(m)
	if err != nil {
		return nil, err
	}
	got, _ := fieldManagers.LoadOrStore(key, fm)
	return got.(*fieldmanager.Manager), nil
}

func (h *Handler) newFieldManager(m mode) (*fieldmanager.Manager, error) {
	cfg := fieldmanager.Config{
		TypeConverter: fieldmanager.TypeConverterFor(h.res),
		Scheme:        h.opts.Codecs.Scheme,
		Kind:          h.gvk,
		Default:       h.res.Strategy.Default,
	}
	switch m {
	case modeMain:
		if h.res.Status != nil {
			cfg.ResetFields = []string{"status"}
		}
	case modeStatus:
		cfg.Subresource = "status"
		cfg.ResetFields = []string{"spec"}
	case modeEphemeralContainers:
		// Only spec.ephemeralContainers is written through this endpoint.
		cfg.Subresource = "ephemeralcontainers"
		cfg.Only = []string{"spec", "ephemeralContainers"}
	case modeResize:
		// Only the containers' resources and resize policies, as upstream
		// podResizeStrategy's reset fields filter.
		cfg.Subresource = "resize"
		cfg.OnlyAny = [][]string{
			{"spec", "containers", "*", "resources"}, {"spec", "containers", "*", "resizePolicy"},
			{"spec", "initContainers", "*", "resources"}, {"spec", "initContainers", "*", "resizePolicy"},
		}
	case modeScale:
		cfg.Subresource = "scale"
	case modeFinalize:
		cfg.Subresource = "finalize"
	}
	return fieldmanager.New(cfg)
}

// managerParams are the field-manager query parameters of a write.
type managerParams struct {
	fieldManager string
	force        *bool
}

// parseManagerParams reads fieldManager and force and validates them as
// kube-apiserver validates Create/Update/PatchOptions (a 422 naming the
// options kind). patchType is "" for anything but a patch.
func parseManagerParams(r *http.Request, optionsKind string, patchType types.PatchType) (managerParams, error) {
	q := request.Query(r)
	p := managerParams{fieldManager: q.Get("fieldManager")}
	if v, ok := q["force"]; ok && len(v) > 0 && optionsKind == "PatchOptions" {
		force, err := strconv.ParseBool(v[0])
		if err != nil {
			return managerParams{}, apierrors.NewBadRequest(fmt.Sprintf("invalid value for force: %q: %v", v[0], err))
		}
		p.force = &force
	}
	var errs field.ErrorList
	if optionsKind == "PatchOptions" {
		errs = metav1validation.ValidatePatchOptions(&metav1.PatchOptions{FieldManager: p.fieldManager, Force: p.force}, patchType)
	} else if p.fieldManager != "" {
		errs = metav1validation.ValidateFieldManager(p.fieldManager, field.NewPath("fieldManager"))
	}
	if len(errs) > 0 {
		return managerParams{}, apierrors.NewInvalid(schema.GroupKind{Group: metav1.GroupName, Kind: optionsKind}, "", errs)
	}
	return p, nil
}

// tracked wraps a non-apply transform so that its result records manager
// as the manager of what it changed. The result is defaulted first, as
// kube-apiserver's objects are when decoded, so that defaulted fields do not
// read as changes.
func (h *Handler) tracked(m mode, manager string, transform transformFunc) (transformFunc, error) {
	fm, err := h.fieldManager(m)
	if err != nil {
		return nil, err
	}
	return func(old runtime.Object) (runtime.Object, error) {
		obj, err := transform(old)
		if err != nil {
			return nil, err
		}
		if m != modeFinalize {
			h.res.Strategy.Default(obj)
		}
		return fm.Update(old, obj, manager), nil
	}, nil
}

// createTracked creates obj for a write of a missing object (an apply, or
// an update of a kind that allows create on update): POST's create path
// (defaulting, create admission, validation), with obj's managed fields,
// computed for this write, kept on the stored object. opts are the
// request's, which the create is admitted with (kube-apiserver makes a
// patch's or an update's options CreateOptions of the same dryRun,
// fieldManager and fieldValidation).
func (h *Handler) createTracked(ctx context.Context, info *request.Info, obj runtime.Object, opts admission.RequestOptions) (runtime.Object, error) {
	dryRun := len(opts.DryRun) > 0
	m := accessor(obj)
	if h.res.Namespaced {
		switch m.GetNamespace() {
		case "":
			m.SetNamespace(info.Namespace)
		case info.Namespace:
		default:
			return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
		}
	}
	managed := m.GetManagedFields()
	withFields := *h
	if !dryRun {
		// (A dry run writes nothing; the store's own DryRunner answers.)
		withFields.store = managedFieldsStore{Interface: h.store, managed: managed}
	}
	out, err := withFields.createObject(ctx, info, obj, opts, false)
	if err != nil {
		return nil, err
	}
	if dryRun {
		accessor(out).SetManagedFields(managed)
	}
	return out, nil
}

// managedFieldsStore writes the given managed fields on the objects it
// creates (CreateObject clears what a POST body says about them).
type managedFieldsStore struct {
	storage.Interface
	managed []metav1.ManagedFieldsEntry
}

func (s managedFieldsStore) Create(ctx context.Context, key string, obj, out runtime.Object) error {
	accessor(obj).SetManagedFields(s.managed)
	return s.Interface.Create(ctx, key, obj, out)
}

// apply serves a server-side apply patch: the body is the manager's applied
// configuration (YAML or JSON); it is merged into the stored object, or
// creates it when there is none (201). Conflicts with other managers are a
// 409 unless force.
func (h *Handler) apply(w http.ResponseWriter, r *http.Request, info *request.Info, m mode, wo writeOptions, target codec.Target, body []byte, params managerParams) error {
	force := params.force != nil && *params.force
	var transform transformFunc
	if m == modeScale {
		var err error
		if transform, err = h.scaleApply(body, params.fieldManager, force); err != nil {
			return err
		}
	} else {
		fm, err := h.fieldManager(m)
		if err != nil {
			return err
		}
		transform = func(old runtime.Object) (runtime.Object, error) {
			obj, err := fm.Apply(old, body, params.fieldManager, force)
			if err != nil {
				return nil, err
			}
			fieldmanager.KeepTimesIfUnchanged(old, obj)
			return obj, nil
		}
	}
	if wo.fieldValidation != metav1.FieldValidationIgnore {
		if strictErr := fieldmanager.ValidateApplyYAML(body); strictErr != nil {
			// Duplicate keys are looked at once the apply itself has
			// worked, as kube-apiserver's applyPatcher does: a body that
			// is not YAML, or an apply that conflicts, answers with its
			// own error and no warning.
			apply := transform
			transform = func(old runtime.Object) (runtime.Object, error) {
				obj, err := apply(old)
				if err != nil {
					return nil, err
				}
				if wo.fieldValidation == metav1.FieldValidationStrict {
					return nil, apierrors.NewBadRequest(fmt.Sprintf("error strict decoding YAML: %v", strictErr))
				}
				recordWarnings(r, strictWarnings(strictErr.Error()))
				return obj, nil
			}
		}
	}
	out, created, err := h.updateObject(r.Context(), info, m, transform, wo.admission, m == modeMain)
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

// trackCreate records the manager of a POST create (its fieldManager
// parameter, else its user agent) as the owner of everything obj sets,
// operation Update, as kube-apiserver does for every create. It validates
// the fieldManager parameter (422 CreateOptions) and defaults obj first.
// For CreateObject to keep what it records, CreateObject must not clear
// metadata.managedFields.
func (h *Handler) trackCreate(r *http.Request, obj runtime.Object) (runtime.Object, error) {
	params, err := parseManagerParams(r, "CreateOptions", "")
	if err != nil {
		return nil, err
	}
	fm, err := h.fieldManager(modeMain)
	if err != nil {
		return nil, err
	}
	h.res.Strategy.Default(obj)
	return fm.UpdateCreate(h.empty, obj, fieldmanager.ManagerName(params.fieldManager, r.UserAgent())), nil
}

// replicasPath is where every served kind with a /scale subresource keeps
// its replica count (deployments, replica sets).
var replicasPath = fieldpath.MakePathOrDie("spec", "replicas")

// scaleApply is the transform of an apply to /scale: the applied
// configuration is an autoscaling/v1 Scale, merged into the Scale view of
// the stored object with the view's managed fields (the parent's owners of
// spec.replicas), whose result goes back to the parent, as kube-apiserver
// does.
func (h *Handler) scaleApply(body []byte, manager string, force bool) (transformFunc, error) {
	key := fieldManagerKey{gvk: h.gvk, mode: modeScale, scale: true}
	var fm *fieldmanager.Manager
	if got, ok := fieldManagers.Load(key); ok {
		fm = got.(*fieldmanager.Manager)
	} else {
		built, err := fieldmanager.New(fieldmanager.Config{
			TypeConverter: fieldmanager.TypeConverterFor(h.res), Scheme: h.opts.Codecs.Scheme,
			Kind: scaleGVK, Subresource: "scale",
		})
		if err != nil {
			return nil, err
		}
		got, _ := fieldManagers.LoadOrStore(key, built)
		fm = got.(*fieldmanager.Manager)
	}
	mappings := managedfields.ResourcePathMappings{h.gvk.GroupVersion().String(): replicasPath}
	return func(old runtime.Object) (runtime.Object, error) {
		scale, err := h.res.Scale.Scale(old)
		if err != nil {
			return nil, err
		}
		scale.SetGroupVersionKind(scaleGVK)
		handler := managedfields.NewScaleHandler(accessor(old).GetManagedFields(), h.gvk.GroupVersion(), mappings)
		if scale.ManagedFields, err = handler.ToSubresource(); err != nil {
			return nil, fmt.Errorf("managed fields of the scale view: %w", err)
		}
		applied, err := fm.Apply(scale, body, manager, force)
		if err != nil {
			return nil, err
		}
		newScale, ok := applied.(*autoscalingv1.Scale)
		if !ok {
			return nil, fmt.Errorf("apply to /scale gave %T", applied)
		}
		entries, err := handler.ToParent(newScale.ManagedFields)
		if err != nil {
			return nil, fmt.Errorf("managed fields from the scale view: %w", err)
		}
		parent, err := h.applyScale(old, newScale, false)
		if err != nil {
			return nil, err
		}
		accessor(parent).SetManagedFields(entries)
		fieldmanager.KeepTimesIfUnchanged(old, parent)
		return parent, nil
	}, nil
}
