package apiserver

import (
	"errors"
	"fmt"
	"io"
	"net/http"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
)

// Virtual resources: create-only endpoints that compute an answer and
// store nothing, as kube-apiserver's reviews (authorization.k8s.io
// SubjectAccessReview and friends, authentication.k8s.io TokenReview and
// SelfSubjectReview) and the serviceaccounts/token subresource
// (TokenRequest). They are listed in discovery with the single verb
// "create".

// virtualResource is one review endpoint.
type virtualResource struct {
	gvr        schema.GroupVersionResource
	kind       string
	namespaced bool
	newObj     func() runtime.Object
	// serve computes the response object from the decoded request.
	serve func(s *Server, r *http.Request, info *request.Info, in runtime.Object) (runtime.Object, error)
}

func (s *Server) virtualResources() []virtualResource {
	authz := authorizationv1.SchemeGroupVersion
	authn := authenticationv1.SchemeGroupVersion
	out := []virtualResource{
		{authz.WithResource("selfsubjectaccessreviews"), "SelfSubjectAccessReview", false,
			func() runtime.Object { return &authorizationv1.SelfSubjectAccessReview{} }, (*Server).selfSubjectAccessReview},
		{authz.WithResource("subjectaccessreviews"), "SubjectAccessReview", false,
			func() runtime.Object { return &authorizationv1.SubjectAccessReview{} }, (*Server).subjectAccessReview},
		{authz.WithResource("localsubjectaccessreviews"), "LocalSubjectAccessReview", true,
			func() runtime.Object { return &authorizationv1.LocalSubjectAccessReview{} }, (*Server).localSubjectAccessReview},
		{authn.WithResource("selfsubjectreviews"), "SelfSubjectReview", false,
			func() runtime.Object { return &authenticationv1.SelfSubjectReview{} }, (*Server).selfSubjectReview},
		{authn.WithResource("tokenreviews"), "TokenReview", false,
			func() runtime.Object { return &authenticationv1.TokenReview{} }, (*Server).tokenReview},
	}
	if auth.ListsRules(s.authorizer) {
		out = append(out, virtualResource{authz.WithResource("selfsubjectrulesreviews"), "SelfSubjectRulesReview", false,
			func() runtime.Object { return &authorizationv1.SelfSubjectRulesReview{} }, (*Server).selfSubjectRulesReview})
	}
	return out
}

// discoveryResource is how discovery lists a virtual resource.
func (v virtualResource) discoveryResource() *resource.Resource {
	return &resource.Resource{
		GroupVersion: v.gvr.GroupVersion(), Name: v.gvr.Resource, Kind: v.kind,
		Namespaced: v.namespaced, Verbs: []string{"create"},
	}
}

// serveVirtual serves the request if it addresses a virtual resource and
// reports whether it did.
func (s *Server) serveVirtual(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion, info *request.Info) bool {
	if s.serveTokenRequest(w, r, gv, info) {
		return true
	}
	v, ok := s.virtual[gv.WithResource(info.Resource)]
	if !ok {
		return false
	}
	gr := v.gvr.GroupResource()
	switch {
	case info.Name != "" || info.Subresource != "" || (v.namespaced != (info.Namespace != "")):
		// Only the collection is served (POST /…/<resource>).
		s.notFound(w, r)
	case info.Verb != "create":
		endpoints.WriteStatusError(w, r, s.codecs, endpoints.MethodNotAllowed())
	default:
		// A review is decoded as any create: its options are checked
		// before the body is read, and fieldValidation (Warn by default)
		// applies to its unknown and duplicate fields, whose warnings go
		// out as Warning headers.
		w, r = endpoints.CollectWarnings(w, r)
		_, fieldValidation, err := endpoints.CreateOptions(r)
		if err != nil {
			endpoints.WriteError(w, r, s.codecs, err, gr, "")
			return true
		}
		in := v.newObj()
		if err := s.readObject(w, r, v.gvr.GroupVersion().WithKind(v.kind), in, nil, fieldValidation); err != nil {
			endpoints.WriteError(w, r, s.codecs, err, gr, "")
			return true
		}
		wipeSystemFields(in)
		if err := matchRequestNamespace(in, v.namespaced, info.Namespace); err != nil {
			endpoints.WriteError(w, r, s.codecs, err, gr, "")
			return true
		}
		out, err := v.serve(s, r, info, in)
		if err != nil {
			endpoints.WriteError(w, r, s.codecs, err, gr, "")
			return true
		}
		s.writeObject(w, r, http.StatusCreated, out, v.gvr.GroupVersion())
	}
	return true
}

