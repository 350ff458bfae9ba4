package serviceaccount

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/kubeproof/kubeproof/impl/controller/workloop"
)

// DefaultTokenWorkers is kube-controller-manager's
// --concurrent-serviceaccount-token-syncs default.
const DefaultTokenWorkers = 5

// TokenMaxRetries is how many times the tokens controller retries a
// failing service account or secret key before dropping it (upstream's
// tokens controller default, fewer than other controllers'
// workloop.MaxRetries).
const TokenMaxRetries = 10

// TokenGenerator signs the legacy token (issuer kubernetes/serviceaccount)
// stored in a service account's token secret; auth.ServiceAccountTokens
// with a SigningKey is one.
type TokenGenerator interface {
	IssueLegacy(sa *corev1.ServiceAccount, secretName string) (string, error)
}

// Tokens is kube-controller-manager's "serviceaccount-token" controller:
// it fills every kubernetes.io/service-account-token Secret (data.token, a
// legacy token signed with --service-account-private-key-file;
// data.namespace; data.ca.crt from --root-ca-file; the
// kubernetes.io/service-account.uid annotation), deletes such secrets whose
// service account is gone or was recreated, and takes a deleted secret out
// of its account's .secrets.
type Tokens struct {
	client    kubernetes.Interface
	generator TokenGenerator
	rootCA    []byte
	saList    corelisters.ServiceAccountLister
	secList   corelisters.SecretLister
	synced    []cache.InformerSynced
	accounts  workqueue.TypedRateLimitingInterface[string]
	secrets   workqueue.TypedRateLimitingInterface[string]
}

// TokenSecretInformer builds an informer factory whose Secret informer
// holds only kubernetes.io/service-account-token secrets, as upstream's
// tokens controller watches.
func TokenSecretInformer(client kubernetes.Interface) informers.SharedInformerFactory {
	return informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("type", string(corev1.SecretTypeServiceAccountToken)).String()
	}))
}

// NewTokens wires the tokens controller. secInformer should hold only
// service account token secrets (TokenSecretInformer).
func NewTokens(client kubernetes.Interface, generator TokenGenerator, rootCA []byte, saInformer coreinformers.ServiceAccountInformer, secInformer coreinformers.SecretInformer) (*Tokens, error) {
	if generator == nil {
		return nil, fmt.Errorf("service account tokens controller: no token generator (--service-account-private-key-file)")
	}
	c := &Tokens{
		client: client, generator: generator, rootCA: rootCA,
		saList: saInformer.Lister(), secList: secInformer.Lister(),
		synced:   []cache.InformerSynced{saInformer.Informer().HasSynced, secInformer.Informer().HasSynced},
		accounts: workloop.NewQueue("serviceaccount_tokens_service"),
		secrets:  workloop.NewQueue("serviceaccount_tokens_secret"),
	}
	_, _ = saInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		// Only a deleted account has work: its secrets go.
		DeleteFunc: func(obj any) {
			if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = t.Obj
			}
			if sa, ok := obj.(*corev1.ServiceAccount); ok {
				c.accounts.Add(joinKey(sa.Namespace, sa.Name, string(sa.UID)))
			}
		},
	})
	enqueueSecret := func(obj any) {
		if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = t.Obj
		}
		if s, ok := obj.(*corev1.Secret); ok && s.Type == corev1.SecretTypeServiceAccountToken {
			c.secrets.Add(joinKey(s.Namespace, s.Name, string(s.UID),
				s.Annotations[corev1.ServiceAccountNameKey], s.Annotations[corev1.ServiceAccountUIDKey]))
		}
	}
	_, _ = secInformer.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    enqueueSecret,
		UpdateFunc: func(_, obj any) { enqueueSecret(obj) },
		DeleteFunc: enqueueSecret,
	})
	return c, nil
}

// Queue keys are "/"-joined fields, each path-escaped: names hold no "/",
// but the uid annotation of a secret is whatever its writer put there.
func joinKey(parts ...string) string {
	escaped := make([]string, len(parts))
	for i, p := range parts {
		escaped[i] = url.PathEscape(p)
	}
	return strings.Join(escaped, "/")
}

// splitKey undoes joinKey; ok is false unless it has n fields.
func splitKey(key string, n int) ([]string, bool) {
	parts := strings.Split(key, "/")
	if len(parts) != n {
		return nil, false
	}
	for i, p := range parts {
		u, err := url.PathUnescape(p)
		if err != nil {
			return nil, false
		}
		parts[i] = u
	}
	return parts, true
}

// Run runs workers on each queue until ctx is done.
func (c *Tokens) Run(ctx context.Context, workers int) error {
	if err := workloop.WaitForSync(ctx, "service account tokens controller", c.secrets, c.synced...); err != nil {
		c.accounts.ShutDown()
		return err
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		workloop.RunWithMaxRetries(ctx, "serviceaccount-token-accounts", c.accounts, workers, TokenMaxRetries, c.syncServiceAccount)
	}()
	workloop.RunWithMaxRetries(ctx, "serviceaccount-token-secrets", c.secrets, workers, TokenMaxRetries, c.syncSecret)
	<-done
	return nil
}

