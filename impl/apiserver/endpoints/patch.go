package endpoints

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"

	jsonpatch "gopkg.in/evanphx/json-patch.v4"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/mergepatch"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	"k8s.io/apimachinery/pkg/util/validation/field"
	kjson "sigs.k8s.io/json"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/fieldmanager"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// maxJSONPatchOperations bounds a JSON patch's length, as kube-apiserver
// does.
const maxJSONPatchOperations = 10000

var copyLimitOnce sync.Once

// limitJSONPatchCopies bounds how much "copy" operations may grow a
// document (the library's limit is a package setting, unlimited by
// default): without it, a few hundred copies of a growing subtree exhaust
// memory.
func limitJSONPatchCopies() {
	copyLimitOnce.Do(func() {
		if jsonpatch.AccumulatedCopySizeLimit == 0 {
			jsonpatch.AccumulatedCopySizeLimit = 3 << 20
		}
	})
}

// patchTypes are the patch media types served, in the order errors list
// them. CBOR apply patches are behind a feature gate in Kubernetes, off by
// default; they are not served.
var patchTypes = []string{string(types.JSONPatchType), string(types.MergePatchType), string(types.StrategicMergePatchType), string(types.ApplyYAMLPatchType)}

// patchTypeOf is the patch type r's Content-Type names, or the 415 of a
// type that is no patch.
func patchTypeOf(r *http.Request) (types.PatchType, error) {
	mt, _ := codec.ParseMediaType(r.Header.Get("Content-Type"))
	pt := types.PatchType(mt.Full())
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType:
		return pt, nil
	}
	return "", unsupportedMedia(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", joinTypes()))
}

func (h *Handler) patch(w http.ResponseWriter, r *http.Request, info *request.Info, m mode) error {
	pt, err := patchTypeOf(r)
	if err != nil {
		return err
	}
	wo, target, body, err := h.readWrite(w, r, "PatchOptions")
	if err != nil {
		return err
	}
	params, err := parseManagerParams(r, "PatchOptions", pt)
	if err != nil {
		return err
	}
	if pt == types.ApplyYAMLPatchType {
		return h.apply(w, r, info, m, wo, target, body, params)
	}
	// The patch is decoded, as kube-apiserver decodes it, once the object
	// is read (a malformed patch of an object that does not exist is a
	// 404): JSON patch operations and a merge patch's check once, a
	// strategic merge patch on every try (merging consumes it).
	var (
		ops     jsonpatch.Patch
		checked bool
		// patchStrict are the strict decoding errors of the patch
		// itself (a field written twice; a field a JSON patch operation
		// does not have), under Strict and Warn.
		patchStrict []error
	)
	decodePatch := func() (smp map[string]any, err error) {
		switch pt {
		case types.JSONPatchType:
			if checked {
				return nil, nil
			}
			if wo.fieldValidation != metav1.FieldValidationIgnore {
				if patchStrict, err = decodeJSONPatchStrict(body); err != nil {
					return nil, err
				}
			}
			if ops, err = jsonpatch.DecodePatch(body); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
			if len(ops) > maxJSONPatchOperations {
				return nil, apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
					"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
			}
			limitJSONPatchCopies()
		case types.MergePatchType:
			// A merge patch is checked first unless fieldValidation is
			// Ignore; then the merge takes anything that is JSON (a list
			// or a number replaces the whole object, which then does not
			// decode: a 422).
			if checked || wo.fieldValidation == metav1.FieldValidationIgnore {
				return nil, nil
			}
			var probe map[string]any
			if patchStrict, err = kjson.UnmarshalStrict(body, &probe); err != nil {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
			}
		case types.StrategicMergePatchType:
			if smp, patchStrict, err = decodeStrategicPatch(body, wo.fieldValidation); err != nil {
				return nil, err
			}
		}
		checked = true
		return smp, nil
	}

	var transform transformFunc = func(old runtime.Object) (runtime.Object, error) {
		cur, want := old, h.gvk
		var into runtime.Object
		if m == modeScale {
			s, err := h.res.Scale.Scale(old)
			if err != nil {
				return nil, err
			}
			cur, want, into = s, scaleGVK, &autoscalingv1.Scale{}
		} else {
			into = h.res.New()
		}
		smp, err := decodePatch()
		if err != nil {
			return nil, err
		}
		var obj runtime.Object
		var warnings []string
		if pt == types.StrategicMergePatchType {
			obj, warnings, err = strategicMerge(cur, want, smp, patchStrict, into, wo.fieldValidation)
		} else {
			obj, warnings, err = h.jsonPatch(r, cur, want, pt, ops, body, patchStrict, into, wo.fieldValidation)
		}
		if err != nil {
			return nil, err
		}
		// Every attempt's warnings are recorded; the request's
		// collector keeps each text once.
		recordWarnings(r, warnings)
		if m == modeScale {
			return h.applyScale(old, obj.(*autoscalingv1.Scale), false)
		}
		return obj, nil
	}
	transform, err = h.tracked(m, fieldmanager.ManagerName(params.fieldManager, r.UserAgent()), transform)
	if err != nil {
		return err
	}
	out, _, err := h.updateObject(r.Context(), info, m, transform, wo.admission, false)
	if err != nil {
		return err
	}
	done := transformTimer(target)
	resp, err := h.subresourceView(m, out)
	done()
	if err != nil {
		return err
	}
	writeResponse(w, r, target, http.StatusOK, resp)
	return nil
}

