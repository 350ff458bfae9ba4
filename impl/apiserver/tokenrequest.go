package apiserver

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// The serviceaccounts/token subresource (TokenRequest, what `kubectl
// create token` and the kubelet's projected token volumes call): POST an
// authentication.k8s.io/v1 TokenRequest, get back a bound service account
// token for spec.audiences (default: the API audiences), valid
// spec.expirationSeconds (default one hour, at least ten minutes, capped
// at --service-account-max-token-expiration, with a warning), optionally bound to a pod,
// secret or node that must exist (and have the given uid). metadata.uid,
// when set, must be the service account's. Admission runs as on a create
// of subresource token of serviceaccounts (NodeRestriction checks a
// kubelet's requests). A pod-bound request for the kubelet's default
// 3607 s and the API audiences gets an extended token (extendsExpiration).
// The request is audited with the issued token's credential id.

const (
	defaultTokenExpirationSeconds = 3600
	minTokenExpirationSeconds     = 600
	maxTokenExpirationSeconds     = 1 << 32
)

var tokenRequestGR = schema.GroupResource{Resource: "serviceaccounts/token"}

// serveTokenRequest serves serviceaccounts/token and reports whether the
// request was one.
func (s *Server) serveTokenRequest(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion, info *request.Info) bool {
	if gv != corev1.SchemeGroupVersion || info.Resource != "serviceaccounts" || info.Subresource != "token" ||
		len(info.Parts) != 3 || !info.UnderNamespace {
		return false
	}
	if s.saTokens == nil || s.saTokens.SigningKey == nil || len(s.saTokens.Issuers) == 0 {
		s.notFound(w, r)
		return true
	}
	if info.Verb != "create" {
		endpoints.WriteStatusError(w, r, s.codecs, endpoints.MethodNotAllowed())
		return true
	}
	if info.Name == "" {
		endpoints.WriteError(w, r, s.codecs, endpoints.NameRequired(), tokenRequestGR, info.Name)
		return true
	}
	// Warnings (admission plugins', a shortened expiration's, the body's
	// unknown fields under fieldValidation=Warn) go out as Warning
	// headers, as on other writes.
	w, r = endpoints.CollectWarnings(w, r)
	// A token request is a create (kube-apiserver's TokenREST is a named
	// creater): its CreateOptions are checked, and fieldValidation applies
	// to the TokenRequest body.
	opts, fieldValidation, err := endpoints.CreateOptions(r)
	if err != nil {
		endpoints.WriteError(w, r, s.codecs, err, tokenRequestGR, info.Name)
		return true
	}
	req := &authenticationv1.TokenRequest{}
	if err := s.readObject(w, r, authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), req, defaultTokenRequest, fieldValidation); err != nil {
		endpoints.WriteError(w, r, s.codecs, err, tokenRequestGR, info.Name)
		return true
	}
	// Admission as kube-apiserver's create handler runs it for TokenREST:
	// the mutating plugins (NodeRestriction among them) on the request as
	// sent, before its audiences are defaulted; the validating ones on a
	// copy once it is defaulted and valid (createToken).
	ctx := r.Context()
	attrs := admission.Attributes{Operation: admission.Create, Resource: serviceAccountsGVR,
		Kind: authenticationv1.SchemeGroupVersion.WithKind("TokenRequest"), Subresource: "token",
		Namespace: info.Namespace, Name: info.Name, Object: req, User: request.UserFrom(ctx),
		DryRun: len(opts.DryRun) > 0, Options: opts}
	if err := s.admission.Admit(ctx, &attrs); err != nil {
		endpoints.WriteError(w, r, s.codecs, err, serviceAccountsGVR.GroupResource(), info.Name)
		return true
	}
	// The validating plugins see the defaulted request itself, not
	// kube-apiserver's copy of it: validation only reads (ours never
	// change what they are given; webhooks get it serialized), and a
	// copy and second Attributes per kubelet token were ~0.6 KB.
	validate := func(req *authenticationv1.TokenRequest) error {
		attrs.Object = req
		return s.admission.Validate(ctx, &attrs)
	}
	out, err := s.createToken(ctx, storeLookup{s}, info.Namespace, info.Name, req, validate)
	if err != nil {
		endpoints.WriteError(w, r, s.codecs, err, serviceAccountsGVR.GroupResource(), info.Name)
		return true
	}
	s.writeObject(w, r, http.StatusCreated, out, authenticationv1.SchemeGroupVersion)
	return true
}

// tokenObjects is where a token request reads the service account and
// the object the token is bound to (storeLookup).
type tokenObjects interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
	GetCachedNodeRef(ctx context.Context, name string) (*corev1.Node, error)
}

