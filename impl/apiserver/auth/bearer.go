package auth

import (
	"context"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// TokenAuthenticator identifies the user a bearer token stands for. ok is
// false when it does not know the token; err when the token is one of its
// kind but invalid (expired, revoked, bound to a deleted object).
type TokenAuthenticator interface {
	AuthenticateToken(ctx context.Context, token string) (user *request.User, ok bool, err error)
}

// AudienceTokenAuthenticator is a TokenAuthenticator that can check a
// token for audiences other than the API server's, as kube-apiserver's
// audience-aware token authenticators read the audiences asked for from
// the request's context (a TokenReview's spec.audiences). auds are the
// audiences, among those asked for, the token is good for; none asked
// for checks none.
type AudienceTokenAuthenticator interface {
	TokenAuthenticator
	AuthenticateTokenFor(ctx context.Context, token string, audiences []string) (user *request.User, auds []string, ok bool, err error)
}

// ErrInvalidBearerToken is the error of a bearer token no token
// authenticator accepts.
var ErrInvalidBearerToken = errors.New("invalid bearer token")

// BearerToken authenticates requests carrying "Authorization: Bearer
// <token>" with the first of Tokens that accepts the token. A bearer token
// that none accepts is an error (401), never an anonymous request, as in
// kube-apiserver.
type BearerToken struct {
	Tokens []TokenAuthenticator
}

// Authenticate implements Authenticator.
func (b BearerToken) Authenticate(r *http.Request) (*request.User, bool, error) {
	token, ok := bearerToken(r.Header.Get("Authorization"))
	if !ok {
		return nil, false, nil
	}
	var errs []error
	for _, t := range b.Tokens {
		u, ok, err := t.AuthenticateToken(r.Context(), token)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return u, true, nil
		}
	}
	if len(errs) > 0 {
		return nil, false, fmt.Errorf("%w: %w", ErrInvalidBearerToken, errors.Join(errs...))
	}
	return nil, false, ErrInvalidBearerToken
}

// bearerToken extracts the token of an Authorization header ("Bearer" is
// matched case-insensitively; an empty token is no token).
func bearerToken(h string) (string, bool) {
	scheme, token, ok := strings.Cut(strings.TrimSpace(h), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// TokenFile is the static token authenticator of --token-auth-file.
type TokenFile struct {
	tokens map[string]*request.User
}

// LoadTokenFile reads a --token-auth-file: CSV lines
// token,user,uid[,"group1,group2,..."] (extra columns ignored). A line
// with fewer than three columns is an error; a line with an empty token
// is skipped; a repeated token keeps its last line.
func LoadTokenFile(path string) (*TokenFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("reading token file: %w", err)
	}
	defer f.Close()
	t, err := ParseTokenFile(f)
	if err != nil {
		return nil, fmt.Errorf("token file %q: %w", path, err)
	}
	return t, nil
}

// ParseTokenFile parses token file content (see LoadTokenFile).
func ParseTokenFile(rd io.Reader) (*TokenFile, error) {
	r := csv.NewReader(rd)
	r.FieldsPerRecord = -1
	r.TrimLeadingSpace = true
	tokens := map[string]*request.User{}
	for n := 1; ; n++ {
		rec, err := r.Read()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if len(rec) < 3 {
			return nil, fmt.Errorf("record %d: must have at least 3 columns (token, user name, user uid), found %d", n, len(rec))
		}
		if rec[0] == "" {
			slog.Warn("empty token in token file", "record", n)
			continue
		}
		u := &request.User{Name: rec[1], UID: rec[2]}
		if len(rec) >= 4 && rec[3] != "" {
			u.Groups = strings.Split(rec[3], ",")
		}
		tokens[rec[0]] = u
	}
	return &TokenFile{tokens: tokens}, nil
}

// AuthenticateToken implements TokenAuthenticator.
func (t *TokenFile) AuthenticateToken(_ context.Context, token string) (*request.User, bool, error) {
	u, ok := t.tokens[token]
	if !ok {
		return nil, false, nil
	}
	c := *u
	c.Groups = append([]string(nil), u.Groups...)
	return &c, true, nil
}

// AuthenticatedGroup is the group of every authenticated user.
const AuthenticatedGroup = "system:authenticated"

// WithAuthenticatedGroup returns u with system:authenticated added to its
// groups, unless it is anonymous or already has it (kube-apiserver adds it
// to every user its authenticators return).
func WithAuthenticatedGroup(u *request.User) *request.User {
	if u == nil || u.Name == "system:anonymous" {
		return u
	}
	for _, g := range u.Groups {
		if g == AuthenticatedGroup || g == "system:unauthenticated" {
			return u
		}
	}
	c := *u
	c.Groups = append(append([]string(nil), u.Groups...), AuthenticatedGroup)
	return &c
}
