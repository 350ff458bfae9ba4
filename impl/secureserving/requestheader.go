package secureserving

import (
	"crypto/x509"
	"fmt"
	"net/http"
	"net/url"
	"slices"
	"strings"

	authorizationv1 "k8s.io/api/authorization/v1"
)

// requestHeaderAuthenticator is front-proxy authentication, as
// kube-apiserver's and the delegating authenticator's request-header
// authenticator: a request whose client certificate the front-proxy CA
// verifies, with a CommonName among allowedNames when there are any, is
// from the user its headers name. The headers are removed from the
// request once read, so the handler never sees them.
type requestHeaderAuthenticator struct {
	roots                                                          *x509.CertPool
	allowedNames                                                   []string
	usernameHeaders, uidHeaders, groupHeaders, extraHeaderPrefixes []string
}

func newRequestHeaderAuthenticator(roots *x509.CertPool, o RequestHeaderOptions) *requestHeaderAuthenticator {
	lower := func(prefixes []string) []string {
		out := make([]string, 0, len(prefixes))
		for _, p := range prefixes {
			if p = strings.ToLower(strings.TrimSpace(p)); p != "" {
				out = append(out, p)
			}
		}
		return out
	}
	return &requestHeaderAuthenticator{
		roots: roots, allowedNames: o.AllowedNames,
		usernameHeaders: o.UsernameHeaders, uidHeaders: o.UIDHeaders, groupHeaders: o.GroupHeaders,
		extraHeaderPrefixes: lower(o.ExtraHeaderPrefixes),
	}
}

// authenticate: ok with the headers' user; not ok and no error when the
// request has no client certificate or names no user; an error when the
// certificate is not a front proxy's.
func (a *requestHeaderAuthenticator) authenticate(r *http.Request) (user, bool, error) {
	if r.TLS == nil || len(r.TLS.PeerCertificates) == 0 {
		return user{}, false, nil
	}
	cert, err := verifyClientCertificate(r.TLS.PeerCertificates, a.roots)
	if err != nil {
		return user{}, false, fmt.Errorf("front proxy: %w", err)
	}
	if len(a.allowedNames) > 0 && !slices.Contains(a.allowedNames, cert.Subject.CommonName) {
		return user{}, false, fmt.Errorf("front proxy: client certificate with CommonName %q is not in --requestheader-allowed-names", cert.Subject.CommonName)
	}
	name := firstHeaderValue(r.Header, a.usernameHeaders)
	if name == "" {
		return user{}, false, nil
	}
	u := user{
		name:   name,
		uid:    firstHeaderValue(r.Header, a.uidHeaders),
		groups: allHeaderValues(r.Header, a.groupHeaders),
		extra:  a.extra(r.Header),
	}
	a.clear(r.Header)
	return u, true, nil
}

// firstHeaderValue is the first non-empty value of the first of names
// that has one.
func firstHeaderValue(h http.Header, names []string) string {
	for _, n := range names {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		for _, v := range h.Values(n) {
			if v = strings.TrimSpace(v); v != "" {
				return v
			}
		}
	}
	return ""
}

// allHeaderValues is every non-empty value of every one of names.
func allHeaderValues(h http.Header, names []string) []string {
	var out []string
	for _, n := range names {
		if n = strings.TrimSpace(n); n == "" {
			continue
		}
		for _, v := range h.Values(n) {
			if v = strings.TrimSpace(v); v != "" {
				out = append(out, v)
			}
		}
	}
	return out
}

// extra is the user's extra attributes: for every header starting with a
// prefix, the rest of its lower-cased name %-unescaped (as written when
// it cannot be) is a key and the header's values its values.
func (a *requestHeaderAuthenticator) extra(h http.Header) map[string]authorizationv1.ExtraValue {
	extra := map[string]authorizationv1.ExtraValue{}
	for name, values := range h {
		lower := strings.ToLower(name)
		for _, p := range a.extraHeaderPrefixes {
			rest, ok := strings.CutPrefix(lower, p)
			if !ok {
				continue
			}
			key, err := url.PathUnescape(rest)
			if err != nil {
				key = rest
			}
			for _, v := range values {
				if v = strings.TrimSpace(v); v != "" {
					extra[key] = append(extra[key], v)
				}
			}
			break
		}
	}
	if len(extra) == 0 {
		return nil
	}
	return extra
}

// clear removes the identity headers from the request.
func (a *requestHeaderAuthenticator) clear(h http.Header) {
	clearIdentityHeaders(h, slices.Concat(a.usernameHeaders, a.uidHeaders, a.groupHeaders), a.extraHeaderPrefixes)
}

// standardIdentityHeaders and standardExtraHeaderPrefix are the front-proxy
// headers kube-apiserver's flags default to. Like k8s.io/apiserver's
// authentication filter, the secure port removes them (and the configured
// ones) from every authenticated request, so that no handler sees an
// identity a client claimed for itself without a front proxy's
// certificate.
var standardIdentityHeaders = []string{"X-Remote-User", "X-Remote-Uid", "X-Remote-Group"}

const standardExtraHeaderPrefix = "x-remote-extra-"

// clearIdentityHeaders removes the headers named and those starting with
// one of the lower-cased prefixes.
func clearIdentityHeaders(h http.Header, names, lowerPrefixes []string) {
	for _, n := range names {
		if n = strings.TrimSpace(n); n != "" {
			h.Del(n)
		}
	}
	for name := range h {
		lower := strings.ToLower(name)
		for _, p := range lowerPrefixes {
			if strings.HasPrefix(lower, p) {
				h.Del(name)
				break
			}
		}
	}
}