// jsonPatch applies a JSON or merge patch to cur (which it does not
// change) and decodes the result into into, as a kind want. A result that
// does not decode is kube-apiserver's 422 naming the patched object
// (invalidPatch); one naming want's kind in another served version is
// converted (convertPatched); the patch's own strict errors (patchStrict)
// and the result's unknown fields are strictDecoding's.
func (h *Handler) jsonPatch(r *http.Request, cur runtime.Object, want schema.GroupVersionKind, pt types.PatchType,
	ops jsonpatch.Patch, body []byte, patchStrict []error, into runtime.Object, fv string) (runtime.Object, []string, error) {
	if cur.GetObjectKind().GroupVersionKind() != want {
		// The stored object may be shared (watch cache).
		cur = cur.DeepCopyObject()
		cur.GetObjectKind().SetGroupVersionKind(want)
	}
	orig, err := json.Marshal(cur)
	if err != nil {
		return nil, nil, fmt.Errorf("encoding current object: %w", err)
	}
	var patched []byte
	switch pt {
	case types.JSONPatchType:
		if patched, err = applyJSONPatch(ops, orig); err != nil {
			return nil, nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
		}
	case types.MergePatchType:
		if patched, err = jsonpatch.MergePatch(orig, body); err != nil {
			return nil, nil, apierrors.NewBadRequest(err.Error())
		}
	default:
		return nil, nil, fmt.Errorf("applying a %s patch as JSON: not a JSON or merge patch", pt)
	}
	jr := r.Clone(r.Context())
	jr.Header.Set("Content-Type", codec.JSON)
	// Under Strict too the result's unknown fields come back as warnings,
	// to be reported with the patch's own (strictDecoding).
	dfv := fv
	if dfv == metav1.FieldValidationStrict {
		dfv = metav1.FieldValidationWarn
	}
	d, err := h.decodeBody(jr, patched, want, into, dfv)
	if err != nil {
		return nil, nil, err
	}
	// A result that does not decode is refused with the decoder's own
	// error (another kind: upstream's failed conversion), not the create
	// handler's wording.
	if d.err != nil {
		return nil, nil, invalidPatch(string(patched), d.err.Error())
	}
	obj, unknown := d.obj, d.warnings
	if d.gvk.GroupVersion() != want.GroupVersion() {
		if obj, err = h.convertPatched(d.obj, *d.gvk, want); err != nil {
			return nil, nil, invalidPatch(string(patched), err.Error())
		}
	}
	warnings, err := strictDecoding(fv, string(patched), patchStrict, unknown)
	if err != nil {
		return nil, nil, err
	}
	return obj, warnings, nil
}

