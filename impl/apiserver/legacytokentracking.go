package apiserver

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// Legacy token tracking, as kube-apiserver's legacy_token_tracking_controller:
// the ConfigMap kube-system/kube-apiserver-legacy-service-account-token-tracking
// records in data.since the UTC date from which this server labels legacy
// token secrets with their last-used date, so that the controller
// manager's legacy-service-account-token-cleaner knows from when an absent
// label means "unused". The server creates it when missing and rewrites a
// since it cannot parse; a deleted one is created again at most once per
// legacyTrackingCreationInterval (upstream's creation rate limit, which
// keeps API servers of mixed versions from fighting over it).

const (
	legacyTrackingConfigMap = "kube-apiserver-legacy-service-account-token-tracking"
	legacyTrackingSinceKey  = "since"
	// legacyTrackingCreationInterval is how often the ConfigMap is looked
	// at and at most re-created.
	legacyTrackingCreationInterval = 30 * time.Minute
)

var configMapsGVR = corev1.SchemeGroupVersion.WithResource("configmaps")

// legacyTrackingDecision is what to write: a ConfigMap to create (cur is
// nil), data.since to set on cur (it is not a date), or nothing (nil).
func legacyTrackingDecision(cur *corev1.ConfigMap, now time.Time) *corev1.ConfigMap {
	today := now.UTC().Format(time.DateOnly)
	if cur == nil {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: legacyTrackingConfigMap},
			Data: map[string]string{legacyTrackingSinceKey: today}}
	}
	if _, err := time.Parse(time.DateOnly, cur.Data[legacyTrackingSinceKey]); err == nil {
		return nil
	}
	out := cur.DeepCopy()
	if out.Data == nil {
		out.Data = map[string]string{}
	}
	out.Data[legacyTrackingSinceKey] = today
	return out
}

// runLegacyTokenTracking keeps the tracking ConfigMap, at once and then
// every legacyTrackingCreationInterval, until ctx ends; a failed look is
// retried after legacyTrackingWait's back-off.
func (s *Server) runLegacyTokenTracking(ctx context.Context) {
	failures := 0
	for {
		if err := s.syncLegacyTokenTracking(ctx); err != nil && ctx.Err() == nil {
			failures++
			s.log.Warn("keeping the legacy service account token tracking ConfigMap", "err", err, "retryIn", legacyTrackingWait(failures))
		} else {
			failures = 0
		}
		timer := time.NewTimer(legacyTrackingWait(failures))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C:
		}
	}
}

// Back-off of a failed look, as the per-item back-off of kube-apiserver's
// controller queue: it starts at legacyTrackingFirstRetry and doubles, up
// to legacyTrackingMaxRetry.
const (
	legacyTrackingFirstRetry = 5 * time.Millisecond
	legacyTrackingMaxRetry   = 1000 * time.Second
)

// legacyTrackingWait is how long to wait before the next look after
// failures failed looks in a row: the interval after a successful one
// (failures 0), else the back-off. A failed creation does not count
// against the re-creation limit, as upstream's.
func legacyTrackingWait(failures int) time.Duration {
	if failures <= 0 {
		return legacyTrackingCreationInterval
	}
	d := legacyTrackingFirstRetry
	for i := 1; i < failures && d < legacyTrackingMaxRetry; i++ {
		d *= 2
	}
	return min(d, legacyTrackingMaxRetry)
}

func (s *Server) syncLegacyTokenTracking(ctx context.Context) error {
	h, ok := s.handlers[configMapsGVR]
	if !ok {
		return nil
	}
	obj, err := h.GetObject(ctx, metav1.NamespaceSystem, legacyTrackingConfigMap)
	if apierrors.IsNotFound(err) {
		info := &request.Info{IsResourceRequest: true, Verb: "create", APIVersion: "v1", Resource: "configmaps", Namespace: metav1.NamespaceSystem}
		if _, err := h.CreateObject(ctx, info, legacyTrackingDecision(nil, time.Now()), false); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating kube-system/%s: %w", legacyTrackingConfigMap, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("reading kube-system/%s: %w", legacyTrackingConfigMap, err)
	}
	cur, ok := obj.(*corev1.ConfigMap)
	if !ok || legacyTrackingDecision(cur, time.Now()) == nil {
		return nil
	}
	gr := configMapsGVR.GroupResource()
	key := s.ObjectKey(gr, metav1.NamespaceSystem, legacyTrackingConfigMap)
	err = s.stores[gr].store.GuaranteedUpdate(ctx, key, &corev1.ConfigMap{}, false, nil, func(in runtime.Object) (runtime.Object, error) {
		cm, ok := in.(*corev1.ConfigMap)
		if !ok {
			return nil, fmt.Errorf("got %T", in)
		}
		if want := legacyTrackingDecision(cm, time.Now()); want != nil {
			return want, nil
		}
		return in, nil
	})
	if err != nil && !storage.IsNotFound(err) {
		return fmt.Errorf("setting the since date of kube-system/%s: %w", legacyTrackingConfigMap, err)
	}
	return nil
}
