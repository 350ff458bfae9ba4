// Package auth holds the API server's authentication and authorization
// extension points: small interfaces the filter chain calls, with the x509
// client-certificate authenticator and the AlwaysAllow authorizer.
package auth

import (
	"context"
	"crypto/x509"
	"errors"
	"net/http"
	"slices"
	"strings"
	"sync"
	"time"

	authorizationv1 "k8s.io/api/authorization/v1"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Authenticator identifies the user behind a request. ok is false when the
// request carries no credentials this authenticator understands; err is set
// when it carries credentials that are invalid.
type Authenticator interface {
	Authenticate(r *http.Request) (user *request.User, ok bool, err error)
}

// Union tries each authenticator in turn; the first that recognises the
// request decides.
type Union []Authenticator

// Authenticate implements Authenticator.
func (u Union) Authenticate(r *http.Request) (*request.User, bool, error) {
	var firstErr error
	for _, a := range u {
		user, ok, err := a.Authenticate(r)
		if err != nil {
			if firstErr == nil {
				firstErr = err
			}
			continue
		}
		if ok {
			return user, true, nil
		}
	}
	return nil, false, firstErr
}

// X509 authenticates requests by a TLS client certificate that chains to
// one of Roots: the subject's CommonName is the user, its Organizations the
// groups (as kube-apiserver's --client-ca-file does). Verified chains are
// remembered per certificate, so a connection's requests verify once.
type X509 struct {
	Roots *x509.CertPool

	mu       sync.Mutex
	verified map[string]*request.User
}

// NewX509 returns an X509 authenticator trusting roots.
func NewX509(roots *x509.CertPool) *X509 {
	return &X509{Roots: roots}
}

// maxVerifiedCache bounds the per-certificate cache; it is emptied when
// full.
const maxVerifiedCache = 4096

// Authenticate implements Authenticator.
func (a *X509) Authenticate(r *http.Request) (*request.User, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 || a.Roots == nil {
		return nil, false, nil
	}
	certs := r.TLS.PeerCertificates
	key := string(certs[0].Signature)
	a.mu.Lock()
	u, ok := a.verified[key]
	a.mu.Unlock()
	if ok && time.Now().Before(certs[0].NotAfter) {
		return u, true, nil
	}
	u, ok, err := a.verify(certs)
	if ok {
		a.mu.Lock()
		if a.verified == nil || len(a.verified) >= maxVerifiedCache {
			a.verified = map[string]*request.User{}
		}
		a.verified[key] = u
		a.mu.Unlock()
	}
	return u, ok, err
}

func (a *X509) verify(certs []*x509.Certificate) (*request.User, bool, error) {
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	chains, err := certs[0].Verify(x509.VerifyOptions{
		Roots:         a.Roots,
		Intermediates: inter,
		KeyUsages:     []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	})
	if err != nil || len(chains) == 0 {
		return nil, false, err
	}
	leaf := certs[0]
	if leaf.Subject.CommonName == "" {
		return nil, false, nil
	}
	groups := append([]string(nil), leaf.Subject.Organization...)
	groups = append(groups, "system:authenticated")
	return &request.User{Name: leaf.Subject.CommonName, Groups: groups}, true, nil
}

// Anonymous is the user of unauthenticated requests when anonymous access
// is enabled.
func Anonymous() *request.User {
	return &request.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}
}

// Attributes are what an authorization decision is made on.
type Attributes struct {
	User *request.User
	// Info is the parsed request (verb, resource, namespace, name, ...).
	Info *request.Info
}

// Decision is an authorizer's answer.
type Decision int

const (
	// DecisionNoOpinion lets the next authorizer decide; at the end of the
	// chain it denies.
	DecisionNoOpinion Decision = iota
	DecisionAllow
	DecisionDeny
)

// Authorizer decides whether a request may proceed. reason explains a deny.
type Authorizer interface {
	Authorize(ctx context.Context, a Attributes) (d Decision, reason string, err error)
}

// AlwaysAllow authorizes every request.
type AlwaysAllow struct{}

// Authorize implements Authorizer.
func (AlwaysAllow) Authorize(context.Context, Attributes) (Decision, string, error) {
	return DecisionAllow, "", nil
}

