package auth

import (
	"context"
	"crypto"
	"crypto/rand"
	"crypto/subtle"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// Service account tokens: JWTs the API server signs for a ServiceAccount.
// Legacy tokens (issuer "kubernetes/serviceaccount", no expiry) live in a
// kubernetes.io/service-account-token Secret and are valid while that
// secret holds them; bound tokens (issuer --service-account-issuer, from
// the TokenRequest API) carry an audience, an expiry and the
// "kubernetes.io" claim naming the service account and optionally the pod,
// secret or node they are bound to; they are rejected once any of those
// is gone or was recreated (its uid differs). An extended bound token
// (a warnafter claim) is accepted until its exp but counted stale, and
// audited so, once used after warnafter.

// LegacyIssuer is the issuer of secret-based service account tokens.
const LegacyIssuer = "kubernetes/serviceaccount"

// Extra keys kube-apiserver puts on a bound service account token's user.
const (
	ExtraPodName      = "authentication.kubernetes.io/pod-name"
	ExtraPodUID       = "authentication.kubernetes.io/pod-uid"
	ExtraNodeName     = "authentication.kubernetes.io/node-name"
	ExtraNodeUID      = "authentication.kubernetes.io/node-uid"
	ExtraCredentialID = "authentication.kubernetes.io/credential-id"
)

// ServiceAccountUsernamePrefix starts every service account's user name:
// system:serviceaccount:<namespace>:<name>.
const ServiceAccountUsernamePrefix = "system:serviceaccount:"

// ServiceAccountUsername is the user name of a service account.
func ServiceAccountUsername(namespace, name string) string {
	return ServiceAccountUsernamePrefix + namespace + ":" + name
}

// SplitServiceAccountUsername parses system:serviceaccount:<ns>:<name>.
func SplitServiceAccountUsername(user string) (namespace, name string, ok bool) {
	rest, ok := strings.CutPrefix(user, ServiceAccountUsernamePrefix)
	if !ok {
		return "", "", false
	}
	namespace, name, ok = strings.Cut(rest, ":")
	if !ok || namespace == "" || name == "" || strings.Contains(name, ":") {
		return "", "", false
	}
	return namespace, name, true
}

// ServiceAccountGroups are the groups of a service account's user.
func ServiceAccountGroups(namespace string) []string {
	return []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace}
}

// ObjectGetter reads the objects tokens are checked against. A missing
// object is an apierrors NotFound error.
type ObjectGetter interface {
	GetServiceAccount(ctx context.Context, namespace, name string) (*corev1.ServiceAccount, error)
	GetPod(ctx context.Context, namespace, name string) (*corev1.Pod, error)
	GetSecret(ctx context.Context, namespace, name string) (*corev1.Secret, error)
	GetNode(ctx context.Context, name string) (*corev1.Node, error)
}

// ServiceAccountTokens issues and authenticates service account tokens.
type ServiceAccountTokens struct {
	// Issuers are accepted on bound tokens; the first is the one new
	// tokens carry (--service-account-issuer).
	Issuers []string
	// SigningKey signs new tokens (--service-account-signing-key-file);
	// nil: this server cannot issue tokens.
	SigningKey crypto.Signer
	// VerifyKeys verify tokens (--service-account-key-file); the signing
	// key's public half is always accepted.
	VerifyKeys []crypto.PublicKey
	// APIAudiences are the audiences this server accepts (--api-audiences;
	// default: the issuers). A bound token must carry one of them.
	APIAudiences []string
	// Objects is where service accounts, pods, secrets and nodes are read.
	Objects ObjectGetter
	// Now is the clock (time.Now when nil).
	Now func() time.Time
	// LegacyTokens, when set, records the daily last-used label of legacy
	// token secrets.
	LegacyTokens LegacyTokenTracker
	// NoLegacyLookup (--service-account-lookup=false): a legacy token is
	// accepted on its signature and claims alone, without checking that
	// its secret and service account still exist.
	NoLegacyLookup bool
	// Metrics, when set, counts legacy token use (kube-apiserver's
	// serviceaccount_legacy_* counters).
	Metrics *ServiceAccountMetrics
}

// deletionGrace: a token bound to an object being deleted stays valid this
// long after the object's deletionTimestamp, as in kube-apiserver.
const deletionGrace = 60 * time.Second

func (s *ServiceAccountTokens) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

