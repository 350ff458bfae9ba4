package apiserver

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	metav1validation "k8s.io/apimachinery/pkg/apis/meta/v1/validation"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/apimachinery/pkg/util/validation/field"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/tokencache"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// The review endpoints: the authorizer (the same one the filter chain
// asks) and the authenticators answer questions about a user, as
// kube-apiserver's authorization.k8s.io and authentication.k8s.io groups
// do. kubectl auth can-i, can-i --list and whoami use them.

// attributesInfo is the request an access review asks about.
func attributesInfo(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) *request.Info {
	if ra != nil {
		info := &request.Info{IsResourceRequest: true, Verb: ra.Verb, APIGroup: ra.Group, APIVersion: ra.Version,
			Resource: ra.Resource, Subresource: ra.Subresource, Namespace: ra.Namespace, Name: ra.Name}
		if info.APIVersion == "" {
			// No version asks about all of them, as kube-apiserver's
			// review fills in "*".
			info.APIVersion = "*"
		}
		if ra.FieldSelector != nil {
			info.FieldSelector = ra.FieldSelector.RawSelector
			if reqs := fieldRequirements(ra.FieldSelector.Requirements); len(reqs) > 0 {
				info.Selectors = &request.SelectorRequirements{Fields: reqs}
				info.FieldSelector = fieldSelectorText(reqs)
			}
		}
		if ra.LabelSelector != nil {
			info.LabelSelector = ra.LabelSelector.RawSelector
			if reqs := labelRequirements(ra.LabelSelector.Requirements); len(reqs) > 0 {
				if info.Selectors == nil {
					info.Selectors = &request.SelectorRequirements{}
				}
				info.Selectors.Labels = reqs
				info.LabelSelector = labels.NewSelector().Add(reqs...).String()
			}
		}
		return info
	}
	return &request.Info{Path: nra.Path, Verb: nra.Verb}
}

// fieldRequirements are the field selector requirements of an access
// review kube-apiserver passes to its authorizers: In and NotIn of one
// value, as = and !=. Others (several values, Exists, DoesNotExist) are
// left out: requirements are ANDed, so that only broadens the question.
func fieldRequirements(in []metav1.FieldSelectorRequirement) fields.Requirements {
	var out fields.Requirements
	for _, r := range in {
		if len(r.Values) != 1 {
			continue
		}
		switch r.Operator {
		case metav1.FieldSelectorOpIn:
			out = append(out, fields.Requirement{Field: r.Key, Operator: selection.Equals, Value: r.Values[0]})
		case metav1.FieldSelectorOpNotIn:
			out = append(out, fields.Requirement{Field: r.Key, Operator: selection.NotEquals, Value: r.Values[0]})
		}
	}
	return out
}

// fieldSelectorText is reqs as a field selector.
func fieldSelectorText(reqs fields.Requirements) string {
	sels := make([]fields.Selector, 0, len(reqs))
	for _, r := range reqs {
		if r.Operator == selection.NotEquals {
			sels = append(sels, fields.OneTermNotEqualSelector(r.Field, r.Value))
		} else {
			sels = append(sels, fields.OneTermEqualSelector(r.Field, r.Value))
		}
	}
	return fields.AndSelectors(sels...).String()
}

// labelRequirements are the label selector requirements of an access
// review kube-apiserver passes to its authorizers; one with an unknown
// operator or that labels.NewRequirement refuses is left out.
func labelRequirements(in []metav1.LabelSelectorRequirement) labels.Requirements {
	ops := map[metav1.LabelSelectorOperator]selection.Operator{
		metav1.LabelSelectorOpIn: selection.In, metav1.LabelSelectorOpNotIn: selection.NotIn,
		metav1.LabelSelectorOpExists: selection.Exists, metav1.LabelSelectorOpDoesNotExist: selection.DoesNotExist,
	}
	var out labels.Requirements
	for _, r := range in {
		op, ok := ops[r.Operator]
		if !ok {
			continue
		}
		vals := r.Values
		if len(vals) == 0 {
			vals = nil
		}
		req, err := labels.NewRequirement(r.Key, op, vals)
		if err != nil {
			continue
		}
		out = append(out, *req)
	}
	return out
}

