package endpoints

import (
	"encoding/json"
	"fmt"
	"net/http"
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

func (h *Handler) patch(w http.ResponseWriter, r *http.Request, info *request.Info, m mode) error {
	mt, _ := codec.ParseMediaType(r.Header.Get("Content-Type"))
	pt := types.PatchType(mt.Full())
	switch pt {
	case types.JSONPatchType, types.MergePatchType, types.StrategicMergePatchType, types.ApplyYAMLPatchType:
	default:
		return unsupportedMedia(fmt.Sprintf("the body of the request was in an unknown format - accepted media types include: %s", joinTypes()))
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
	var ops jsonpatch.Patch
	if pt == types.JSONPatchType {
		if ops, err = jsonpatch.DecodePatch(body); err != nil {
			return apierrors.NewBadRequest(err.Error())
		}
		if len(ops) > maxJSONPatchOperations {
			return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf(
				"The allowed maximum operations in a JSON patch is %d, got %d", maxJSONPatchOperations, len(ops)))
		}
		limitJSONPatchCopies()
	} else {
		var probe map[string]any
		if err := json.Unmarshal(body, &probe); err != nil {
			return apierrors.NewBadRequest(fmt.Sprintf("error decoding patch: %v", err))
		}
	}

	var warnings []string
	var transform transformFunc = func(old runtime.Object) (runtime.Object, error) {
		var cur runtime.Object
		want := h.gvk
		if m == modeScale {
			s, err := h.res.Scale.Scale(old)
			if err != nil {
				return nil, err
			}
			cur, want = s, scaleGVK
		} else {
			cur = old.DeepCopyObject()
		}
		cur.GetObjectKind().SetGroupVersionKind(want)
		orig, err := json.Marshal(cur)
		if err != nil {
			return nil, fmt.Errorf("encoding current object: %w", err)
		}
		var patched []byte
		switch pt {
		case types.JSONPatchType:
			if patched, err = ops.Apply(orig); err != nil {
				return nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", err.Error(), 0, false)
			}
		case types.MergePatchType:
			if patched, err = jsonpatch.MergePatch(orig, body); err != nil {
				return nil, apierrors.NewBadRequest(err.Error())
			}
		case types.StrategicMergePatchType:
			var schemaObj runtime.Object = h.res.New()
			if m == modeScale {
				schemaObj = &autoscalingv1.Scale{}
			}
			if patched, err = strategicpatch.StrategicMergePatch(orig, body, schemaObj); err != nil {
				return nil, strategicPatchError(err)
			}
		}
		var into runtime.Object = h.res.New()
		if m == modeScale {
			into = &autoscalingv1.Scale{}
		}
		jr := r.Clone(r.Context())
		jr.Header.Set("Content-Type", codec.JSON)
		obj, warns, err := h.decode(jr, patched, want, into, wo.fieldValidation)
		if err != nil {
			return nil, err
		}
		warnings = warns
		if m == modeScale {
			return h.applyScale(old, obj.(*autoscalingv1.Scale))
		}
		return obj, nil
	}
	transform, err = h.tracked(m, fieldmanager.ManagerName(params.fieldManager, r.UserAgent()), transform)
	if err != nil {
		return err
	}
	out, _, err := h.updateObject(r.Context(), info, m, transform, wo.dryRun, false)
	if err != nil {
		return err
	}
	resp, err := h.subresourceView(m, out)
	if err != nil {
		return err
	}
	addWarnings(w, warnings)
	writeRaw(w, target, http.StatusOK, resp)
	return nil
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
// kube-apiserver does: malformed patches are 400, impossible ones 422.
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
