package audit

import (
	"context"
	"encoding/json"
	"log/slog"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// RequestObjectEncoder encodes the object a request's body decoded to as
// the audit event records it: JSON, in the body's group version, without
// metadata.managedFields when omitManagedFields is set.
type RequestObjectEncoder func(omitManagedFields bool) ([]byte, error)

// LogRequestObject completes the objectRef of the audited request ctx
// belongs to from the metadata of the object its body decoded to, as
// kube-apiserver's create and update handlers do once the body is decoded
// (before admission, so a generateName create has no name yet): the
// namespace, name, uid and resourceVersion the request's path left empty
// are taken from obj. Events of the stages already recorded
// (RequestReceived) keep the path's. From then on, at the Request level
// and above, the requestObject is what encode returns (kube-apiserver
// records the decoded object encoded again, not the body as sent, so a
// protobuf body is recorded too); encode is not called below that level.
// When it fails, as kube-apiserver's, neither the objectRef nor the
// requestObject is recorded. It does nothing when the request is not
// audited or obj is nil. The policy has matched the request by then: a
// rule's resourceNames see only the path's name.
func LogRequestObject(ctx context.Context, obj metav1.Object, encode RequestObjectEncoder) {
	rec := recorderFrom(ctx)
	if rec == nil || obj == nil {
		return
	}
	var encoded json.RawMessage
	if !rec.decision.Level.Less(LevelRequest) && encode != nil {
		js, err := encode(rec.decision.OmitManagedFields)
		if err != nil {
			slog.Error("encoding the audited request object", "auditID", rec.ev.AuditID, "err", err)
			return
		}
		encoded = js
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	// Events already emitted share the old reference: fill a copy.
	var ref ObjectReference
	if rec.ev.ObjectRef != nil {
		ref = *rec.ev.ObjectRef
	}
	if ref.Namespace == "" {
		ref.Namespace = obj.GetNamespace()
	}
	if ref.Name == "" {
		ref.Name = obj.GetName()
	}
	if ref.UID == "" {
		ref.UID = obj.GetUID()
	}
	if ref.ResourceVersion == "" {
		ref.ResourceVersion = obj.GetResourceVersion()
	}
	rec.ev.ObjectRef = &ref
	rec.objectLogged = true
	rec.requestObject = encoded
}

// LogRequestOptions records the options a delete's or deletecollection's
// body decoded to as the requestObject of the audited request ctx belongs
// to, as kube-apiserver's delete handlers log the decoded DeleteOptions:
// from then on, at the Request level and above, the requestObject is what
// encode returns (the options encoded again, so a protobuf body is
// recorded too); encode is not called below that level, and when it
// fails nothing is recorded. The objectRef stays the path's
// (DeleteOptions has no metadata). A body that did not decode, and a
// delete without a body, are not logged. It does nothing when the
// request is not audited.
func LogRequestOptions(ctx context.Context, encode RequestObjectEncoder) {
	rec := recorderFrom(ctx)
	if rec == nil {
		return
	}
	var encoded json.RawMessage
	if !rec.decision.Level.Less(LevelRequest) && encode != nil {
		js, err := encode(rec.decision.OmitManagedFields)
		if err != nil {
			slog.Error("encoding the audited request options", "auditID", rec.ev.AuditID, "err", err)
			return
		}
		encoded = js
	}
	rec.mu.Lock()
	rec.objectLogged = true
	rec.requestObject = encoded
	rec.mu.Unlock()
}
