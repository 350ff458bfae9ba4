package admission

import (
	"errors"
	"fmt"
	"mime"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	"k8s.io/apimachinery/pkg/types"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
)

// reviewDecoder decodes a webhook's answer as kube-apiserver's webhook
// client does, whatever media type the answer names: its codec recognizes
// JSON, YAML and protobuf, matches keys case-sensitively, takes a missing
// apiVersion or kind as admission.k8s.io/v1 AdmissionReview's and fails
// on any other kind (a v1beta1 review does not convert to v1).
var reviewDecoder = func() runtime.Decoder {
	scheme := runtime.NewScheme()
	utilruntime.Must(admissionv1beta1.AddToScheme(scheme))
	utilruntime.Must(admissionv1.AddToScheme(scheme))
	return serializer.NewCodecFactory(scheme).LegacyCodec(admissionv1beta1.SchemeGroupVersion, admissionv1.SchemeGroupVersion)
}()

// readResponse reads a webhook's HTTP answer to the review of uid, sent
// in version (reviewV1 or reviewV1beta1), as kube-apiserver's webhook
// client and dispatchers do. Any error is a failed call (the webhook's
// failurePolicy decides):
//   - client-go's ("failed to call webhook: ..."): a Content-Type that
//     does not parse, an empty body (the status, one of 200–206, was
//     checked by webhookStatusError), a body reviewDecoder does not
//     decode into an AdmissionReview of the version sent (one of the
//     other version does not convert);
//   - the dispatcher's ("received invalid webhook response: ..."): no
//     response; for v1, another uid, an apiVersion and kind other than
//     admission.k8s.io/v1 AdmissionReview, in that order; from a mutating
//     webhook, a patch without a patchType, a patchType without a patch or
//     an empty one; from a validating one, either.
//
// A v1beta1 answer is read as upstream reads that version: its uid and
// type are not checked, a mutating webhook's patch is a JSONPatch
// whatever patchType says (a patchType alone is dropped), and a
// validating webhook's patch and patchType are dropped.
func readResponse(status int, contentType string, body []byte, uid types.UID, mutating bool, version string) (*admissionv1.AdmissionResponse, error) {
	if contentType == "" {
		// client-go takes an answer without one as of the type it sent.
		contentType = "application/json"
	}
	if _, _, err := mime.ParseMediaType(contentType); err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", apierrors.NewInternalError(err))
	}
	if len(body) == 0 {
		return nil, fmt.Errorf("failed to call webhook: 0-length response with status code: %d and content type: %s", status, contentType)
	}
	if version == reviewV1beta1 {
		return readV1beta1Response(body, mutating)
	}
	out := &admissionv1.AdmissionReview{}
	if _, _, err := reviewDecoder.Decode(body, nil, out); err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	r := out.Response
	if r == nil {
		return nil, errors.New("received invalid webhook response: webhook response was absent")
	}
	if r.UID != uid {
		return nil, fmt.Errorf("received invalid webhook response: expected response.uid=%q, got %q", uid, r.UID)
	}
	if want := admissionv1.SchemeGroupVersion.WithKind("AdmissionReview"); out.GroupVersionKind() != want {
		return nil, fmt.Errorf("received invalid webhook response: expected webhook response of %s, got %s", want, out.GroupVersionKind())
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

// readV1beta1Response reads a v1beta1 answer's body (readResponse).
func readV1beta1Response(body []byte, mutating bool) (*admissionv1.AdmissionResponse, error) {
	out := &admissionv1beta1.AdmissionReview{}
	if _, _, err := reviewDecoder.Decode(body, nil, out); err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	r := out.Response
	if r == nil {
		return nil, errors.New("received invalid webhook response: webhook response was absent")
	}
	resp := &admissionv1.AdmissionResponse{UID: r.UID, Allowed: r.Allowed, Result: r.Result,
		AuditAnnotations: r.AuditAnnotations, Warnings: r.Warnings}
	if mutating && len(r.Patch) > 0 {
		jsonPatch := admissionv1.PatchTypeJSONPatch
		resp.Patch, resp.PatchType = r.Patch, &jsonPatch
	}
	return resp, nil
}