// validateAttributes: exactly one of resourceAttributes and
// nonResourceAttributes. As kube-apiserver 1.37 (whose handwritten check
// matches its declarative union since then), both or neither is one
// cause on the spec itself, with nonResourceAttributes as its value.
func validateAttributes(ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes, path *field.Path) field.ErrorList {
	if (ra == nil) == (nra == nil) {
		return field.ErrorList{field.Invalid(path, nra, "exactly one of nonResourceAttributes or resourceAttributes must be specified")}
	}
	return nil
}

// validateSelectors checks the field and label selectors of an access
// review's resource attributes as kube-apiserver's authorization
// validation does, so a malformed question is a 422 rather than a
// silently broadened one. For each selector: a rawSelector beside
// requirements is refused, and one of them is required; each field
// requirement needs a key, In/NotIn need values and Exists/DoesNotExist
// take none; label requirements are checked the same way plus a
// qualified-name key and label-syntax values. Unknown operators pass:
// a newer client may know operators this server does not, and such a
// requirement is then left out of the question (see fieldRequirements,
// labelRequirements). The raw selector's syntax is not checked here; one
// that does not parse is reported in status.evaluationError instead.
func validateSelectors(ra *authorizationv1.ResourceAttributes) field.ErrorList {
	if ra == nil {
		return nil
	}
	path := field.NewPath("spec", "resourceAttributes")
	var errs field.ErrorList
	if fs := ra.FieldSelector; fs != nil {
		p := path.Child("fieldSelector")
		errs = append(errs, rawOrRequirements(fs.RawSelector, len(fs.Requirements), p)...)
		opts := metav1validation.FieldSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range fs.Requirements {
			errs = append(errs, metav1validation.ValidateFieldSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	if ls := ra.LabelSelector; ls != nil {
		p := path.Child("labelSelector")
		errs = append(errs, rawOrRequirements(ls.RawSelector, len(ls.Requirements), p)...)
		opts := metav1validation.LabelSelectorValidationOptions{AllowUnknownOperatorInRequirement: true}
		for i, r := range ls.Requirements {
			errs = append(errs, metav1validation.ValidateLabelSelectorRequirement(r, opts, p.Child("requirements").Index(i))...)
		}
	}
	return errs
}

// rawOrRequirements: a selector at path gives exactly one of a raw
// selector and requirements, in kube-apiserver's words (its "may not
// specified" included).
func rawOrRequirements(raw string, requirements int, path *field.Path) field.ErrorList {
	switch {
	case raw != "" && requirements > 0:
		return field.ErrorList{field.Invalid(path.Child("rawSelector"), raw, "may not specified at the same time as requirements")}
	case raw == "" && requirements == 0:
		return field.ErrorList{field.Required(path.Child("requirements"), fmt.Sprintf("when %s is specified, requirements or rawSelector is required", path))}
	}
	return nil
}

// validateEmptyMeta: reviews have no metadata (managedFields aside; a
// LocalSubjectAccessReview's namespace when allowNamespace). The cause
// shows the metadata as sent, as kube-apiserver's.
func validateEmptyMeta(m metav1.ObjectMeta, allowNamespace bool) field.ErrorList {
	rest, msg := m, "must be empty"
	rest.ManagedFields = nil
	if allowNamespace {
		rest.Namespace, msg = "", "must be empty except for namespace"
	}
	if apiequality.Semantic.DeepEqual(metav1.ObjectMeta{}, rest) {
		return nil
	}
	return field.ErrorList{field.Invalid(field.NewPath("metadata"), m, msg)}
}

// invalid is an access review's 422. kube-apiserver's review handlers name
// the kind of the object they validate, which is the decoded internal
// object's, whose kind the conversion to the internal version has
// cleared: the Status says `.authorization.k8s.io "" is invalid`, with an
// empty details.kind.
func invalid(errs field.ErrorList) error {
	return apierrors.NewInvalid(schema.GroupKind{Group: authorizationv1.GroupName}, "", errs)
}

// decide asks the authorizer about the review's attributes and fills a
// SubjectAccessReviewStatus: its evaluationError is the authorizer's
// error, then the notes on selectors ra's could not parse whole
// (selectorParseNotes), joined by "; " as kube-apiserver's.
func (s *Server) decide(r *http.Request, u *request.User, ra *authorizationv1.ResourceAttributes, nra *authorizationv1.NonResourceAttributes) authorizationv1.SubjectAccessReviewStatus {
	d, reason, err := s.authorizer.Authorize(r.Context(), auth.Attributes{User: u, Info: attributesInfo(ra, nra)})
	st := authorizationv1.SubjectAccessReviewStatus{Allowed: d == auth.DecisionAllow, Denied: d == auth.DecisionDeny, Reason: reason}
	var evalErrs []string
	if err != nil {
		evalErrs = append(evalErrs, err.Error())
	}
	st.EvaluationError = strings.Join(append(evalErrs, selectorParseNotes(ra)...), "; ")
	return st
}

// selectorParseNotes are kube-apiserver's evaluationError notes on the
// selectors of an access review it could not parse whole, field selector
// first: "partially ignored" when some requirements were kept (the
// dropped ones only broaden the question), "ignored" when none were. A
// raw selector is parsed whole or ignored; requirements, when given,
// decide instead of it.
func selectorParseNotes(ra *authorizationv1.ResourceAttributes) []string {
	if ra == nil {
		return nil
	}
	var notes []string
	note := func(which string, kept, failed bool) {
		switch {
		case !failed:
		case kept:
			notes = append(notes, "spec.resourceAttributes."+which+" partially ignored due to parse error")
		default:
			notes = append(notes, "spec.resourceAttributes."+which+" ignored due to parse error")
		}
	}
	if fs := ra.FieldSelector; fs != nil {
		kept, failed := false, false
		if fs.RawSelector != "" {
			sel, err := fields.ParseSelector(fs.RawSelector)
			kept, failed = err == nil && len(sel.Requirements()) > 0, err != nil
		}
		if len(fs.Requirements) > 0 {
			n := len(fieldRequirements(fs.Requirements))
			kept, failed = n > 0, n < len(fs.Requirements)
		}
		note("fieldSelector", kept, failed)
	}
	if ls := ra.LabelSelector; ls != nil {
		kept, failed := false, false
		if ls.RawSelector != "" {
			sel, err := labels.Parse(ls.RawSelector)
			failed = err != nil
			if !failed {
				reqs, _ := sel.Requirements()
				kept = len(reqs) > 0
			}
		}
		if len(ls.Requirements) > 0 {
			n := len(labelRequirements(ls.Requirements))
			kept, failed = n > 0, n < len(ls.Requirements)
		}
		note("labelSelector", kept, failed)
	}
	return notes
}

func (s *Server) selfSubjectAccessReview(r *http.Request, _ *request.Info, in runtime.Object) (runtime.Object, error) {
	rev := in.(*authorizationv1.SelfSubjectAccessReview)
	// Spec causes first, then metadata's, as kube-apiserver lists them.
	errs := validateAttributes(rev.Spec.ResourceAttributes, rev.Spec.NonResourceAttributes, field.NewPath("spec"))
	errs = append(errs, validateSelectors(rev.Spec.ResourceAttributes)...)
	errs = append(errs, validateEmptyMeta(rev.ObjectMeta, false)...)
	if len(errs) > 0 {
		return nil, invalid(errs)
	}
	rev.Status = s.decide(r, request.UserFrom(r.Context()), rev.Spec.ResourceAttributes, rev.Spec.NonResourceAttributes)
	return rev, nil
}

// reviewedUser is the user a SubjectAccessReviewSpec names.
func reviewedUser(spec *authorizationv1.SubjectAccessReviewSpec) *request.User {
	u := &request.User{Name: spec.User, UID: spec.UID, Groups: spec.Groups}
	if len(spec.Extra) > 0 {
		u.Extra = map[string][]string{}
		for k, v := range spec.Extra {
			u.Extra[k] = []string(v)
		}
	}
	return u
}

func validateSubjectAccessReviewSpec(spec *authorizationv1.SubjectAccessReviewSpec, path *field.Path) field.ErrorList {
	errs := validateAttributes(spec.ResourceAttributes, spec.NonResourceAttributes, path)
	if spec.User == "" && len(spec.Groups) == 0 {
		errs = append(errs, field.Invalid(path.Child("user"), spec.User, "at least one of user or group must be specified"))
	}
	return append(errs, validateSelectors(spec.ResourceAttributes)...)
}

func (s *Server) subjectAccessReview(r *http.Request, _ *request.Info, in runtime.Object) (runtime.Object, error) {
	rev := in.(*authorizationv1.SubjectAccessReview)
	errs := validateSubjectAccessReviewSpec(&rev.Spec, field.NewPath("spec"))
	errs = append(errs, validateEmptyMeta(rev.ObjectMeta, false)...)
	if len(errs) > 0 {
		return nil, invalid(errs)
	}
	rev.Status = s.decide(r, reviewedUser(&rev.Spec), rev.Spec.ResourceAttributes, rev.Spec.NonResourceAttributes)
	return rev, nil
}

func (s *Server) localSubjectAccessReview(r *http.Request, info *request.Info, in runtime.Object) (runtime.Object, error) {
	rev := in.(*authorizationv1.LocalSubjectAccessReview)
	// serveVirtual gave the review the request's namespace
	// (matchRequestNamespace).
	spec := field.NewPath("spec")
	errs := validateSubjectAccessReviewSpec(&rev.Spec, spec)
	errs = append(errs, validateEmptyMeta(rev.ObjectMeta, true)...)
	if ra := rev.Spec.ResourceAttributes; ra != nil && ra.Namespace != rev.Namespace {
		errs = append(errs, field.Invalid(spec.Child("resourceAttributes", "namespace"), ra.Namespace, "must match metadata.namespace"))
	}
	if rev.Spec.NonResourceAttributes != nil {
		errs = append(errs, field.Invalid(spec.Child("nonResourceAttributes"), rev.Spec.NonResourceAttributes, "disallowed on this kind of request"))
	}
	if len(errs) > 0 {
		return nil, invalid(errs)
	}
	rev.Status = s.decide(r, reviewedUser(&rev.Spec), rev.Spec.ResourceAttributes, nil)
	return rev, nil
}

func (s *Server) selfSubjectRulesReview(r *http.Request, _ *request.Info, in runtime.Object) (runtime.Object, error) {
	// As kube-apiserver's REST: no namespace is a 400 (there is no
	// validation for this kind), and the answer is a new object holding
	// only the status, not the request echoed.
	req := in.(*authorizationv1.SelfSubjectRulesReview)
	if req.Spec.Namespace == "" {
		return nil, apierrors.NewBadRequest("no namespace on request")
	}
	rev := &authorizationv1.SelfSubjectRulesReview{}
	rr, ok := s.authorizer.(auth.RuleResolver)
	if !ok {
		return nil, apierrors.NewMethodNotSupported(authorizationv1.SchemeGroupVersion.WithResource("selfsubjectrulesreviews").GroupResource(), "create")
	}
	rules, nonResource, incomplete, err := rr.RulesFor(r.Context(), request.UserFrom(r.Context()), req.Spec.Namespace)
	rev.Status = authorizationv1.SubjectRulesReviewStatus{ResourceRules: rules, NonResourceRules: nonResource, Incomplete: incomplete}
	if rev.Status.ResourceRules == nil {
		rev.Status.ResourceRules = []authorizationv1.ResourceRule{}
	}
	if rev.Status.NonResourceRules == nil {
		rev.Status.NonResourceRules = []authorizationv1.NonResourceRule{}
	}
	if err != nil {
		rev.Status.EvaluationError = err.Error()
	}
	return rev, nil
}

// userInfo is the authentication.k8s.io form of a user.
func userInfo(u *request.User) authenticationv1.UserInfo {
	out := authenticationv1.UserInfo{Username: u.Name, UID: u.UID, Groups: u.Groups}
	if len(u.Extra) > 0 {
		out.Extra = map[string]authenticationv1.ExtraValue{}
		for k, v := range u.Extra {
			out.Extra[k] = v
		}
	}
	return out
}

func (s *Server) selfSubjectReview(r *http.Request, _ *request.Info, _ runtime.Object) (runtime.Object, error) {
	u := request.UserFrom(r.Context())
	if u == nil {
		return nil, apierrors.NewUnauthorized("Unauthorized")
	}
	// As kube-apiserver's REST: a new object, created now, with the
	// user's information; nothing of the request is echoed.
	return &authenticationv1.SelfSubjectReview{
		ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.Now()},
		Status:     authenticationv1.SelfSubjectReviewStatus{UserInfo: userInfo(u)},
	}, nil
}

// tokenReview authenticates spec.token for spec.audiences (the API
// audiences when empty) through the token cache, as kube-apiserver's
// TokenReview asks its authenticator (the cached one) with those
// audiences in its context: a token reviewed for the same audiences
// within the cache's success TTL is not authenticated again.
func (s *Server) tokenReview(r *http.Request, _ *request.Info, in runtime.Object) (runtime.Object, error) {
	rev := in.(*authenticationv1.TokenReview)
	if rev.Spec.Token == "" {
		return nil, apierrors.NewBadRequest("token is required for TokenReview in authentication")
	}
	want := rev.Spec.Audiences
	if len(want) == 0 {
		want = s.apiAudiences()
	}
	// The token is authenticated apart from this request, as
	// kube-apiserver's TokenReview authenticates a bare request of its own:
	// the audit annotations and warnings its authentication records (a
	// legacy token's) are not the TokenReview's. Only the request's end
	// stops the wait.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	defer context.AfterFunc(r.Context(), cancel)()
	res := s.reviewTokens.Authenticate(ctx, rev.Spec.Token, want)
	switch {
	case res.OK:
		rev.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: userInfo(auth.WithAuthenticatedGroup(res.User)), Audiences: res.Audiences}
	case res.Err != nil:
		rev.Status = authenticationv1.TokenReviewStatus{Error: res.Err.Error()}
	default:
		rev.Status = authenticationv1.TokenReviewStatus{Error: auth.ErrInvalidBearerToken.Error()}
	}
	return rev, nil
}

// reviewToken authenticates token for want with the bearer token
// authenticators, for the token cache (requests ask it for the API
// audiences, TokenReview for its spec.audiences): audience-aware ones (auth.AudienceTokenAuthenticator,
// such as the TokenReview webhook) are asked for those audiences, as
// kube-apiserver's TokenReview puts them in its authenticators' context.
// A refusal's error is the last authenticator's error.
func (s *Server) reviewToken(ctx context.Context, token string, want []string) tokencache.Result {
	apiAudiences := s.apiAudiences()
	var tokens []auth.TokenAuthenticator
	agnostic := intersect(want, apiAudiences)
	for _, t := range s.bearer.Tokens {
		if sa, ok := t.(*auth.ServiceAccountTokens); ok {
			c := *sa
			c.APIAudiences = want
			tokens = append(tokens, &c)
			continue
		}
		if _, ok := t.(auth.AudienceTokenAuthenticator); ok {
			tokens = append(tokens, t)
			continue
		}
		// Audience-agnostic tokens are only meant for this server.
		if len(want) == 0 || len(agnostic) > 0 {
			tokens = append(tokens, t)
		}
	}
	var lastErr error
	for _, t := range tokens {
		var u *request.User
		var ok bool
		var err error
		auds := agnostic
		if at, aware := t.(auth.AudienceTokenAuthenticator); aware {
			u, auds, ok, err = at.AuthenticateTokenFor(ctx, token, want)
		} else {
			u, ok, err = t.AuthenticateToken(ctx, token)
		}
		if err != nil {
			lastErr = err
			continue
		}
		if !ok {
			continue
		}
		if sa, isSA := t.(*auth.ServiceAccountTokens); isSA {
			if claimed := sa.TokenAudiences(token); len(claimed) > 0 {
				auds = intersect(want, claimed)
			}
		}
		if len(want) > 0 && len(auds) == 0 {
			// A token without audiences (legacy) is only for this server.
			lastErr = fmt.Errorf("token audiences %q is invalid for the target audiences %q", apiAudiences, want)
			continue
		}
		return tokencache.Result{User: u, Audiences: auds, OK: true}
	}
	return tokencache.Result{Err: lastErr}
}

// apiAudiences are the audiences this server's tokens are for, as
// kube-apiserver's: --api-audiences (Config.APIAudiences or the service
// account settings' APIAudiences), else the service account issuers,
// whichever authenticators are configured.
func (s *Server) apiAudiences() []string {
	if len(s.cfg.APIAudiences) > 0 {
		return s.cfg.APIAudiences
	}
	if sa := s.cfg.ServiceAccounts; sa != nil {
		if len(sa.APIAudiences) > 0 {
			return sa.APIAudiences
		}
		return sa.Issuers
	}
	return nil
}

func intersect(a, b []string) []string {
	var out []string
	for _, x := range a {
		if slices.Contains(b, x) && !slices.Contains(out, x) {
			out = append(out, x)
		}
	}
	return out
}
