package webhook

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	authorizationv1beta1 "k8s.io/api/authorization/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Default TTLs of the authorizer's cache
// (--authorization-webhook-cache-authorized-ttl and
// --authorization-webhook-cache-unauthorized-ttl).
const (
	DefaultAuthorizedTTL   = 5 * time.Minute
	DefaultUnauthorizedTTL = 30 * time.Second
)

// maxCachedAttributesSize: requests whose client-chosen attributes
// (namespace, verb, group, version, resource, subresource, name, path) are
// this long or longer are not cached, as kube-apiserver's webhook
// authorizer, so that huge names cannot fill the cache.
const maxCachedAttributesSize = 10000

// ErrAllowedAndDenied is the error of a review answering both allowed and
// denied (the request is denied).
var ErrAllowedAndDenied = errors.New("webhook subject access review returned both allow and deny response")

// AuthorizerConfig configures an Authorizer.
type AuthorizerConfig struct {
	// Client calls the webhook.
	Client *Client
	// Version is the SubjectAccessReview version sent: VersionV1 ("")
	// or VersionV1beta1.
	Version string
	// AuthorizedTTL and UnauthorizedTTL: how long allowed and other
	// answers are cached; 0 does not cache.
	AuthorizedTTL, UnauthorizedTTL time.Duration
	// Now is the cache's clock (time.Now when nil).
	Now    func() time.Time
	Logger *slog.Logger
}

// Authorizer is the Webhook authorization mode: it asks the webhook with
// a SubjectAccessReview about each request. An allowed answer allows, a
// denied answer denies (later authorizers are not asked), any other
// answer has no opinion. A failed call has no opinion, with the error.
type Authorizer struct {
	cfg   AuthorizerConfig
	cache *expiringCache[authorizationv1.SubjectAccessReviewStatus]
}

// NewAuthorizer returns an Authorizer.
func NewAuthorizer(cfg AuthorizerConfig) (*Authorizer, error) {
	switch cfg.Version {
	case "":
		cfg.Version = VersionV1
	case VersionV1, VersionV1beta1:
	default:
		return nil, fmt.Errorf("unsupported webhook authorizer version %q, supported versions are %v", cfg.Version, []string{VersionV1, VersionV1beta1})
	}
	if cfg.Client == nil {
		return nil, errors.New("webhook authorizer needs a client")
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.Default()
	}
	return &Authorizer{cfg: cfg, cache: newExpiringCache[authorizationv1.SubjectAccessReviewStatus](cfg.Now)}, nil
}

// Authorize implements auth.Authorizer.
func (a *Authorizer) Authorize(ctx context.Context, attrs auth.Attributes) (auth.Decision, string, error) {
	spec := ReviewSpec(attrs)
	key, err := json.Marshal(spec)
	if err != nil {
		return auth.DecisionNoOpinion, "", err
	}
	status, ok := a.cache.get(string(key))
	if !ok {
		status, err = a.review(ctx, spec)
		if err != nil {
			a.cfg.Logger.Error("Failed to make webhook authorizer request", "err", err)
			return auth.DecisionNoOpinion, "", err
		}
		if cacheable(attrs.Info) {
			ttl := a.cfg.UnauthorizedTTL
			if status.Allowed {
				ttl = a.cfg.AuthorizedTTL
			}
			a.cache.add(string(key), status, ttl)
		}
	}
	return Decide(status)
}

// review POSTs a SubjectAccessReview of spec in the configured version.
func (a *Authorizer) review(ctx context.Context, spec authorizationv1.SubjectAccessReviewSpec) (authorizationv1.SubjectAccessReviewStatus, error) {
	if a.cfg.Version == VersionV1beta1 {
		out := &authorizationv1beta1.SubjectAccessReview{}
		if err := a.cfg.Client.Post(ctx, &authorizationv1beta1.SubjectAccessReview{Spec: v1beta1Spec(spec)}, out); err != nil {
			return authorizationv1.SubjectAccessReviewStatus{}, err
		}
		return authorizationv1.SubjectAccessReviewStatus{Allowed: out.Status.Allowed, Denied: out.Status.Denied,
			Reason: out.Status.Reason, EvaluationError: out.Status.EvaluationError}, nil
	}
	out := &authorizationv1.SubjectAccessReview{}
	if err := a.cfg.Client.Post(ctx, &authorizationv1.SubjectAccessReview{Spec: spec}, out); err != nil {
		return authorizationv1.SubjectAccessReviewStatus{}, err
	}
	return out.Status, nil
}

// RulesFor implements auth.RuleResolver: a webhook cannot list rules, so
// the answer is always incomplete, with kube-apiserver's error.
func (a *Authorizer) RulesFor(context.Context, *request.User, string) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule, bool, error) {
	return nil, nil, true, errors.New("webhook authorizer does not support user rule resolution")
}

// Decide is the decision a review's status stands for: allowed allows,
// denied denies, both deny with ErrAllowedAndDenied, neither has no
// opinion. The reason is the status's (evaluationError is informational,
// as in kube-apiserver).
func Decide(st authorizationv1.SubjectAccessReviewStatus) (auth.Decision, string, error) {
	switch {
	case st.Allowed && st.Denied:
		return auth.DecisionDeny, st.Reason, ErrAllowedAndDenied
	case st.Denied:
		return auth.DecisionDeny, st.Reason, nil
	case st.Allowed:
		return auth.DecisionAllow, st.Reason, nil
	}
	return auth.DecisionNoOpinion, st.Reason, nil
}