// createToken issues the token req asks for, in the order of
// kube-apiserver's TokenREST.Create: the service account is read, a
// metadata.uid must be its uid, the audiences are defaulted, the request
// validated and then given to validate (the validating admission
// plugins; nil: none) before the bound object is checked.
func (s *Server) createToken(ctx context.Context, look tokenObjects, namespace, name string, req *authenticationv1.TokenRequest,
	validate func(*authenticationv1.TokenRequest) error) (*authenticationv1.TokenRequest, error) {
	tokenRequestGK := schema.GroupKind{Group: authenticationv1.GroupName, Kind: "TokenRequest"}
	if req.Name != "" && req.Name != name {
		return nil, apierrors.NewInvalid(tokenRequestGK, name, field.ErrorList{
			field.Invalid(field.NewPath("metadata", "name"), req.Name, "must match the service account name if specified")})
	}
	if req.Namespace != "" && req.Namespace != namespace {
		return nil, apierrors.NewBadRequest("the namespace of the provided object does not match the namespace sent on the request")
	}
	spec := &req.Spec
	// The service account and a bound pod are both quorum reads, as
	// kube-apiserver's (each waits for etcd to confirm it is current: under
	// write load a round of its raft loop, an fsync). They are read at
	// once, so a kubelet's token for a pod's kube-api-access volume waits
	// for one such round, not two; the answer is the same (the service
	// account's error first, then the pod's).
	boundPod, waitPod := readBoundPod(ctx, look, namespace, spec.BoundObjectRef)
	defer waitPod()
	sa, err := look.GetServiceAccount(ctx, namespace, name)
	if err != nil {
		return nil, err
	}
	// TokenRequestServiceAccountUIDValidation (beta, on since 1.34): a
	// request for another service account of the same name (deleted and
	// created again) is a conflict.
	if req.UID != "" && req.UID != sa.UID {
		return nil, apierrors.NewConflict(schema.GroupResource{Group: authenticationv1.GroupName, Resource: "TokenRequest"}, name,
			fmt.Errorf("the UID in the token request (%s) does not match the UID of the service account (%s)", req.UID, sa.UID))
	}
	if spec.ExpirationSeconds == nil {
		def := int64(defaultTokenExpirationSeconds)
		spec.ExpirationSeconds = &def
	}
	if len(spec.Audiences) == 0 {
		spec.Audiences = s.apiAudiences()
	}
	if errs := validateTokenRequest(spec); len(errs) > 0 {
		// Upstream names no object here.
		return nil, apierrors.NewInvalid(tokenRequestGK, "", errs)
	}
	if validate != nil {
		if err := validate(req); err != nil {
			return nil, err
		}
	}
	issue := auth.BoundTokenRequest{ServiceAccount: sa, Audiences: spec.Audiences}
	if ref := spec.BoundObjectRef; ref != nil {
		var uid types.UID
		switch ref.Kind {
		case "Pod":
			pod, err := boundPod()
			if err != nil {
				return nil, err
			}
			if pod.Spec.ServiceAccountName != sa.Name {
				return nil, apierrors.NewBadRequest(fmt.Sprintf("cannot bind token for serviceaccount %q to pod running with different serviceaccount name.", sa.Name))
			}
			uid, issue.Pod = pod.UID, pod
			if pod.Spec.NodeName != "" {
				if issue.Node, err = podNode(ctx, look, pod.Spec.NodeName); err != nil {
					return nil, err
				}
			}
		case "Secret":
			secret, err := look.GetSecret(ctx, namespace, ref.Name)
			if err != nil {
				return nil, err
			}
			uid, issue.Secret = secret.UID, secret
		case "Node":
			node, err := look.GetNode(ctx, ref.Name)
			if err != nil {
				return nil, err
			}
			uid, issue.Node = node.UID, node
		}
		if ref.UID != "" && ref.UID != uid {
			return nil, apierrors.NewConflict(schema.GroupResource{Resource: ref.Kind}, ref.Name,
				fmt.Errorf("the UID in the bound object reference (%s) does not match the UID in record. The object might have been deleted and then recreated", ref.UID))
		}
		ref.UID = uid
	}
	exp := time.Duration(*spec.ExpirationSeconds) * time.Second
	if max := s.cfg.ServiceAccounts.MaxTokenExpiration; max > 0 && exp > max {
		// The max counts in whole seconds, as upstream's.
		secs := int64(max / time.Second)
		exp = time.Duration(secs) * time.Second
		request.AddWarning(ctx, fmt.Sprintf("requested expiration of %d seconds shortened to %d seconds", *spec.ExpirationSeconds, secs))
		spec.ExpirationSeconds = &secs
	}
	issue.Expiration = exp
	if s.extendsExpiration(issue.Pod, exp, spec.Audiences) {
		issue.WarnAfter, issue.Expiration = exp, auth.ExpirationExtension
	}
	id, err := auth.NewTokenID()
	if err != nil {
		return nil, apierrors.NewInternalError(fmt.Errorf("generating the token's id: %w", err))
	}
	issue.ID = id
	token, expiry, err := s.saTokens.IssueBound(issue)
	if err != nil {
		return nil, apierrors.NewInternalError(err)
	}
	audit.AddAnnotation(ctx, auth.AuditIssuedCredentialID, auth.CredentialID(id))
	// The answer's expiry is the requested one also for an extended
	// token (what kubelets renew by), not the token's exp.
	expiry = expiry.Add(exp - issue.Expiration)
	out := &authenticationv1.TokenRequest{
		ObjectMeta: metav1.ObjectMeta{Name: sa.Name, Namespace: sa.Namespace, UID: sa.UID, CreationTimestamp: metav1.Now()},
		Spec:       *spec,
		Status:     authenticationv1.TokenRequestStatus{Token: token, ExpirationTimestamp: metav1.NewTime(expiry)},
	}
	return out, nil
}

