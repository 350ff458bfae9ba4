package controllermanager

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"golang.org/x/oauth2"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/transport"
)

// ServiceAccountNames are the kube-system service accounts the controllers
// act as with --use-service-account-credentials: kube-controller-manager's
// names, to which the default RBAC policy binds the
// system:controller:<name> ClusterRoles.
var ServiceAccountNames = map[string]string{
	Deployment:             "deployment-controller",
	ReplicaSet:             "replicaset-controller",
	GarbageCollector:       "generic-garbage-collector",
	Namespace:              "namespace-controller",
	NodeLifecycle:          "node-controller",
	PodGC:                  "pod-garbage-collector",
	Endpoint:               "endpoint-controller",
	EndpointSlice:          "endpointslice-controller",
	EndpointSliceMirroring: "endpointslicemirroring-controller",
	ServiceAccount:         "serviceaccount-controller",
	RootCAPublisher:        "root-ca-cert-publisher",
	ResourceQuota:          "resourcequota-controller",
	Disruption:             "disruption-controller",
	CSRApproving:           "certificate-controller",
	CSRSigning:             "certificate-controller",
	CSRCleaner:             "certificate-controller",
	ClusterRoleAggregation: "clusterrole-aggregation-controller",

	LegacyServiceAccountTokenCleaner: "legacy-service-account-token-cleaner",
}

// Token lifetimes, as kube-controller-manager's dynamic client builder:
// tokens are requested for an hour and replaced once less than a fifth of
// their lifetime is left; a lifetime under ten minutes (clock skew) counts
// as ten minutes.
const (
	DefaultTokenExpirationSeconds = 3600
	DefaultTokenLeewayPercent     = 20
	minTokenLifetime              = 10 * time.Minute
)

// ServiceAccountClientBuilder builds per-controller clients that
// authenticate as a service account in Namespace with bearer tokens from
// the TokenRequest API (serviceaccounts/token), refreshed before they
// expire and after a 401. The root client (the controller manager's own
// identity) gets or creates the service accounts and requests the tokens.
type ServiceAccountClientBuilder struct {
	// Root is the controller manager's own client.
	Root typedcorev1.CoreV1Interface
	// Base is the controller manager's rest.Config; its credentials are
	// dropped (rest.AnonymousClientConfig) and replaced by the tokens.
	Base *rest.Config
	// Namespace of the service accounts (kube-system).
	Namespace string
	// ExpirationSeconds requested per token (DefaultTokenExpirationSeconds
	// when 0) and LeewayPercent of the lifetime left at which it is
	// replaced (DefaultTokenLeewayPercent when 0).
	ExpirationSeconds int64
	LeewayPercent     int
	// Now is the clock the refresh time is computed on (time.Now when nil).
	Now func() time.Time

	mu    sync.Mutex
	wraps map[string]transport.WrapperFunc
}

// NewServiceAccountClientBuilder is a builder with kube-controller-manager's
// defaults: service accounts in kube-system, one-hour tokens.
func NewServiceAccountClientBuilder(root kubernetes.Interface, base *rest.Config) *ServiceAccountClientBuilder {
	return &ServiceAccountClientBuilder{Root: root.CoreV1(), Base: base, Namespace: metav1.NamespaceSystem}
}

// Config returns a rest.Config authenticating as the service account
// saName, getting or creating the account first. Configs for the same
// account share one token cache.
func (b *ServiceAccountClientBuilder) Config(ctx context.Context, saName string) (*rest.Config, error) {
	if _, err := getOrCreateServiceAccount(ctx, b.Root, b.Namespace, saName); err != nil {
		return nil, fmt.Errorf("controller manager: service account %s/%s: %w", b.Namespace, saName, err)
	}
	cfg := rest.AnonymousClientConfig(b.Base)
	rest.AddUserAgent(cfg, serviceAccountUsername(b.Namespace, saName))
	b.mu.Lock()
	defer b.mu.Unlock()
	wrap, ok := b.wraps[saName]
	if !ok {
		src := &serviceAccountTokenSource{
			ctx: ctx, core: b.Root, namespace: b.Namespace, name: saName,
			expirationSeconds: b.ExpirationSeconds, leewayPercent: b.LeewayPercent, now: b.Now,
		}
		if src.expirationSeconds == 0 {
			src.expirationSeconds = DefaultTokenExpirationSeconds
		}
		if src.leewayPercent == 0 {
			src.leewayPercent = DefaultTokenLeewayPercent
		}
		if src.now == nil {
			src.now = time.Now
		}
		wrap = transport.ResettableTokenSourceWrapTransport(transport.NewCachedTokenSource(src))
		if b.wraps == nil {
			b.wraps = map[string]transport.WrapperFunc{}
		}
		b.wraps[saName] = wrap
	}
	cfg.Wrap(wrap)
	return cfg, nil
}