func (s *ServiceAccountTokens) audiences() []string {
	if len(s.APIAudiences) > 0 {
		return s.APIAudiences
	}
	return s.Issuers
}

func (s *ServiceAccountTokens) verifyKeys() []crypto.PublicKey {
	keys := s.VerifyKeys
	if s.SigningKey != nil {
		keys = append(slices.Clip(keys), s.SigningKey.Public())
	}
	return keys
}

// tokenClaims are the claims of both token kinds.
type tokenClaims struct {
	Issuer    string       `json:"iss,omitempty"`
	Subject   string       `json:"sub,omitempty"`
	Audience  audience     `json:"aud,omitempty"`
	Expiry    *numericDate `json:"exp,omitempty"`
	NotBefore *numericDate `json:"nbf,omitempty"`
	IssuedAt  *numericDate `json:"iat,omitempty"`
	ID        string       `json:"jti,omitempty"`
	// Bound tokens.
	Kubernetes *kubernetesClaims `json:"kubernetes.io,omitempty"`
	// Legacy tokens.
	LegacyNamespace string `json:"kubernetes.io/serviceaccount/namespace,omitempty"`
	LegacySecret    string `json:"kubernetes.io/serviceaccount/secret.name,omitempty"`
	LegacyName      string `json:"kubernetes.io/serviceaccount/service-account.name,omitempty"`
	LegacyUID       string `json:"kubernetes.io/serviceaccount/service-account.uid,omitempty"`
}

type kubernetesClaims struct {
	Namespace      string       `json:"namespace,omitempty"`
	ServiceAccount objectRef    `json:"serviceaccount"`
	Pod            *objectRef   `json:"pod,omitempty"`
	Secret         *objectRef   `json:"secret,omitempty"`
	Node           *objectRef   `json:"node,omitempty"`
	WarnAfter      *numericDate `json:"warnafter,omitempty"`
}

type objectRef struct {
	Name string `json:"name,omitempty"`
	UID  string `json:"uid,omitempty"`
}

// audience is a JWT "aud": one string or an array of them.
type audience []string

func (a *audience) UnmarshalJSON(b []byte) error {
	var one string
	if err := json.Unmarshal(b, &one); err == nil {
		*a = audience{one}
		return nil
	}
	var many []string
	if err := json.Unmarshal(b, &many); err != nil {
		return fmt.Errorf("aud: %w", err)
	}
	*a = many
	return nil
}

// numericDate is seconds since the epoch (fractions allowed on input).
type numericDate int64

func (d *numericDate) UnmarshalJSON(b []byte) error {
	var f float64
	if err := json.Unmarshal(b, &f); err != nil {
		return fmt.Errorf("numeric date: %w", err)
	}
	if math.IsNaN(f) || math.IsInf(f, 0) || f > math.MaxInt64/2 || f < -math.MaxInt64/2 {
		return errors.New("numeric date out of range")
	}
	*d = numericDate(f)
	return nil
}

func date(t time.Time) *numericDate { d := numericDate(t.Unix()); return &d }

func (d *numericDate) time() time.Time { return time.Unix(int64(*d), 0) }

// BoundTokenRequest is what a bound token is issued for.
type BoundTokenRequest struct {
	ServiceAccount *corev1.ServiceAccount
	Audiences      []string
	Expiration     time.Duration
	// At most one of Pod, Secret and Node; Node may also accompany Pod
	// (the node the pod runs on).
	Pod    *corev1.Pod
	Secret *corev1.Secret
	Node   *corev1.Node
	// ID is the token's jti (NewTokenID); empty: a new one.
	ID string
	// WarnAfter, when positive, puts a warnafter claim this long after
	// issue in the kubernetes.io claim: the token is accepted until its
	// expiry but counted stale after it (an extended token, see
	// ExpirationExtension).
	WarnAfter time.Duration
}

// Extended bound tokens, as kube-apiserver's (the "safe transition" of
// projected tokens): a pod-bound TokenRequest for the API audiences asking
// for exactly WarnOnlyBoundTokenExpiration, the expiration kubelets ask
// for by default, gets a token valid for ExpirationExtension that warns
// after the requested expiration (--service-account-extend-token-expiration).
const (
	WarnOnlyBoundTokenExpiration = (60*60 + 7) * time.Second
	ExpirationExtension          = 365 * 24 * time.Hour
)