// wipeSystemFields clears the metadata the server owns (creation
// timestamp, uid, deletion timestamp and grace period, selfLink) from a
// review's body, as kube-apiserver's create handler does before its REST
// sees a top-level object: a review echoing such fields is answered, not
// refused by its empty-metadata validation. (serviceaccounts/token,
// served by serveTokenRequest, keeps them, as upstream's TokenRequest
// subresource asks its handler to.)
func wipeSystemFields(obj runtime.Object) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return
	}
	m.SetCreationTimestamp(metav1.Time{})
	m.SetUID("")
	m.SetDeletionTimestamp(nil)
	m.SetDeletionGracePeriodSeconds(nil)
	m.SetSelfLink("")
}

// matchRequestNamespace gives obj the request's namespace as
// kube-apiserver's create handler does before its REST sees the object:
// a cluster-scoped object's namespace is cleared, a namespaced object
// without one takes the request's, and one naming another namespace is a
// 400.
func matchRequestNamespace(obj runtime.Object, namespaced bool, ns string) error {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil
	}
	switch {
	case !namespaced:
		m.SetNamespace("")
	case m.GetNamespace() == "":
		m.SetNamespace(ns)
	case m.GetNamespace() != ns:
		return apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	return nil
}

// readObject decodes the request body into into (kind want); errors are
// API errors (413, 415, and a 400 in kube-apiserver's create handler's
// words for a body that does not decode into want: endpoints.DecodeInto).
// The audit event records the decoded object with defaults (the scheme's
// defaults of kind want, nil when it has none) applied, as
// kube-apiserver's decoder applies them. fieldValidation is the create's
// (Strict, Warn or Ignore): under Strict an unknown or duplicate field is
// the decoder's 400, under Warn a warning added to the request.
func (s *Server) readObject(w http.ResponseWriter, r *http.Request, want schema.GroupVersionKind, into runtime.Object, defaults func(runtime.Object), fieldValidation string) error {
	limit := s.cfg.MaxRequestBodyBytes
	if r.ContentLength > limit {
		return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, limit))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			return apierrors.NewRequestEntityTooLargeError(fmt.Sprintf("limit is %d", limit))
		}
		return apierrors.NewBadRequest(fmt.Sprintf("reading request body: %v", err))
	}
	info, err := s.codecs.RequestSerializer(r.Header.Get("Content-Type"))
	if err != nil {
		return err
	}
	dec := info.Serializer
	if fieldValidation != metav1.FieldValidationIgnore && info.StrictSerializer != nil {
		dec = info.StrictSerializer
	}
	obj, warnings, err := endpoints.DecodeInto(dec, body, want, into, fieldValidation)
	if err != nil {
		return err
	}
	for _, msg := range warnings {
		request.AddWarning(r.Context(), msg)
	}
	if m, err := meta.Accessor(obj); err == nil {
		audit.LogRequestObject(r.Context(), m, s.codecs.RequestObjectJSON(obj, want.GroupVersion(), defaults))
	}
	return nil
}

// writeObject encodes obj in the media type the client accepts.
func (s *Server) writeObject(w http.ResponseWriter, r *http.Request, code int, obj runtime.Object, gv schema.GroupVersion) {
	target, err := s.codecs.Negotiate(r, nil, false)
	if err != nil {
		endpoints.WriteError(w, r, s.codecs, err, schema.GroupResource{}, "")
		return
	}
	// The kind stamped is the request's transform-response-object
	// latency, the encoding and its write its serialize-response-object
	// latency, as kube-apiserver tracks them for every answer.
	start := time.Now()
	err = s.codecs.SetKind(obj, gv)
	target.Latency.AddTransform(time.Since(start))
	if err != nil {
		endpoints.WriteError(w, r, s.codecs, err, schema.GroupResource{}, "")
		return
	}
	start = time.Now()
	defer func() { target.Latency.AddSerialize(time.Since(start)) }()
	data, err := runtime.Encode(target.Info.Serializer, obj)
	if err != nil {
		endpoints.WriteError(w, r, s.codecs, err, schema.GroupResource{}, "")
		return
	}
	audit.LogResponseObject(r.Context())
	w.Header().Set("Content-Type", target.ContentType)
	w.WriteHeader(code)
	_, _ = w.Write(data)
}
