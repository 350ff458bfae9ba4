package admission

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	neturl "net/url"
	"reflect"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionv1beta1 "k8s.io/api/admission/v1beta1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/uuid"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// review builds the AdmissionReview a webhook receives.
func review(a *Attributes) (*admissionv1.AdmissionReview, error) {
	gvk := metav1.GroupVersionKind{Group: a.Kind.Group, Version: a.Kind.Version, Kind: a.Kind.Kind}
	gvr := metav1.GroupVersionResource{Group: a.Resource.Group, Version: a.Resource.Version, Resource: a.Resource.Resource}
	req := &admissionv1.AdmissionRequest{
		UID: uuid.NewUUID(), Kind: gvk, Resource: gvr, SubResource: a.Subresource,
		RequestKind: &gvk, RequestResource: &gvr, RequestSubResource: a.Subresource,
		Name: a.Name, Namespace: a.Namespace, Operation: admissionv1.Operation(a.Operation),
		DryRun: &a.DryRun,
	}
	if req.Name == "" && a.Object != nil {
		if m, err := meta.Accessor(a.Object); err == nil {
			req.Name = m.GetName()
		}
	}
	if u := a.User; u != nil {
		req.UserInfo = authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
		if len(u.Extra) > 0 {
			req.UserInfo.Extra = map[string]authenticationv1.ExtraValue{}
			for k, v := range u.Extra {
				req.UserInfo.Extra[k] = v
			}
		}
	}
	var err error
	if req.Object.Raw, err = encodeWithKind(a.Object, a.Kind); err != nil {
		return nil, err
	}
	if req.OldObject.Raw, err = encodeWithKind(a.OldObject, a.Kind); err != nil {
		return nil, err
	}
	if opts := operationOptions(a); opts != nil {
		if req.Options.Raw, err = json.Marshal(opts); err != nil {
			return nil, err
		}
	}
	return &admissionv1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: "admission.k8s.io/v1", Kind: "AdmissionReview"},
		Request:  req,
	}, nil
}

// operationOptions is the object a webhook receives as request.options,
// as kube-apiserver's handlers make it: the operation's options kind of
// meta.k8s.io/v1, kind and apiVersion set, encoded in the field order of
// its Go type (see RequestOptions); none for CONNECT.
func operationOptions(a *Attributes) runtime.Object {
	meta := func(kind string) metav1.TypeMeta { return metav1.TypeMeta{Kind: kind, APIVersion: "meta.k8s.io/v1"} }
	o := &a.Options
	dryRun := o.DryRun
	if dryRun == nil && a.DryRun {
		dryRun = []string{metav1.DryRunAll}
	}
	switch a.Operation {
	case Create:
		return &metav1.CreateOptions{TypeMeta: meta("CreateOptions"), DryRun: dryRun, FieldManager: o.FieldManager, FieldValidation: o.FieldValidation}
	case Update:
		return &metav1.UpdateOptions{TypeMeta: meta("UpdateOptions"), DryRun: dryRun, FieldManager: o.FieldManager, FieldValidation: o.FieldValidation}
	case Delete:
		if o.Delete == nil {
			return &metav1.DeleteOptions{TypeMeta: meta("DeleteOptions"), DryRun: dryRun}
		}
		d := *o.Delete
		d.TypeMeta = meta("DeleteOptions")
		return &d
	}
	return nil
}

// reviewFor is the review of a webhook called for va, the request req as
// an equivalent resource (matchPolicy Equivalent) or req itself:
// requestResource and requestKind stay the request's.
func reviewFor(va, req *Attributes) (*admissionv1.AdmissionReview, error) {
	rev, err := review(va)
	if err != nil || va == req {
		return rev, err
	}
	rev.Request.RequestKind = &metav1.GroupVersionKind{Group: req.Kind.Group, Version: req.Kind.Version, Kind: req.Kind.Kind}
	rev.Request.RequestResource = &metav1.GroupVersionResource{Group: req.Resource.Group, Version: req.Resource.Version, Resource: req.Resource.Resource}
	return rev, nil
}

// encodeWithKind is obj's JSON with apiVersion and kind set.
func encodeWithKind(obj runtime.Object, gvk schema.GroupVersionKind) ([]byte, error) {
	if obj == nil || reflect.ValueOf(obj).IsNil() {
		return nil, nil
	}
	c := obj.DeepCopyObject()
	c.GetObjectKind().SetGroupVersionKind(gvk)
	b, err := json.Marshal(c)
	if err != nil {
		return nil, fmt.Errorf("encoding the object for webhooks: %w", err)
	}
	return b, nil
}