// IssueBound signs a bound token; it returns the token and its expiry.
func (s *ServiceAccountTokens) IssueBound(req BoundTokenRequest) (string, time.Time, error) {
	if s.SigningKey == nil || len(s.Issuers) == 0 {
		return "", time.Time{}, errors.New("this server has no service account signing key and issuer")
	}
	sa := req.ServiceAccount
	now := s.now()
	exp := now.Add(req.Expiration)
	jti := req.ID
	if jti == "" {
		var err error
		if jti, err = NewTokenID(); err != nil {
			return "", time.Time{}, err
		}
	}
	k := &kubernetesClaims{Namespace: sa.Namespace, ServiceAccount: objectRef{Name: sa.Name, UID: string(sa.UID)}}
	if req.Pod != nil {
		k.Pod = &objectRef{Name: req.Pod.Name, UID: string(req.Pod.UID)}
	}
	if req.Secret != nil {
		k.Secret = &objectRef{Name: req.Secret.Name, UID: string(req.Secret.UID)}
	}
	if req.Node != nil {
		k.Node = &objectRef{Name: req.Node.Name, UID: string(req.Node.UID)}
	}
	if req.WarnAfter > 0 {
		k.WarnAfter = date(now.Add(req.WarnAfter))
	}
	c := tokenClaims{
		Issuer: s.Issuers[0], Subject: ServiceAccountUsername(sa.Namespace, sa.Name),
		Audience: req.Audiences, Expiry: date(exp), NotBefore: date(now), IssuedAt: date(now),
		ID: jti, Kubernetes: k,
	}
	tok, err := signJWT(s.SigningKey, c)
	return tok, exp, err
}

// IssueLegacy signs a legacy token for sa, to be stored in secret (a
// kubernetes.io/service-account-token Secret).
func (s *ServiceAccountTokens) IssueLegacy(sa *corev1.ServiceAccount, secretName string) (string, error) {
	if s.SigningKey == nil {
		return "", errors.New("this server has no service account signing key")
	}
	return signJWT(s.SigningKey, tokenClaims{
		Issuer: LegacyIssuer, Subject: ServiceAccountUsername(sa.Namespace, sa.Name),
		LegacyNamespace: sa.Namespace, LegacySecret: secretName, LegacyName: sa.Name, LegacyUID: string(sa.UID),
	})
}

// AuditIssuedCredentialID annotates a TokenRequest with the credential id
// (CredentialID) of the token it issued, as kube-apiserver's.
const AuditIssuedCredentialID = "authentication.kubernetes.io/issued-credential-id"

// CredentialID is the credential id of a token with jti id, as a user's
// ExtraCredentialID carries it.
func CredentialID(id string) string { return "JTI=" + id }

// NewTokenID is a new random jti for a bound token.
func NewTokenID() (string, error) {
	var b [16]byte
	if _, err := rand.Read(b[:]); err != nil {
		return "", err
	}
	h := hex.EncodeToString(b[:])
	return h[:8] + "-" + h[8:12] + "-" + h[12:16] + "-" + h[16:20] + "-" + h[20:], nil
}

// tokenClockSkew is how far a service account token's nbf and exp may be
// off this server's clock, as kube-apiserver's (go-jose's default
// leeway): a token is accepted until a minute after its exp.
const tokenClockSkew = time.Minute

// checkTokenTimes checks a bound token's time claims against now,
// allowing tokenClockSkew, in the order go-jose's claim validation (which
// kube-apiserver's bound token validator uses) checks them: nbf, exp, then
// iat, which may not be in the future. kube-apiserver's legacy validator
// checks none of them.
func checkTokenTimes(c *tokenClaims, now time.Time) error {
	switch {
	case c.NotBefore != nil && now.Add(tokenClockSkew).Before(c.NotBefore.time()):
		return errors.New("service account token is not valid yet")
	case c.Expiry != nil && now.Add(-tokenClockSkew).After(c.Expiry.time()):
		return errors.New("service account token has expired")
	case c.IssuedAt != nil && now.Add(tokenClockSkew).Before(c.IssuedAt.time()):
		return errors.New("service account token is issued in the future")
	}
	return nil
}

