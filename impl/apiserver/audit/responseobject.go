package audit

import "context"

// LogResponseObject says that the body the handler of ctx's request
// writes next is an API object encoded in the media type it negotiated
// (an object, a list, a Table, a discovery document, an error's Status),
// as kube-apiserver's responsewriters.WriteObjectNegotiated passes every
// such object to its LogResponseObject (k8s.io/apiserver pkg/audit
// request.go) before writing it. Only such a body is recorded: as the
// responseObject at the RequestResponse level, and, when it is a Status,
// as the responseStatus's status, message, reason and details at every
// level. Any other answer (/version, the OpenAPI documents, a watch's
// events, a 406 written as plain JSON, a proxied response) records its
// code alone, as kube-apiserver's audit filter takes it from WriteHeader.
// It does nothing when the request is not audited.
func LogResponseObject(ctx context.Context) {
	if rec := recorderFrom(ctx); rec != nil {
		rec.responseLogged.Store(true)
	}
}
