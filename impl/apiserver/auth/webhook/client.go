// Package webhook is kube-apiserver's webhook authorization
// (--authorization-mode=Webhook, a SubjectAccessReview per request) and
// webhook token authentication (--authentication-token-webhook-config-file,
// a TokenReview per unknown bearer token). Both call a remote service
// described by a kubeconfig file: its cluster is the service, its user the
// API server's credentials to it. Answers are cached for the configured
// TTLs; failed calls are retried with kube-apiserver's webhook backoff.
//
// The decisions are pure functions (ReviewSpec, Decide, TokenResult);
// Client is the thin I/O around them.
package webhook

import (
	"context"
	"errors"
	"fmt"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authenticationv1beta1 "k8s.io/api/authentication/v1beta1"
	authorizationv1 "k8s.io/api/authorization/v1"
	authorizationv1beta1 "k8s.io/api/authorization/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// Versions of the review APIs a webhook can speak (the
// --authorization-webhook-version and --authentication-token-webhook-version
// values).
const (
	VersionV1      = "v1"
	VersionV1beta1 = "v1beta1"
)

// requestTimeout bounds one call, as kube-apiserver's generic webhook
// client does, so that a hung webhook does not hang requests.
const requestTimeout = 30 * time.Second

// DefaultRetryBackoff is kube-apiserver's backoff for authentication and
// authorization webhooks: five tries, 500ms apart at first, growing 1.5x
// with 20% jitter.
func DefaultRetryBackoff() wait.Backoff {
	return wait.Backoff{Duration: 500 * time.Millisecond, Factor: 1.5, Jitter: 0.2, Steps: 5}
}

var reviewScheme = func() *runtime.Scheme {
	s := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{
		authenticationv1.AddToScheme, authenticationv1beta1.AddToScheme,
		authorizationv1.AddToScheme, authorizationv1beta1.AddToScheme,
	} {
		if err := add(s); err != nil {
			panic(err) // static registration: a programming error
		}
	}
	return s
}()

// Client POSTs review objects to the URL of a webhook kubeconfig (the
// cluster's server, path included, as kube-apiserver does) and decodes the
// answer.
type Client struct {
	rest  rest.Interface
	retry wait.Backoff
}

// NewClient loads kubeconfigFile (its current context's cluster and user)
// and returns a Client for it that retries with backoff.
func NewClient(kubeconfigFile string, backoff wait.Backoff) (*Client, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = kubeconfigFile
	cfg, err := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{}).ClientConfig()
	if err != nil {
		return nil, err
	}
	return NewClientForConfig(cfg, backoff)
}

// NewClientForConfig returns a Client calling cfg.Host.
func NewClientForConfig(cfg *rest.Config, backoff wait.Backoff) (*Client, error) {
	if backoff.Steps <= 0 {
		return nil, errors.New("webhook retry backoff needs at least one step")
	}
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = requestTimeout
	cfg.APIPath = ""
	cfg.GroupVersion = nil
	cfg.ContentType = runtime.ContentTypeJSON
	cfg.NegotiatedSerializer = serializer.NewCodecFactory(reviewScheme).WithoutConversion()
	rc, err := rest.UnversionedRESTClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &Client{rest: rc, retry: backoff}, nil
}

// Post sends in and decodes the answer into out, retrying transient
// failures (see shouldRetry) with the client's backoff. The error is the
// last call's.
func (c *Client) Post(ctx context.Context, in, out runtime.Object) error {
	var callErr error
	err := wait.ExponentialBackoffWithContext(ctx, c.retry, func(ctx context.Context) (bool, error) {
		callErr = c.rest.Post().Body(in).Do(ctx).Into(out)
		switch {
		case callErr == nil:
			return true, nil
		case shouldRetry(callErr):
			return false, nil
		}
		return false, callErr
	})
	switch {
	case callErr != nil:
		return callErr
	case err != nil:
		return fmt.Errorf("webhook call failed: %w", err)
	}
	return nil
}

// shouldRetry: the failures kube-apiserver's webhooks retry — a reset or
// lost connection, a 500, a timeout, a 429, or any answer asking the
// client to come back later (Retry-After).
func shouldRetry(err error) bool {
	if utilnet.IsConnectionReset(err) || utilnet.IsHTTP2ConnectionLost(err) ||
		apierrors.IsInternalError(err) || apierrors.IsTimeout(err) || apierrors.IsTooManyRequests(err) {
		return true
	}
	_, later := apierrors.SuggestsClientDelay(err)
	return later
}