// convertPatched converts obj, a JSON or merge patch's result decoded as
// kind from (want's kind in another group version), to want, as
// kube-apiserver's codec converts it through the internal type: possible
// where a served resource of kind from shares this resource's storage
// (Options.ConvertFrom). Upstream also converts versions it no longer
// serves (apps/v1beta2 Deployments); this server cannot, and refuses
// them with the API version mismatch.
func (h *Handler) convertPatched(obj runtime.Object, from, want schema.GroupVersionKind) (runtime.Object, error) {
	if h.opts.ConvertFrom != nil && want == h.gvk {
		out, ok, err := h.opts.ConvertFrom(obj, from, h.res.GroupVersionResource())
		if err != nil {
			return nil, fmt.Errorf("converting the patched %s to %s: %w", from, want, err)
		}
		if ok {
			return out, nil
		}
	}
	return nil, apiVersionMismatch(from.GroupVersion(), want.GroupVersion())
}

// jsonPatchOp is a JSON patch operation as kube-apiserver decodes it to
// check its fields (the patch library reads operations as maps).
type jsonPatchOp struct {
	Op    string `json:"op"`
	Path  string `json:"path"`
	From  string `json:"from"`
	Value any    `json:"value"`
}

// decodeJSONPatchStrict decodes a JSON patch's operations strictly, as
// kube-apiserver does under fieldValidation Strict and Warn: a field an
// operation does not have, or has twice, is a strict error ("json patch
// unknown field ..."); operations that do not decode are a 400 "error
// decoding patch: ...", whose Go type is named as upstream's
// (handlers.jsonPatchOp).
func decodeJSONPatchStrict(body []byte) ([]error, error) {
	var ops []jsonPatchOp
	strict, err := kjson.UnmarshalStrict(body, &ops)
	if err != nil {
		msg := strings.ReplaceAll(err.Error(), "endpoints.jsonPatchOp", "handlers.jsonPatchOp")
		return nil, apierrors.NewBadRequest("error decoding patch: " + msg)
	}
	for i, e := range strict {
		strict[i] = fmt.Errorf("json patch %w", e)
	}
	return strict, nil
}

// decodeStrategicPatch decodes a strategic merge patch as kube-apiserver
// does: numbers as int64 where whole, else float64, and under Strict and
// Warn strictly (a field written twice is a strict error, returned
// apart); a body that is not a JSON object is a 400.
func decodeStrategicPatch(body []byte, fv string) (map[string]any, []error, error) {
	var patch map[string]any
	var strict []error
	var err error
	if fv == metav1.FieldValidationIgnore {
		err = kjson.UnmarshalCaseSensitivePreserveInts(body, &patch)
	} else {
		strict, err = kjson.UnmarshalStrict(body, &patch)
	}
	if err != nil {
		return nil, nil, apierrors.NewBadRequest(err.Error())
	}
	return patch, strict, nil
}

// strictDecoding is kube-apiserver's handling of a patch's strict
// decoding errors, those of the patch itself (patchStrict) before those
// of its result (unknown): under Strict one 422 naming value
// (invalidPatch), under Warn warnings.
func strictDecoding(fv, value string, patchStrict []error, unknown []string) ([]string, error) {
	if len(patchStrict) == 0 && (len(unknown) == 0 || fv != metav1.FieldValidationStrict) {
		return unknown, nil
	}
	if fv == metav1.FieldValidationStrict {
		errs := patchStrict
		for _, u := range unknown {
			errs = append(errs, errors.New(u))
		}
		return nil, invalidPatch(value, runtime.NewStrictDecodingError(errs).Error())
	}
	warnings := make([]string, 0, len(patchStrict)+len(unknown))
	for _, e := range patchStrict {
		warnings = append(warnings, strictWarnings(e.Error())...)
	}
	return append(warnings, unknown...), nil
}

