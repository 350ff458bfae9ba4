package admission

import (
	"errors"
	"fmt"
	"mime"

	admissionv1 "k8s.io/api/admission/v1"
	"k8s.io/apimachinery/pkg/types"
	utiljson "k8s.io/apimachinery/pkg/util/json"
)

// readResponse reads a webhook's HTTP answer to the review of uid as
// kube-apiserver's webhook client and dispatchers do. Any error is a
// failed call (the webhook's failurePolicy decides):
//   - a Content-Type that does not parse, an empty body (the status, one
//     of 200–206, was checked by webhookStatusError);
//   - a body that is not an AdmissionReview in JSON, keys matched
//     case-sensitively (a "Allowed" key is no answer to "allowed");
//   - no response, another uid, an apiVersion and kind other than
//     admission.k8s.io/v1 AdmissionReview, in that order;
//   - from a mutating webhook, a patch without a patchType, a patchType
//     without a patch or an empty one; from a validating one, either.
func readResponse(status int, contentType string, body []byte, uid types.UID, mutating bool) (*admissionv1.AdmissionResponse, error) {
	if contentType != "" {
		if _, _, err := mime.ParseMediaType(contentType); err != nil {
			return nil, fmt.Errorf("the webhook's Content-Type %q: %w", contentType, err)
		}
	}
	if len(body) == 0 {
		return nil, fmt.Errorf("0-length response with status code: %d", status)
	}
	out := &admissionv1.AdmissionReview{}
	if err := utiljson.Unmarshal(body, out); err != nil {
		return nil, fmt.Errorf("received invalid webhook response: %w", err)
	}
	r := out.Response
	if r == nil {
		return nil, errors.New("received invalid webhook response: webhook response was absent")
	}
	if r.UID != uid {
		return nil, fmt.Errorf("received invalid webhook response: expected response.uid=%q, got %q", uid, r.UID)
	}
	if out.APIVersion != "admission.k8s.io/v1" || out.Kind != "AdmissionReview" {
		return nil, fmt.Errorf("received invalid webhook response: expected webhook response of admission.k8s.io/v1, Kind=AdmissionReview, got %s, Kind=%s", out.APIVersion, out.Kind)
	}
	switch {
	case !mutating && len(r.Patch) > 0:
		return nil, errors.New("received invalid webhook response: validating webhook may not return response.patch")
	case !mutating && r.PatchType != nil:
		return nil, errors.New("received invalid webhook response: validating webhook may not return response.patchType")
	case len(r.Patch) > 0 && r.PatchType == nil:
		return nil, errors.New("received invalid webhook response: webhook returned response.patch but not response.patchType")
	case len(r.Patch) == 0 && r.PatchType != nil:
		return nil, errors.New("received invalid webhook response: webhook returned response.patchType but not response.patch")
	case r.PatchType != nil && *r.PatchType == "":
		return nil, errors.New(`received invalid webhook response: webhook returned invalid response.patchType of ""`)
	}
	return r, nil
}