// AuthenticateToken implements TokenAuthenticator. JWTs of another issuer
// are not its business (ok false, no error).
func (s *ServiceAccountTokens) AuthenticateToken(ctx context.Context, token string) (*request.User, bool, error) {
	var c tokenClaims
	hdr, signing, sig, err := parseJWT(token, &c)
	if errors.Is(err, errNotJWT) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, err
	}
	legacy := c.Issuer == LegacyIssuer
	if !legacy && !slices.Contains(s.Issuers, c.Issuer) {
		return nil, false, nil
	}
	if err := verifyJWS(hdr.Alg, hdr.Kid, signing, sig, s.verifyKeys()); err != nil {
		return nil, false, err
	}
	if len(c.Audience) == 0 {
		// A token without audiences is a legacy one, valid for this
		// server's (kube-apiserver records which account used one).
		audit.AddAnnotation(ctx, auditLegacyToken, c.Subject)
		s.Metrics.legacyTokenUsed()
	}
	if legacy {
		return s.validateLegacy(ctx, token, &c)
	}
	return s.validateBound(ctx, &c)
}

// Labels and audit annotations of legacy tokens, as kube-apiserver's.
const (
	// LegacyTokenLastUsedLabel carries the UTC date (2006-01-02) a legacy
	// token was last accepted; it is written at most once a day.
	LegacyTokenLastUsedLabel = "kubernetes.io/legacy-token-last-used"
	// LegacyTokenInvalidSinceLabel marks a legacy token secret whose token
	// is refused until the label is removed.
	LegacyTokenInvalidSinceLabel = "kubernetes.io/legacy-token-invalid-since"

	auditLegacyToken            = "authentication.k8s.io/legacy-token"
	auditLegacyTokenInvalidated = "authentication.k8s.io/legacy-token-invalidated"
	auditLegacyTokenAutoSecret  = "authentication.k8s.io/legacy-token-autogenerated-secret"
	auditLegacyTokenManual      = "authentication.k8s.io/legacy-token-manual-secret"

	legacyAutogeneratedWarning = "Use tokens from the TokenRequest API or manually created secret-based tokens instead of auto-generated secret-based tokens."
)

// LegacyTokenTracker records that a legacy token secret was used: it sets
// the secret's LegacyTokenLastUsedLabel to date (a merge patch guarded by
// the secret's uid, as kube-apiserver's). Errors are only logged.
type LegacyTokenTracker interface {
	MarkLegacyTokenUsed(ctx context.Context, secret *corev1.Secret, date string) error
}

// validateLegacy checks a legacy token as kube-apiserver's legacy
// validator with --service-account-lookup (the default): its claims, then
// its secret (present, not being deleted, holding this token), then its
// service account (present, same uid), then the secret's invalid-since
// label; it records the audit annotations and warning of legacy token use
// and the secret's last-used date.
func (s *ServiceAccountTokens) validateLegacy(ctx context.Context, token string, c *tokenClaims) (*request.User, bool, error) {
	switch {
	case c.Subject == "":
		return nil, false, errors.New("sub claim is missing")
	case c.LegacyNamespace == "":
		return nil, false, errors.New("namespace claim is missing")
	case c.LegacySecret == "":
		return nil, false, errors.New("secretName claim is missing")
	case c.LegacyName == "":
		return nil, false, errors.New("serviceAccountName claim is missing")
	case c.LegacyUID == "":
		return nil, false, errors.New("serviceAccountUID claim is missing")
	}
	if ns, name, ok := SplitServiceAccountUsername(c.Subject); !ok || ns != c.LegacyNamespace || name != c.LegacyName {
		return nil, false, errors.New("sub claim is invalid")
	}
	namespace := c.LegacyNamespace
	if s.NoLegacyLookup {
		return &request.User{Name: ServiceAccountUsername(namespace, c.LegacyName), UID: c.LegacyUID,
			Groups: ServiceAccountGroups(namespace)}, true, nil
	}
	secret, err := s.Objects.GetSecret(ctx, namespace, c.LegacySecret)
	if err != nil || secret.DeletionTimestamp != nil {
		return nil, false, errors.New("Token has been invalidated") //nolint:staticcheck // kube-apiserver's text
	}
	if subtle.ConstantTimeCompare(secret.Data[corev1.ServiceAccountTokenKey], []byte(token)) != 1 {
		return nil, false, errors.New("Token does not match server's copy") //nolint:staticcheck // kube-apiserver's text
	}
	sa, err := s.Objects.GetServiceAccount(ctx, namespace, c.LegacyName)
	if err != nil {
		return nil, false, fmt.Errorf("looking up service account %s/%s: %w", namespace, c.LegacyName, err)
	}
	if sa.DeletionTimestamp != nil {
		return nil, false, fmt.Errorf("ServiceAccount %s/%s has been deleted", namespace, c.LegacyName)
	}
	if string(sa.UID) != c.LegacyUID {
		return nil, false, fmt.Errorf("ServiceAccount UID (%s) does not match claim (%s)", sa.UID, c.LegacyUID)
	}
	if secret.Labels[LegacyTokenInvalidSinceLabel] != "" {
		audit.AddAnnotation(ctx, auditLegacyTokenInvalidated, secret.Name+"/"+secret.Namespace)
		s.Metrics.invalidAutoTokenUsed()
		s.markLegacyTokenUsed(ctx, secret)
		return nil, false, fmt.Errorf("the token in secret %s/%s for service account %s/%s has been marked invalid. Use tokens from the TokenRequest API or manually created secret-based tokens, or remove the '%s' label from the secret to temporarily allow use of this token",
			namespace, c.LegacySecret, namespace, c.LegacyName, LegacyTokenInvalidSinceLabel)
	}
	if slices.ContainsFunc(sa.Secrets, func(r corev1.ObjectReference) bool { return r.Name == secret.Name }) {
		request.AddWarning(ctx, legacyAutogeneratedWarning)
		audit.AddAnnotation(ctx, auditLegacyTokenAutoSecret, secret.Name)
		s.Metrics.autoTokenUsed()
	} else {
		audit.AddAnnotation(ctx, auditLegacyTokenManual, secret.Name)
		s.Metrics.manualTokenUsed()
	}
	s.markLegacyTokenUsed(ctx, secret)
	return &request.User{Name: ServiceAccountUsername(sa.Namespace, sa.Name), UID: string(sa.UID),
		Groups: ServiceAccountGroups(sa.Namespace)}, true, nil
}