// extendsExpiration: the token is an extended one (auth.ExpirationExtension),
// as kube-apiserver decides with --service-account-extend-token-expiration:
// bound to a pod, for exactly auth.WarnOnlyBoundTokenExpiration once
// --service-account-max-token-expiration has shortened the request, and
// only for audiences this server accepts. The extension itself is not
// capped by --service-account-max-token-expiration (upstream only logs at
// start that tokens may outlive it).
func (s *Server) extendsExpiration(pod *corev1.Pod, exp time.Duration, audiences []string) bool {
	if s.cfg.ServiceAccounts.NoExtendTokenExpiration || pod == nil || exp != auth.WarnOnlyBoundTokenExpiration {
		return false
	}
	apiAudiences := s.apiAudiences()
	return !slices.ContainsFunc(audiences, func(a string) bool { return !slices.Contains(apiAudiences, a) })
}

func validateTokenRequest(spec *authenticationv1.TokenRequestSpec) field.ErrorList {
	var errs field.ErrorList
	p := field.NewPath("spec")
	if secs := *spec.ExpirationSeconds; secs < minTokenExpirationSeconds {
		errs = append(errs, field.Invalid(p.Child("expirationSeconds"), secs, "may not specify a duration less than 10 minutes"))
	} else if secs > maxTokenExpirationSeconds {
		errs = append(errs, field.Invalid(p.Child("expirationSeconds"), secs, "may not specify a duration larger than 2^32 seconds"))
	}
	if len(spec.Audiences) == 0 {
		errs = append(errs, field.Required(p.Child("audiences"), "at least one audience must be given"))
	}
	if ref := spec.BoundObjectRef; ref != nil {
		rp := p.Child("boundObjectRef")
		switch ref.Kind {
		case "Pod", "Secret", "Node":
		default:
			errs = append(errs, field.NotSupported(rp.Child("kind"), ref.Kind, []string{"Pod", "Secret", "Node"}))
		}
		if ref.APIVersion != "" && ref.APIVersion != "v1" {
			errs = append(errs, field.NotSupported(rp.Child("apiVersion"), ref.APIVersion, []string{"v1"}))
		}
		if ref.Name == "" {
			errs = append(errs, field.Required(rp.Child("name"), ""))
		}
	}
	return errs
}

// readBoundPod starts reading the pod ref names (when it names one):
// result waits for the read and returns it; wait, which the caller defers,
// waits for it too, so the read never outlives the request.
func readBoundPod(ctx context.Context, look tokenObjects, namespace string, ref *authenticationv1.BoundObjectReference) (result func() (*corev1.Pod, error), wait func()) {
	if ref == nil || ref.Kind != "Pod" {
		return func() (*corev1.Pod, error) { return nil, errors.New("the token is not bound to a pod") }, func() {}
	}
	var pod *corev1.Pod
	var err error
	done := make(chan struct{})
	go func() {
		defer close(done)
		pod, err = look.GetPod(ctx, namespace, ref.Name)
	}()
	return func() (*corev1.Pod, error) { <-done; return pod, err }, func() { <-done }
}

// podNode is the node a pod-bound token names, read as kube-apiserver
// reads it: from the watch cache (resourceVersion "0", no quorum read of
// etcd; only its name and uid, which are all the token records, without
// copying the cached node), again from etcd if that fails; a node that
// does not exist is one with only its name, any other failure a 500.
func podNode(ctx context.Context, look tokenObjects, name string) (*corev1.Node, error) {
	node, err := look.GetCachedNodeRef(ctx, name)
	if err != nil {
		node, err = look.GetNode(ctx, name)
	}
	switch {
	case apierrors.IsNotFound(err):
		return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}, nil
	case err != nil:
		return nil, apierrors.NewInternalError(err)
	}
	return node, nil
}

// defaultTokenRequest applies the scheme's TokenRequest defaults, as
// kube-apiserver's decoder does: a spec without expirationSeconds asks
// for defaultTokenExpirationSeconds.
func defaultTokenRequest(obj runtime.Object) {
	tr, ok := obj.(*authenticationv1.TokenRequest)
	if !ok || tr.Spec.ExpirationSeconds != nil {
		return
	}
	def := int64(defaultTokenExpirationSeconds)
	tr.Spec.ExpirationSeconds = &def
}
