package auth

import (
	"context"
	"crypto/subtle"
	"fmt"
	"regexp"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Bootstrap tokens (kubeadm's join tokens): "<id>.<secret>" where a
// Secret named bootstrap-token-<id> of type bootstrap.kubernetes.io/token
// in kube-system holds token-id, token-secret, an optional expiration
// (RFC 3339) and usage-bootstrap-authentication: "true". The user is
// system:bootstrap:<id> in group system:bootstrappers plus the secret's
// auth-extra-groups.

const (
	// SecretTypeBootstrapToken is the type of bootstrap token secrets.
	SecretTypeBootstrapToken corev1.SecretType = "bootstrap.kubernetes.io/token"
	// BootstrapTokenSecretPrefix starts their names.
	BootstrapTokenSecretPrefix = "bootstrap-token-"
	// BootstrapUserPrefix starts the user name of a bootstrap token.
	BootstrapUserPrefix = "system:bootstrap:"
	// BootstrapDefaultGroup is the group of every bootstrap token user.
	BootstrapDefaultGroup = "system:bootstrappers"
)

var (
	bootstrapTokenRE   = regexp.MustCompile(`^([a-z0-9]{6})\.([a-z0-9]{16})$`)
	bootstrapGroupRE   = regexp.MustCompile(`^system:bootstrappers:[a-z0-9:-]{0,255}[a-z0-9]$`)
	bootstrapNamespace = "kube-system"
)

// SecretGetter reads a secret; a missing one is an apierrors NotFound.
type SecretGetter interface {
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
}

// BootstrapTokens authenticates bootstrap tokens against kube-system
// secrets.
type BootstrapTokens struct {
	Secrets SecretGetter
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

// AuthenticateToken implements TokenAuthenticator. A token not in the
// bootstrap format is not its business; a well-formed one that matches no
// valid secret is an error, as in kube-apiserver.
func (b *BootstrapTokens) AuthenticateToken(ctx context.Context, token string) (*request.User, bool, error) {
	m := bootstrapTokenRE.FindStringSubmatch(token)
	if m == nil {
		return nil, false, nil
	}
	id, secretPart := m[1], m[2]
	name := BootstrapTokenSecretPrefix + id
	s, err := b.Secrets.GetSecret(ctx, bootstrapNamespace, name)
	if apierrors.IsNotFound(err) {
		return nil, false, fmt.Errorf("bootstrap token %s: secret %s/%s not found", id, bootstrapNamespace, name)
	}
	if err != nil {
		return nil, false, fmt.Errorf("bootstrap token %s: %w", id, err)
	}
	if s.DeletionTimestamp != nil {
		return nil, false, fmt.Errorf("bootstrap token %s: secret is being deleted", id)
	}
	if s.Type != SecretTypeBootstrapToken || s.Data == nil {
		return nil, false, fmt.Errorf("bootstrap token %s: secret has type %q, not %q", id, s.Type, SecretTypeBootstrapToken)
	}
	if subtle.ConstantTimeCompare(s.Data["token-secret"], []byte(secretPart)) != 1 {
		return nil, false, fmt.Errorf("bootstrap token %s: token secret does not match", id)
	}
	if string(s.Data["token-id"]) != id {
		return nil, false, fmt.Errorf("bootstrap token %s: token id does not match the secret's", id)
	}
	if exp := string(s.Data["expiration"]); exp != "" {
		t, err := time.Parse(time.RFC3339, exp)
		if err != nil {
			return nil, false, fmt.Errorf("bootstrap token %s: bad expiration %q: %w", id, exp, err)
		}
		now := time.Now
		if b.Now != nil {
			now = b.Now
		}
		if !now().Before(t) {
			return nil, false, fmt.Errorf("bootstrap token %s: expired at %s", id, exp)
		}
	}
	if string(s.Data["usage-bootstrap-authentication"]) != "true" {
		return nil, false, fmt.Errorf("bootstrap token %s: not marked usage-bootstrap-authentication", id)
	}
	groups := []string{BootstrapDefaultGroup}
	if extra := string(s.Data["auth-extra-groups"]); extra != "" {
		for _, g := range strings.Split(extra, ",") {
			if !bootstrapGroupRE.MatchString(g) {
				return nil, false, fmt.Errorf("bootstrap token %s: auth-extra-groups %q: %q does not match %s", id, extra, g, bootstrapGroupRE)
			}
			if g != BootstrapDefaultGroup {
				groups = append(groups, g)
			}
		}
	}
	return &request.User{Name: BootstrapUserPrefix + id, Groups: groups}, true, nil
}