// markLegacyTokenUsed writes today's date (UTC) on secret unless it
// already carries today's or tomorrow's (a clock behind another server's).
func (s *ServiceAccountTokens) markLegacyTokenUsed(ctx context.Context, secret *corev1.Secret) {
	if s.LegacyTokens == nil {
		return
	}
	now := s.now().UTC()
	today, tomorrow := now.Format(time.DateOnly), now.AddDate(0, 0, 1).Format(time.DateOnly)
	if last := secret.Labels[LegacyTokenLastUsedLabel]; last == today || last == tomorrow {
		return
	}
	if err := s.LegacyTokens.MarkLegacyTokenUsed(ctx, secret, today); err != nil {
		slog.Error("labelling legacy service account token with its last-used date", "secret", secret.Namespace+"/"+secret.Name, "err", err)
	}
}

func (s *ServiceAccountTokens) validateBound(ctx context.Context, c *tokenClaims) (*request.User, bool, error) {
	if c.Expiry == nil {
		return nil, false, errors.New("service account token has no expiry")
	}
	if !slices.ContainsFunc(c.Audience, func(a string) bool { return slices.Contains(s.audiences(), a) }) {
		return nil, false, fmt.Errorf("token audiences %q is invalid for the target audiences %q", []string(c.Audience), s.audiences())
	}
	// The time claims after the audiences, as kube-apiserver's token
	// authenticator checks the audiences before its validator does the times.
	if err := checkTokenTimes(c, s.now()); err != nil {
		return nil, false, err
	}
	k := c.Kubernetes
	if k == nil || k.Namespace == "" || k.ServiceAccount.Name == "" {
		return nil, false, errors.New("service account token is missing the kubernetes.io claim")
	}
	if c.Subject != ServiceAccountUsername(k.Namespace, k.ServiceAccount.Name) {
		return nil, false, errors.New("service account token subject does not match its claims")
	}
	sa, err := s.serviceAccount(ctx, k.Namespace, k.ServiceAccount.Name, k.ServiceAccount.UID)
	if err != nil {
		return nil, false, err
	}
	u := &request.User{Name: ServiceAccountUsername(sa.Namespace, sa.Name), UID: string(sa.UID),
		Groups: ServiceAccountGroups(sa.Namespace), Extra: map[string][]string{}}
	if c.ID != "" {
		u.Extra[ExtraCredentialID] = []string{CredentialID(c.ID)}
	}
	if p := k.Pod; p != nil {
		pod, err := s.Objects.GetPod(ctx, k.Namespace, p.Name)
		if err != nil {
			return nil, false, lookupError("pod", k.Namespace, p.Name, err)
		}
		if err := s.checkBound("pod", string(pod.UID), p.UID, pod.DeletionTimestamp); err != nil {
			return nil, false, err
		}
		u.Extra[ExtraPodName], u.Extra[ExtraPodUID] = []string{pod.Name}, []string{string(pod.UID)}
	}
	if sr := k.Secret; sr != nil {
		secret, err := s.Objects.GetSecret(ctx, k.Namespace, sr.Name)
		if err != nil {
			return nil, false, lookupError("secret", k.Namespace, sr.Name, err)
		}
		if err := s.checkBound("secret", string(secret.UID), sr.UID, secret.DeletionTimestamp); err != nil {
			return nil, false, err
		}
	}
	if n := k.Node; n != nil {
		if k.Pod == nil {
			// A token bound to the node itself: the node must exist.
			node, err := s.Objects.GetNode(ctx, n.Name)
			if err != nil {
				return nil, false, lookupError("node", "", n.Name, err)
			}
			if err := s.checkBound("node", string(node.UID), n.UID, node.DeletionTimestamp); err != nil {
				return nil, false, err
			}
		}
		u.Extra[ExtraNodeName] = []string{n.Name}
		if n.UID != "" {
			u.Extra[ExtraNodeUID] = []string{n.UID}
		}
	}
	if w := k.WarnAfter; w != nil && *w != 0 {
		s.checkWarnAfter(ctx, c.Subject, w.time())
	}
	if len(u.Extra) == 0 {
		u.Extra = nil
	}
	return u, true, nil
}