// syncServiceAccount deletes the token secrets of an account that is gone.
func (c *Tokens) syncServiceAccount(ctx context.Context, key string) error {
	parts, ok := splitKey(key, 3)
	if !ok {
		return nil
	}
	namespace, name, uid := parts[0], parts[1], types.UID(parts[2])
	if sa, err := c.saList.ServiceAccounts(namespace).Get(name); err == nil && sa.UID == uid {
		return nil // still there
	}
	secrets, err := c.secList.Secrets(namespace).List(labels.Everything())
	if err != nil {
		return err
	}
	for _, s := range TokenSecretsOfDeletedAccount(namespace, name, uid, secrets) {
		if err := c.deleteSecret(ctx, s.Namespace, s.Name, s.UID); err != nil {
			return err
		}
	}
	return nil
}

// syncSecret fills or deletes one token secret, or, once it is gone,
// takes it out of its account's .secrets.
func (c *Tokens) syncSecret(ctx context.Context, key string) error {
	parts, ok := splitKey(key, 5)
	if !ok {
		return nil
	}
	namespace, name, uid, saName, saUID := parts[0], parts[1], types.UID(parts[2]), parts[3], types.UID(parts[4])
	secret, err := c.secList.Secrets(namespace).Get(name)
	if apierrors.IsNotFound(err) || (err == nil && secret.UID != uid) {
		return c.removeSecretReference(ctx, namespace, saName, saUID, name)
	}
	if err != nil {
		return err
	}
	if saName == "" {
		return nil // validation requires the annotation; nothing to go by
	}
	sa, err := c.serviceAccount(ctx, namespace, saName, saUID)
	if err != nil {
		return err
	}
	d := DecideTokenSecret(secret, sa, c.rootCA)
	switch d.Action {
	case TokenSecretDelete:
		return c.deleteSecret(ctx, namespace, name, uid)
	case TokenSecretFill:
		return c.fill(ctx, secret, sa)
	}
	return nil
}

// fill writes the secret's missing data onto a fresh copy; a copy newer
// than the cache's is left for the update event it brings.
func (c *Tokens) fill(ctx context.Context, cached *corev1.Secret, sa *corev1.ServiceAccount) error {
	secrets := c.client.CoreV1().Secrets(cached.Namespace)
	live, err := secrets.Get(ctx, cached.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading secret %s/%s: %w", cached.Namespace, cached.Name, err)
	}
	if live.ResourceVersion != cached.ResourceVersion {
		return nil
	}
	d := DecideTokenSecret(live, sa, c.rootCA)
	if d.Action != TokenSecretFill {
		return nil
	}
	var token string
	if d.SetToken {
		if token, err = c.generator.IssueLegacy(sa, live.Name); err != nil {
			// Not retried, as upstream: the next event of the secret
			// (or of a resync) brings it back.
			slog.Error("signing the token of a service account token secret", "secret", live.Namespace+"/"+live.Name, "err", err)
			return nil
		}
	}
	_, err = secrets.Update(ctx, FillTokenSecret(live, sa, d, c.rootCA, token), metav1.UpdateOptions{})
	if err == nil || apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
		// A conflict brings an update event; a gone secret needs nothing.
		return nil
	}
	return fmt.Errorf("filling secret %s/%s: %w", live.Namespace, live.Name, err)
}

// serviceAccount finds namespace/name with uid (any uid when empty) in the
// cache, else from the API server; nil when there is none.
func (c *Tokens) serviceAccount(ctx context.Context, namespace, name string, uid types.UID) (*corev1.ServiceAccount, error) {
	if sa, err := c.saList.ServiceAccounts(namespace).Get(name); err == nil && (uid == "" || sa.UID == uid) {
		return sa, nil
	}
	sa, err := c.client.CoreV1().ServiceAccounts(namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading service account %s/%s: %w", namespace, name, err)
	}
	if uid != "" && sa.UID != uid {
		return nil, nil
	}
	return sa, nil
}

func (c *Tokens) deleteSecret(ctx context.Context, namespace, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	err := c.client.CoreV1().Secrets(namespace).Delete(ctx, name, opts)
	// Gone already, or a new secret under the name (the precondition).
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("deleting token secret %s/%s: %w", namespace, name, err)
}

// removeSecretReference takes a deleted secret out of its account's
// .secrets, when the account (with saUID) still references it.
func (c *Tokens) removeSecretReference(ctx context.Context, namespace, saName string, saUID types.UID, secretName string) error {
	if saName == "" {
		return nil
	}
	cached, err := c.saList.ServiceAccounts(namespace).Get(saName)
	if err != nil || (saUID != "" && cached.UID != saUID) || WithoutSecretReference(cached, secretName) == nil {
		return nil
	}
	accounts := c.client.CoreV1().ServiceAccounts(namespace)
	live, err := accounts.Get(ctx, saName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading service account %s/%s: %w", namespace, saName, err)
	}
	if saUID != "" && live.UID != saUID {
		return nil
	}
	next := WithoutSecretReference(live, secretName)
	if next == nil {
		return nil
	}
	if _, err := accounts.Update(ctx, next, metav1.UpdateOptions{}); err != nil && !apierrors.IsNotFound(err) {
		// A conflict is retried by the queue.
		return fmt.Errorf("removing secret %s from service account %s/%s: %w", secretName, namespace, saName, err)
	}
	return nil
}