// AuthorizerUnion asks each authorizer in turn (the --authorization-mode
// order): the first Allow or Deny decides. When every one has no opinion
// the request is denied, with their reasons joined, as kube-apiserver's
// union does. Errors do not stop the walk; they are aggregated as
// kube-apiserver's (utilerrors.NewAggregate).
type AuthorizerUnion []Authorizer

// Authorize implements Authorizer.
func (u AuthorizerUnion) Authorize(ctx context.Context, a Attributes) (Decision, string, error) {
	var reasons []string
	var errs []error
	for _, z := range u {
		d, reason, err := z.Authorize(ctx, a)
		if err != nil {
			errs = append(errs, err)
		}
		if reason != "" {
			reasons = append(reasons, reason)
		}
		switch d {
		case DecisionAllow, DecisionDeny:
			return d, reason, err
		}
	}
	return DecisionNoOpinion, strings.Join(reasons, "\n"), utilerrors.NewAggregate(errs)
}

// AlwaysDeny denies every request (--authorization-mode=AlwaysDeny).
type AlwaysDeny struct{}

// Authorize implements Authorizer.
func (AlwaysDeny) Authorize(context.Context, Attributes) (Decision, string, error) {
	return DecisionDeny, "Everything is forbidden.", nil
}

// PrivilegedGroups allows every request of a user in one of its groups
// and has no opinion on anyone else's. kube-apiserver asks one for
// system:masters before the authorizers --authorization-mode names,
// whatever they are (AlwaysDeny included). It lists no rules: a union
// leaves it out of RulesFor, as kube-apiserver leaves it out of its rule
// resolvers.
type PrivilegedGroups []string

// Authorize implements Authorizer.
func (p PrivilegedGroups) Authorize(_ context.Context, a Attributes) (Decision, string, error) {
	if a.User != nil {
		for _, g := range a.User.Groups {
			if slices.Contains(p, g) {
				return DecisionAllow, "", nil
			}
		}
	}
	return DecisionNoOpinion, "", nil
}

// RuleResolver lists what a user may do in a namespace, for
// SelfSubjectRulesReview (kubectl auth can-i --list). incomplete is true
// when the list may miss rules (an authorizer that cannot list them).
type RuleResolver interface {
	RulesFor(ctx context.Context, user *request.User, namespace string) (rules []authorizationv1.ResourceRule, nonResource []authorizationv1.NonResourceRule, incomplete bool, err error)
}

// ListsRules reports whether a can list rules: it is a RuleResolver, and
// for a union at least one member lists real rules.
func ListsRules(a Authorizer) bool {
	if u, ok := a.(AuthorizerUnion); ok {
		for _, m := range u {
			if ListsRules(m) {
				return true
			}
		}
		return false
	}
	_, ok := a.(RuleResolver)
	return ok
}

// RulesFor implements RuleResolver: the members' rules together; members
// that cannot list rules make the answer incomplete (PrivilegedGroups
// aside, which is not asked).
func (u AuthorizerUnion) RulesFor(ctx context.Context, user *request.User, namespace string) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule, bool, error) {
	var rules []authorizationv1.ResourceRule
	var nonResource []authorizationv1.NonResourceRule
	incomplete := false
	var errs []error
	for _, m := range u {
		if _, ok := m.(PrivilegedGroups); ok {
			continue
		}
		rr, ok := m.(RuleResolver)
		if !ok {
			incomplete = true
			continue
		}
		r, n, inc, err := rr.RulesFor(ctx, user, namespace)
		rules, nonResource = append(rules, r...), append(nonResource, n...)
		incomplete = incomplete || inc
		if err != nil {
			errs = append(errs, err)
		}
	}
	return rules, nonResource, incomplete, errors.Join(errs...)
}

// RulesFor implements RuleResolver: everything.
func (AlwaysAllow) RulesFor(context.Context, *request.User, string) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule, bool, error) {
	return []authorizationv1.ResourceRule{{Verbs: []string{"*"}, APIGroups: []string{"*"}, Resources: []string{"*"}}},
		[]authorizationv1.NonResourceRule{{Verbs: []string{"*"}, NonResourceURLs: []string{"*"}}}, false, nil
}

// RulesFor implements RuleResolver: nothing.
func (AlwaysDeny) RulesFor(context.Context, *request.User, string) ([]authorizationv1.ResourceRule, []authorizationv1.NonResourceRule, bool, error) {
	return nil, nil, false, nil
}