// auditStaleToken annotates requests made with an extended token after
// its warnafter, as kube-apiserver's.
const auditStaleToken = "authentication.k8s.io/stale-token"

// checkWarnAfter records the use of an accepted extended token (one with
// a warnafter claim): after warnafter it is stale, audited with
// auditStaleToken (the subject and the whole seconds since warnafter) and
// counted in serviceaccount_stale_tokens_total; before, counted in
// serviceaccount_valid_tokens_total.
func (s *ServiceAccountTokens) checkWarnAfter(ctx context.Context, subject string, warnAfter time.Time) {
	now := s.now()
	stale := now.After(warnAfter)
	if stale {
		audit.AddAnnotation(ctx, auditStaleToken, fmt.Sprintf("subject: %s, seconds after warning threshold: %d", subject, now.Unix()-warnAfter.Unix()))
	}
	s.Metrics.extendedTokenUsed(stale)
}

// serviceAccount reads the token's service account and checks its uid.
func (s *ServiceAccountTokens) serviceAccount(ctx context.Context, namespace, name, uid string) (*corev1.ServiceAccount, error) {
	sa, err := s.Objects.GetServiceAccount(ctx, namespace, name)
	if err != nil {
		return nil, lookupError("service account", namespace, name, err)
	}
	if err := s.checkBound("service account", string(sa.UID), uid, sa.DeletionTimestamp); err != nil {
		return nil, err
	}
	return sa, nil
}

// checkBound rejects a token whose object was recreated (uid differs) or
// has been deleting for longer than deletionGrace.
func (s *ServiceAccountTokens) checkBound(kind, actualUID, claimUID string, deleted *metav1.Time) error {
	if claimUID != "" && actualUID != claimUID {
		return fmt.Errorf("%s UID (%s) does not match claim (%s)", kind, actualUID, claimUID)
	}
	if deleted != nil && !deleted.Add(deletionGrace).After(s.now()) {
		return fmt.Errorf("service account token has been invalidated: its %s is being deleted", kind)
	}
	return nil
}

func lookupError(kind, namespace, name string, err error) error {
	if apierrors.IsNotFound(err) {
		if namespace == "" {
			return fmt.Errorf("%s %q has been deleted", kind, name)
		}
		return fmt.Errorf("%s %s/%s has been deleted", kind, namespace, name)
	}
	return fmt.Errorf("looking up %s %s/%s: %w", kind, namespace, name, err)
}

// TokenAudiences returns the audiences a token claims, without verifying
// it (call it on a token AuthenticateToken accepted).
func (s *ServiceAccountTokens) TokenAudiences(token string) []string {
	var c tokenClaims
	if _, _, _, err := parseJWT(token, &c); err != nil {
		return nil
	}
	return c.Audience
}
