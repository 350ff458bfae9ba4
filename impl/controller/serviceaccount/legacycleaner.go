package serviceaccount

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
)

// LegacyTokenCleaner is kube-controller-manager's
// "legacy-service-account-token-cleaner": once a day it labels unused
// auto-generated legacy token secrets invalid-since today (the API server
// then refuses their tokens) and deletes them a clean-up period later
// (DecideLegacyTokenCleanup says which).
//
// Writes and the read of the tracking ConfigMap go through client (the
// controller's own credentials, as upstream's); secrets, service accounts
// and, for a namespace holding a candidate, its pods come from the caches
// (the pod cache must keep what PodSecretNames reads: the controller
// manager's trimmed one keeps pods' secret references).
type LegacyTokenCleaner struct {
	client   kubernetes.Interface
	clock    clock.WithTicker
	period   time.Duration
	interval time.Duration
	saList   corelisters.ServiceAccountLister
	secList  corelisters.SecretLister
	podList  corelisters.PodLister
	synced   []cache.InformerSynced
}

// NewLegacyTokenCleaner wires the cleaner. period is
// --legacy-service-account-token-clean-up-period, which must be positive;
// interval how often it looks (DefaultLegacyTokenCleanerInterval when 0).
// secInformer may hold only service account token secrets
// (TokenSecretInformer).
func NewLegacyTokenCleaner(client kubernetes.Interface, clk clock.WithTicker, period, interval time.Duration,
	saInformer coreinformers.ServiceAccountInformer, secInformer coreinformers.SecretInformer, podInformer coreinformers.PodInformer) (*LegacyTokenCleaner, error) {
	if period <= 0 {
		return nil, fmt.Errorf("legacy service account token cleaner: invalid --legacy-service-account-token-clean-up-period %v: must be positive", period)
	}
	if interval == 0 {
		interval = DefaultLegacyTokenCleanerInterval
	}
	if interval < 0 {
		return nil, fmt.Errorf("legacy service account token cleaner: invalid sync interval %v", interval)
	}
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &LegacyTokenCleaner{
		client: client, clock: clk, period: period, interval: interval,
		saList: saInformer.Lister(), secList: secInformer.Lister(), podList: podInformer.Lister(),
		synced: []cache.InformerSynced{saInformer.Informer().HasSynced, secInformer.Informer().HasSynced, podInformer.Informer().HasSynced},
	}, nil
}

// Run passes over the secrets once the caches are synced and then every
// interval, until ctx is done.
func (c *LegacyTokenCleaner) Run(ctx context.Context) error {
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return fmt.Errorf("legacy service account token cleaner: caches not synced: %w", ctx.Err())
	}
	ticker := c.clock.NewTicker(c.interval)
	defer ticker.Stop()
	for {
		if err := c.Pass(ctx); err != nil && ctx.Err() == nil {
			slog.Warn("legacy service account token cleaner", "err", err)
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C():
		}
	}
}

// Pass is one look at every token secret: it labels and deletes what
// DecideLegacyTokenCleanup says. A failed write is logged and left for the
// next pass, as upstream's cleaner does.
func (c *LegacyTokenCleaner) Pass(ctx context.Context) error {
	cm, err := c.client.CoreV1().ConfigMaps(metav1.NamespaceSystem).Get(ctx, LegacyTokenTrackingConfigMap, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("reading the legacy token tracking ConfigMap kube-system/%s: %w", LegacyTokenTrackingConfigMap, err)
	}
	secrets, err := c.secList.List(labels.Everything())
	if err != nil {
		return fmt.Errorf("listing cached secrets: %w", err)
	}
	mounted := map[string]map[string]bool{}
	var podErr error
	state := LegacyTokenCleanerState{
		Now: c.clock.Now(), Period: c.period, TrackedSince: cm.Data[LegacyTokenTrackingConfigMapKey], Secrets: secrets,
		Account: func(namespace, name string) *corev1.ServiceAccount {
			sa, err := c.saList.ServiceAccounts(namespace).Get(name)
			if err != nil {
				return nil
			}
			return sa
		},
		Mounted: func(namespace, name string) bool {
			names, ok := mounted[namespace]
			if !ok {
				pods, err := c.podList.Pods(namespace).List(labels.Everything())
				if err != nil {
					// Unknown: taken as mounted, so nothing of the
					// namespace is touched this pass.
					podErr = fmt.Errorf("listing the cached pods of %s: %w", namespace, err)
					return true
				}
				names = map[string]bool{}
				for _, p := range pods {
					PodSecretNames(p, func(n string) { names[n] = true })
				}
				mounted[namespace] = names
			}
			return names[name]
		},
	}
	if !state.CleanerActive() {
		return nil
	}
	for _, a := range DecideLegacyTokenCleanup(state) {
		if err := c.apply(ctx, a); err != nil {
			slog.Warn("legacy service account token cleaner", "secret", a.Secret.Namespace+"/"+a.Secret.Name, "err", err)
		}
	}
	return podErr
}

func (c *LegacyTokenCleaner) apply(ctx context.Context, a LegacyTokenCleanup) error {
	secrets := c.client.CoreV1().Secrets(a.Secret.Namespace)
	switch a.Kind {
	case LegacyTokenMarkInvalid:
		slog.Info("marking an unused auto-generated service account token invalid", "secret", a.Secret.Namespace+"/"+a.Secret.Name, "invalidSince", a.InvalidSince)
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"uid": a.Secret.UID, "labels": map[string]string{LegacyTokenInvalidSinceLabel: a.InvalidSince}}})
		if err != nil {
			return fmt.Errorf("encoding the invalid-since patch: %w", err)
		}
		if _, err := secrets.Patch(ctx, a.Secret.Name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			return fmt.Errorf("labelling secret %s/%s invalid: %w", a.Secret.Namespace, a.Secret.Name, err)
		}
	case LegacyTokenDelete:
		slog.Info("deleting an unused auto-generated service account token", "secret", a.Secret.Namespace+"/"+a.Secret.Name,
			"lastUsed", a.Secret.Labels[LegacyTokenLastUsedLabel], "invalidSince", a.Secret.Labels[LegacyTokenInvalidSinceLabel])
		rv := a.Secret.ResourceVersion
		err := secrets.Delete(ctx, a.Secret.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{ResourceVersion: &rv}})
		if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting secret %s/%s: %w", a.Secret.Namespace, a.Secret.Name, err)
		}
	}
	return nil
}
