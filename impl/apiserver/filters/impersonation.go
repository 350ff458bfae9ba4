package filters

import (
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/endpoints"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// The impersonation headers (kubectl --as, --as-group, --as-uid).
const (
	ImpersonateUserHeader        = "Impersonate-User"
	ImpersonateGroupHeader       = "Impersonate-Group"
	ImpersonateUIDHeader         = "Impersonate-Uid"
	ImpersonateUserExtraPrefix   = "Impersonate-Extra-"
	authenticationGroup          = "authentication.k8s.io"
	unauthenticatedGroup         = "system:unauthenticated"
	anonymousUser                = "system:anonymous"
	impersonateVerb              = "impersonate"
	serviceAccountsResource      = "serviceaccounts"
	impersonationHeaderTrimChars = " \t"
)

// WithImpersonation lets an authenticated user act as another: each
// requested attribute (the user or service account, every group, the uid,
// every extra value) is authorized with verb "impersonate" on users,
// serviceaccounts, groups, uids or userextras/<key>, as kube-apiserver
// does; a denial is a 403. The request then proceeds as the impersonated
// user (system:authenticated added unless it is system:anonymous; a
// service account without requested groups gets its fixed groups) and the
// impersonation headers are removed.
func WithImpersonation(next http.Handler, c *codec.Codecs, a auth.Authorizer, log *slog.Logger) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// The work is impersonate's, so that this frame, under which the
		// rest of the request (a watch's whole life) runs, stays small.
		if r = impersonate(w, r, c, a, log); r != nil {
			next.ServeHTTP(w, r)
		}
	})
}

// impersonate returns the request to go on with, as the impersonated user
// when it asks for one, or nil when it has answered r (400, 403).
//
//go:noinline
func impersonate(w http.ResponseWriter, r *http.Request, c *codec.Codecs, a auth.Authorizer, log *slog.Logger) *http.Request {
	wanted, err := impersonationRequest(r.Header)
	if err != nil {
		markOutcome(w, refused)
		endpoints.WriteStatusError(w, r, c, apierrors.NewBadRequest(err.Error()))
		return nil
	}
	if wanted == nil {
		return r
	}
	actor := request.UserFrom(r.Context())
	for _, check := range impersonationChecks(wanted) {
		attrs := auth.Attributes{User: actor, Info: check}
		d, reason, err := a.Authorize(r.Context(), attrs)
		if d == auth.DecisionAllow {
			continue
		}
		if err != nil {
			log.Debug("impersonation authorization error", "err", err)
		}
		markOutcome(w, refused)
		endpoints.WriteStatusError(w, r, c, forbidden(attrs, reason))
		return nil
	}
	for h := range r.Header {
		if isImpersonationHeader(h) {
			r.Header.Del(h)
		}
	}
	as := impersonatedUser(wanted)
	audit.SetImpersonatedUser(r.Context(), as)
	return r.WithContext(request.WithUser(r.Context(), as))
}

// impersonationRequest reads the headers; nil when there are none. Groups,
// uid or extras without a user are an error.
func impersonationRequest(h http.Header) (*request.User, error) {
	if !hasImpersonationHeader(h) {
		return nil, nil // the usual request: nothing to build
	}
	u := &request.User{Name: strings.Trim(h.Get(ImpersonateUserHeader), impersonationHeaderTrimChars)}
	present := u.Name != ""
	if v := h.Values(ImpersonateGroupHeader); len(v) > 0 {
		u.Groups, present = append([]string(nil), v...), true
	}
	if _, ok := h[ImpersonateUIDHeader]; ok {
		u.UID, present = h.Get(ImpersonateUIDHeader), true
	}
	for name, values := range h {
		key, ok := strings.CutPrefix(name, ImpersonateUserExtraPrefix)
		if !ok {
			continue
		}
		present = true
		if unescaped, err := url.PathUnescape(key); err == nil {
			key = unescaped
		}
		if u.Extra == nil {
			u.Extra = map[string][]string{}
		}
		key = strings.ToLower(key)
		u.Extra[key] = append(u.Extra[key], values...)
	}
	if !present {
		return nil, nil
	}
	if u.Name == "" {
		return nil, errImpersonateWithoutUser(u)
	}
	return u, nil
}

func errImpersonateWithoutUser(u *request.User) error {
	var parts []string
	if len(u.Groups) > 0 {
		parts = append(parts, "groups")
	}
	if u.UID != "" {
		parts = append(parts, "uid")
	}
	if len(u.Extra) > 0 {
		parts = append(parts, "extra")
	}
	return &impersonationError{"requested " + strings.Join(parts, ", ") + " without impersonating a user"}
}

type impersonationError struct{ msg string }

func (e *impersonationError) Error() string { return e.msg }

// impersonationChecks are the authorization attributes every requested
// part of the identity is checked with.
func impersonationChecks(u *request.User) []*request.Info {
	check := func(group, resource, sub, namespace, name string) *request.Info {
		return &request.Info{IsResourceRequest: true, Verb: impersonateVerb, APIGroup: group,
			APIVersion: "v1", Resource: resource, Subresource: sub, Namespace: namespace, Name: name}
	}
	var out []*request.Info
	if ns, name, ok := auth.SplitServiceAccountUsername(u.Name); ok {
		out = append(out, check("", serviceAccountsResource, "", ns, name))
	} else {
		out = append(out, check("", "users", "", "", u.Name))
	}
	for _, g := range u.Groups {
		out = append(out, check("", "groups", "", "", g))
	}
	if u.UID != "" {
		out = append(out, check(authenticationGroup, "uids", "", "", u.UID))
	}
	keys := make([]string, 0, len(u.Extra))
	for k := range u.Extra {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range u.Extra[k] {
			out = append(out, check(authenticationGroup, "userextras", k, "", v))
		}
	}
	return out
}

// impersonatedUser is the identity the request proceeds with.
func impersonatedUser(wanted *request.User) *request.User {
	u := *wanted
	if ns, _, ok := auth.SplitServiceAccountUsername(u.Name); ok && len(u.Groups) == 0 {
		u.Groups = auth.ServiceAccountGroups(ns)
	}
	if u.Name == anonymousUser {
		if !slices.Contains(u.Groups, unauthenticatedGroup) {
			u.Groups = append(u.Groups, unauthenticatedGroup)
		}
		return &u
	}
	return auth.WithAuthenticatedGroup(&u)
}

func hasImpersonationHeader(h http.Header) bool {
	for name := range h {
		if isImpersonationHeader(name) {
			return true
		}
	}
	return false
}

func isImpersonationHeader(h string) bool {
	return h == ImpersonateUserHeader || h == ImpersonateGroupHeader || h == ImpersonateUIDHeader ||
		strings.HasPrefix(h, ImpersonateUserExtraPrefix)
}