// Clients returns the clientset, metadata, dynamic and discovery clients of
// the service account saName.
func (b *ServiceAccountClientBuilder) Clients(ctx context.Context, saName string) (Clients, error) {
	cfg, err := b.Config(ctx, saName)
	if err != nil {
		return Clients{}, err
	}
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Clients{}, fmt.Errorf("controller manager: client for %s: %w", saName, err)
	}
	return ClientsFor(kube, cfg)
}

func serviceAccountUsername(namespace, name string) string {
	return "system:serviceaccount:" + namespace + ":" + name
}

// getOrCreateServiceAccount returns the service account, creating it when
// missing (a concurrent creation is re-read).
func getOrCreateServiceAccount(ctx context.Context, core typedcorev1.CoreV1Interface, namespace, name string) (*corev1.ServiceAccount, error) {
	sa, err := core.ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	if err == nil {
		return sa, nil
	}
	if !apierrors.IsNotFound(err) {
		return nil, err
	}
	sa, err = core.ServiceAccounts(namespace).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name}}, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		return core.ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	}
	return sa, err
}

// serviceAccountTokenSource requests a token for one service account per
// call; transport.NewCachedTokenSource keeps it until its Expiry.
type serviceAccountTokenSource struct {
	ctx               context.Context
	core              typedcorev1.CoreV1Interface
	namespace, name   string
	expirationSeconds int64
	leewayPercent     int
	now               func() time.Time
}

// Token implements oauth2.TokenSource: get or create the service account
// (it may have been deleted since) and request a token, retrying with
// back-off (0.5 s, doubling, four tries) as kube-controller-manager.
func (ts *serviceAccountTokenSource) Token() (*oauth2.Token, error) {
	var tr *authenticationv1.TokenRequest
	var last error
	backoff := wait.Backoff{Duration: 500 * time.Millisecond, Factor: 2, Steps: 4}
	err := wait.ExponentialBackoffWithContext(ts.ctx, backoff, func(ctx context.Context) (bool, error) {
		if _, err := getOrCreateServiceAccount(ctx, ts.core, ts.namespace, ts.name); err != nil {
			last = err
			slog.Debug("controller manager: get or create service account", "namespace", ts.namespace, "name", ts.name, "err", err)
			return false, nil
		}
		secs := ts.expirationSeconds
		out, err := ts.core.ServiceAccounts(ts.namespace).CreateToken(ctx, ts.name,
			&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: &secs}}, metav1.CreateOptions{})
		if err != nil {
			last = err
			slog.Debug("controller manager: token request", "namespace", ts.namespace, "name", ts.name, "err", err)
			return false, nil
		}
		tr = out
		return true, nil
	})
	if err != nil {
		return nil, fmt.Errorf("controller manager: token for %s/%s: %w", ts.namespace, ts.name, errors.Join(err, last))
	}
	if tr.Status.Token == "" {
		return nil, fmt.Errorf("controller manager: token request for %s/%s returned no token", ts.namespace, ts.name)
	}
	return &oauth2.Token{
		AccessToken: tr.Status.Token,
		TokenType:   "Bearer",
		Expiry:      tokenRefreshTime(ts.now(), tr.Status.ExpirationTimestamp.Time, ts.leewayPercent),
	}, nil
}

// tokenRefreshTime is when a token issued at now that expires at expiry is
// replaced: when leewayPercent of its lifetime is left, the lifetime
// counting as at least ten minutes.
func tokenRefreshTime(now, expiry time.Time, leewayPercent int) time.Time {
	lifetime := expiry.Sub(now)
	if lifetime < minTokenLifetime {
		lifetime = minTokenLifetime
	}
	leeway := time.Duration(int64(lifetime) * int64(leewayPercent) / 100)
	return now.Add(lifetime - leeway)
}