// strategicMerge applies a strategic merge patch to cur (which it does not
// change) and decodes the merged map into into as a kind want, as
// kube-apiserver does: from the map, not from JSON, so that the
// converter's rules and errors apply (a whole number written as 5.0 fits
// an integer field; a string in one is "unrecognized type: int64"). A
// result that does not decode is a 422 naming the patch (invalidPatch);
// the patch's own strict errors (patchStrict) and the result's unknown
// fields are strictDecoding's. The patch is consumed.
func strategicMerge(cur runtime.Object, want schema.GroupVersionKind, patch map[string]any, patchStrict []error, into runtime.Object, fv string) (runtime.Object, []string, error) {
	orig, err := runtime.DefaultUnstructuredConverter.ToUnstructured(cur)
	if err != nil {
		return nil, nil, fmt.Errorf("converting current object for a strategic merge patch: %w", err)
	}
	orig["apiVersion"], orig["kind"] = want.GroupVersion().String(), want.Kind
	// into is an empty object of the kind: the schema of the merge.
	dropUnhashableRetainKeys(patch)
	merged, err := strategicpatch.StrategicMergeMapPatch(orig, patch, into)
	if err != nil {
		return nil, nil, strategicPatchError(err)
	}
	var unknown []string
	returnUnknown := fv == metav1.FieldValidationWarn || fv == metav1.FieldValidationStrict
	if err := runtime.DefaultUnstructuredConverter.FromUnstructuredWithValidation(merged, into, returnUnknown); err != nil {
		strict, ok := runtime.AsStrictDecodingError(err)
		if !ok {
			return nil, nil, invalidPatch(fmt.Sprintf("%+v", patch), err.Error())
		}
		for _, e := range strict.Errors() {
			unknown = append(unknown, e.Error())
		}
	}
	var warnings []string
	if len(patchStrict) > 0 || len(unknown) > 0 { // the patch formatted only then
		if warnings, err = strictDecoding(fv, fmt.Sprintf("%+v", patch), patchStrict, unknown); err != nil {
			return nil, nil, err
		}
	}
	// kube-apiserver converts the result by its Go type: a kind or
	// apiVersion the patch wrote is ignored.
	into.GetObjectKind().SetGroupVersionKind(want)
	return into, warnings, nil
}

// invalidPatch is kube-apiserver's answer to a patch whose result is not
// an object of the kind (a value of the wrong type; under
// fieldValidation=Strict, an unknown field): 422 Invalid without kind or
// name, one cause on the field "patch" whose value is the patched object
// (JSON and merge patches) or the patch (strategic merge patches) and
// whose detail is the decoder's error.
func invalidPatch(value, detail string) error {
	return apierrors.NewInvalid(schema.GroupKind{}, "", field.ErrorList{field.Invalid(field.NewPath("patch"), value, detail)})
}

func joinTypes() string {
	s := ""
	for i, t := range patchTypes {
		if i > 0 {
			s += ", "
		}
		s += t
	}
	return s
}

func unsupportedMedia(msg string) error {
	return &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusUnsupportedMediaType,
		Reason: metav1.StatusReasonUnsupportedMediaType, Message: msg,
	}}
}

// strategicPatchError classifies strategic merge patch errors as
// kube-apiserver does: malformed patches are 400, impossible ones 422. The
// library's other errors (e.g. a list mixing numbers with the objects it
// holds) kube-apiserver hands up unclassified, a 500; they are the
// client's mistake, and a 400 here.
func strategicPatchError(err error) error {
	switch err {
	case mergepatch.ErrBadJSONDoc, mergepatch.ErrBadPatchFormatForPrimitiveList, mergepatch.ErrBadPatchFormatForRetainKeys,
		mergepatch.ErrBadPatchFormatForSetElementOrderList, mergepatch.ErrUnsupportedStrategicMergePatchFormat:
		return apierrors.NewBadRequest(err.Error())
	case mergepatch.ErrNoListOfLists, mergepatch.ErrPatchContentNotMatchRetainKeys:
		return apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
	}
	return apierrors.NewBadRequest(err.Error())
}