// call sends the review to the webhook, in the first of its
// admissionReviewVersions the server speaks, and returns its response.
// As kube-apiserver's dispatchers, the review is made before the client
// (a webhook taking no known version fails first with that).
func (d *webhookDispatcher) call(ctx context.Context, w webhook, rev *admissionv1.AdmissionReview) (*admissionv1.AdmissionResponse, error) {
	if w.invalid != nil {
		return nil, w.invalid
	}
	version, body, err := encodeReview(w.reviewVersions, rev)
	if err != nil {
		return nil, fmt.Errorf("could not create admission objects: %w", err)
	}
	client, url, err := d.clientFor(&w.clientConfig)
	if err != nil {
		return nil, fmt.Errorf("could not get REST client: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, w.timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, url, bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	if deadline, ok := ctx.Deadline(); ok {
		setTimeoutParam(req.URL, time.Until(deadline))
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	defer resp.Body.Close()
	// The whole answer, however long, as client-go reads it.
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("failed to read the webhook's response: %w", err)
	}
	if err := webhookStatusError(resp.StatusCode, resp.Header.Get("Content-Type"), data); err != nil {
		return nil, fmt.Errorf("failed to call webhook: %w", err)
	}
	return readResponse(resp.StatusCode, resp.Header.Get("Content-Type"), data, rev.Request.UID, w.mutating, version)
}

// clientFor is the client a webhook is called with, and its URL.
func (d *webhookDispatcher) clientFor(cc *admissionregistrationv1.WebhookClientConfig) (*http.Client, string, error) {
	switch {
	case cc.Service != nil:
		client, err := d.clients.get(cc.CABundle, cc.Service, d.services)
		return client, serviceURL(cc.Service), err
	case cc.URL != nil:
		client, err := d.clients.getURL(cc.CABundle, *cc.URL, d.loopback)
		return client, *cc.URL, err
	}
	return nil, "", errors.New("webhook configuration must have either service or URL")
}

// The AdmissionReview versions a webhook may be sent, as
// admissionReviewVersions names them.
const (
	reviewV1      = "v1"
	reviewV1beta1 = "v1beta1"
)

// encodeReview is the review as the webhook is sent it: in the first of
// versions that is v1 or v1beta1 (the same request, apiVersion
// admission.k8s.io/v1beta1); none of them is an error, as
// kube-apiserver's.
func encodeReview(versions []string, rev *admissionv1.AdmissionReview) (string, []byte, error) {
	for _, v := range versions {
		switch v {
		case reviewV1:
			body, err := json.Marshal(rev)
			return v, body, err
		case reviewV1beta1:
			body, err := json.Marshal(v1beta1Review(rev))
			return v, body, err
		}
	}
	return "", nil, errors.New("webhook does not accept known AdmissionReview versions (v1, v1beta1)")
}

// v1beta1Review is rev as an admission.k8s.io/v1beta1 AdmissionReview,
// whose request has the same fields.
func v1beta1Review(rev *admissionv1.AdmissionReview) *admissionv1beta1.AdmissionReview {
	r := rev.Request
	return &admissionv1beta1.AdmissionReview{
		TypeMeta: metav1.TypeMeta{APIVersion: admissionv1beta1.SchemeGroupVersion.String(), Kind: "AdmissionReview"},
		Request: &admissionv1beta1.AdmissionRequest{
			UID: r.UID, Kind: r.Kind, Resource: r.Resource, SubResource: r.SubResource,
			RequestKind: r.RequestKind, RequestResource: r.RequestResource, RequestSubResource: r.RequestSubResource,
			Name: r.Name, Namespace: r.Namespace, Operation: admissionv1beta1.Operation(r.Operation),
			UserInfo: r.UserInfo, Object: r.Object, OldObject: r.OldObject, DryRun: r.DryRun, Options: r.Options,
		},
	}
}

// setTimeoutParam tells the webhook the time left to its call, as
// kube-apiserver's dispatchers do: a timeout query parameter of the time
// rounded up to whole seconds (none once it has run out).
func setTimeoutParam(u *neturl.URL, left time.Duration) {
	if left <= 0 {
		return
	}
	if whole := left.Truncate(time.Second); whole != left {
		left = whole + time.Second
	}
	q := u.Query()
	q.Set("timeout", left.String())
	u.RawQuery = q.Encode()
}

// errRequestEnded is kube-apiserver's dispatchers' error for a request
// whose context ended before its webhooks were done: a 504 Timeout.
func errRequestEnded() error {
	return apierrors.NewTimeoutError("request did not complete within requested timeout", 0)
}

// callFailed applies the webhook's failure policy to a failed call.
func (d *webhookDispatcher) callFailed(w webhook, err error) error {
	if w.failurePolicy == admissionregistrationv1.Ignore {
		d.log.Debug("admission webhook failed; ignored by its failurePolicy", "webhook", w.name, "err", err)
		return nil
	}
	return apierrors.NewInternalError(fmt.Errorf("failed calling webhook %q: %w", w.name, err))
}

// denied is a webhook's refusal as the client sees it.
func denied(name string, result *metav1.Status) *apierrors.StatusError {
	st := metav1.Status{Status: metav1.StatusFailure}
	if result != nil {
		st = *result.DeepCopy()
	}
	if st.Code < http.StatusBadRequest {
		st.Code = http.StatusBadRequest
	}
	if st.Status == "" || st.Status == metav1.StatusSuccess {
		st.Status = metav1.StatusFailure
	}
	deniedBy := fmt.Sprintf("admission webhook %q denied the request", name)
	switch {
	case st.Message != "":
		st.Message = deniedBy + ": " + st.Message
	case st.Reason != "":
		st.Message = deniedBy + ": " + string(st.Reason)
	default:
		st.Message = deniedBy + " without explanation"
	}
	return &apierrors.StatusError{ErrStatus: st}
}

// addResponseWarnings passes a webhook's warnings to the client and its
// audit annotations (as "<webhook name>/<key>") to the audit log.
func addResponseWarnings(ctx context.Context, name string, resp *admissionv1.AdmissionResponse) {
	for _, w := range resp.Warnings {
		request.AddWarning(ctx, w)
	}
	for k, v := range resp.AuditAnnotations {
		audit.AddAnnotation(ctx, name+"/"+k, v)
	}
}
