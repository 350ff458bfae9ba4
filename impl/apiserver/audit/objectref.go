package audit

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LogRequestObject completes the objectRef of the audited request ctx
// belongs to from the metadata of the object its body decoded to, as
// kube-apiserver's create and update handlers do once the body is decoded
// (before admission, so a generateName create has no name yet): the
// namespace, name, uid and resourceVersion the request's path left empty
// are taken from obj. Events of the stages already recorded
// (RequestReceived) keep the path's. From then on the request body is
// recorded at the Request level and above. It does nothing when the
// request is not audited or obj is nil. The policy has matched the request
// by then: a rule's resourceNames see only the path's name.
func LogRequestObject(ctx context.Context, obj metav1.Object) {
	rec := recorderFrom(ctx)
	if rec == nil || obj == nil {
		return
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
}

// LogRequestBody marks the request body of the audited request ctx belongs
// to as decoded, for a body that is no object with metadata: a delete's
// or deletecollection's once it decoded to DeleteOptions, as
// kube-apiserver's delete handlers log it. From then on the body is
// recorded at the Request level and above; one that did not decode is
// not. It does nothing when the request is not audited.
func LogRequestBody(ctx context.Context) {
	rec := recorderFrom(ctx)
	if rec == nil {
		return
	}
	rec.mu.Lock()
	rec.objectLogged = true
	rec.mu.Unlock()
}