// ReviewSpec is the SubjectAccessReview spec kube-apiserver's webhook
// authorizer sends for attrs: the user, and the resource attributes
// (with the list's field and label selector requirements it can express)
// or the non-resource path and verb.
func ReviewSpec(attrs auth.Attributes) authorizationv1.SubjectAccessReviewSpec {
	var spec authorizationv1.SubjectAccessReviewSpec
	if u := attrs.User; u != nil {
		spec.User, spec.UID, spec.Groups = u.Name, u.UID, u.Groups
		if u.Extra != nil {
			spec.Extra = make(map[string]authorizationv1.ExtraValue, len(u.Extra))
			for k, v := range u.Extra {
				spec.Extra[k] = v
			}
		}
	}
	info := attrs.Info
	if info == nil {
		info = &request.Info{}
	}
	if !info.IsResourceRequest {
		spec.NonResourceAttributes = &authorizationv1.NonResourceAttributes{Path: info.Path, Verb: info.Verb}
		return spec
	}
	ra := &authorizationv1.ResourceAttributes{Namespace: info.Namespace, Verb: info.Verb, Group: info.APIGroup,
		Version: info.APIVersion, Resource: info.Resource, Subresource: info.Subresource, Name: info.Name}
	if reqs := fieldRequirements(info); len(reqs) > 0 {
		ra.FieldSelector = &authorizationv1.FieldSelectorAttributes{Requirements: reqs}
	}
	if reqs := labelRequirements(info); len(reqs) > 0 {
		ra.LabelSelector = &authorizationv1.LabelSelectorAttributes{Requirements: reqs}
	}
	spec.ResourceAttributes = ra
	return spec
}

// fieldRequirements are the request's field selector requirements (an
// access review's as it gives them, else the parsed selector's) as In and
// NotIn; a selector that does not parse has none. Requirements are ANDed,
// so leaving one out only broadens what is asked.
func fieldRequirements(info *request.Info) []metav1.FieldSelectorRequirement {
	var reqs fields.Requirements
	switch {
	case info.Selectors != nil && len(info.Selectors.Fields) > 0:
		reqs = info.Selectors.Fields
	case info.FieldSelector != "":
		sel, err := fields.ParseSelector(info.FieldSelector)
		if err != nil {
			return nil
		}
		reqs = sel.Requirements()
	}
	var out []metav1.FieldSelectorRequirement
	for _, r := range reqs {
		var op metav1.FieldSelectorOperator
		switch r.Operator {
		case selection.Equals, selection.DoubleEquals, selection.In:
			op = metav1.FieldSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			op = metav1.FieldSelectorOpNotIn
		default:
			continue
		}
		out = append(out, metav1.FieldSelectorRequirement{Key: r.Field, Operator: op, Values: []string{r.Value}})
	}
	return out
}

// labelRequirements are the request's label selector requirements (an
// access review's as it gives them, else the parsed selector's) as In,
// NotIn, Exists and DoesNotExist (others, such as Gt, are left out).
func labelRequirements(info *request.Info) []metav1.LabelSelectorRequirement {
	var reqs labels.Requirements
	switch {
	case info.Selectors != nil && len(info.Selectors.Labels) > 0:
		reqs = info.Selectors.Labels
	case info.LabelSelector != "":
		sel, err := labels.Parse(info.LabelSelector)
		if err != nil {
			return nil
		}
		reqs, _ = sel.Requirements()
	}
	var out []metav1.LabelSelectorRequirement
	for _, r := range reqs {
		var op metav1.LabelSelectorOperator
		switch r.Operator() {
		case selection.Equals, selection.DoubleEquals, selection.In:
			op = metav1.LabelSelectorOpIn
		case selection.NotEquals, selection.NotIn:
			op = metav1.LabelSelectorOpNotIn
		case selection.Exists:
			op = metav1.LabelSelectorOpExists
		case selection.DoesNotExist:
			op = metav1.LabelSelectorOpDoesNotExist
		default:
			continue
		}
		req := metav1.LabelSelectorRequirement{Key: r.Key(), Operator: op}
		if vals := r.ValuesUnsorted(); len(vals) > 0 {
			req.Values = vals
		}
		out = append(out, req)
	}
	return out
}

// cacheable: the client-chosen attributes are short enough to cache.
func cacheable(info *request.Info) bool {
	if info == nil {
		return true
	}
	n := len(info.Namespace) + len(info.Verb) + len(info.APIGroup) + len(info.APIVersion) + len(info.Resource) +
		len(info.Subresource) + len(info.Name) + len(info.Path)
	return n < maxCachedAttributesSize
}

// v1beta1Spec is spec in authorization.k8s.io/v1beta1.
func v1beta1Spec(spec authorizationv1.SubjectAccessReviewSpec) authorizationv1beta1.SubjectAccessReviewSpec {
	out := authorizationv1beta1.SubjectAccessReviewSpec{User: spec.User, UID: spec.UID, Groups: spec.Groups}
	if spec.Extra != nil {
		out.Extra = make(map[string]authorizationv1beta1.ExtraValue, len(spec.Extra))
		for k, v := range spec.Extra {
			out.Extra[k] = authorizationv1beta1.ExtraValue(v)
		}
	}
	if ra := spec.ResourceAttributes; ra != nil {
		out.ResourceAttributes = &authorizationv1beta1.ResourceAttributes{Namespace: ra.Namespace, Verb: ra.Verb,
			Group: ra.Group, Version: ra.Version, Resource: ra.Resource, Subresource: ra.Subresource, Name: ra.Name,
			FieldSelector: ra.FieldSelector, LabelSelector: ra.LabelSelector}
	}
	if nra := spec.NonResourceAttributes; nra != nil {
		out.NonResourceAttributes = &authorizationv1beta1.NonResourceAttributes{Path: nra.Path, Verb: nra.Verb}
	}
	return out
}
