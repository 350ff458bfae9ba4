package controllermanager_test

import (
	"context"
	"net/http"
	"regexp"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/controller/serviceaccount"
	"github.com/kubeproof/kubeproof/impl/controllermanager"
)

// TestLegacyTokenCleanerUnderRBAC runs the
// legacy-service-account-token-cleaner alone, as its own service account
// under RBAC, with a fake clock and a two-day clean-up period: of an
// account's auto-generated token secrets, the unused one is labelled
// kubernetes.io/legacy-token-invalid-since and, once that date is a period
// old, deleted; the one a pod mounts, the one used within the period and a
// manual one (not in the account's .secrets) are left alone. As
// upstream's, it reads pods from the manager's shared pod informer (which
// keeps the pods' secret references): it never lists a namespace's pods
// from the API server.
func TestLegacyTokenCleanerUnderRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	admin, _, cmCfg := rbacClients(t)
	// Every request of the manager (its root client and the clients of
	// its controllers' service accounts, made from cmCfg) is looked at.
	var podLists atomic.Int32
	namespacedPods := regexp.MustCompile(`^/api/v1/namespaces/[^/]+/pods$`)
	cmCfg = rest.CopyConfig(cmCfg)
	cmCfg.WrapTransport = func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(r *http.Request) (*http.Response, error) {
			if r.Method == http.MethodGet && namespacedPods.MatchString(r.URL.Path) && r.URL.Query().Get("watch") == "" {
				podLists.Add(1)
			}
			return rt.RoundTrip(r)
		})
	}
	root, err := kubernetes.NewForConfig(cmCfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	const period = 48 * time.Hour
	start := time.Now()
	clk := clocktesting.NewFakeClock(start.Add(4 * 24 * time.Hour))
	// The test steps the clock a day at a time up to last.
	last := clk.Now().Add(period + 2*24*time.Hour)

	// Tracking began today (real time), which is more than a period and
	// a day before the fake clock.
	tracking := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: serviceaccount.LegacyTokenTrackingConfigMap},
		Data: map[string]string{serviceaccount.LegacyTokenTrackingConfigMapKey: start.UTC().Format("2006-01-02")}}
	if _, err := admin.CoreV1().ConfigMaps("kube-system").Create(ctx, tracking, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		if _, err := admin.CoreV1().ConfigMaps("kube-system").Update(ctx, tracking, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}

	sa, err := admin.CoreV1().ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "old"},
		Secrets: []corev1.ObjectReference{{Name: "unused"}, {Name: "mounted"}, {Name: "used"}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	secrets := admin.CoreV1().Secrets("default")
	for name, lbls := range map[string]map[string]string{
		"unused": nil, "mounted": nil, "manual": nil,
		// Used within the period until the end of the test.
		"used": {serviceaccount.LegacyTokenLastUsedLabel: last.UTC().Format("2006-01-02")},
	} {
		if _, err := secrets.Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: lbls,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: sa.Name, corev1.ServiceAccountUIDKey: string(sa.UID)}},
			Type: corev1.SecretTypeServiceAccountToken, Data: map[string][]byte{"token": []byte("x")}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := admin.CoreV1().Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx"}},
			Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "mounted"}}}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := controllermanager.DefaultConfig()
	cfg.LeaderElect = false
	cfg.UseServiceAccountCredentials = true
	cfg.Controllers = []string{controllermanager.LegacyServiceAccountTokenCleaner}
	cfg.LegacyServiceAccountTokenCleanUpPeriod = period
	cfg.Clock = clk
	var wg sync.WaitGroup
	cmErr := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); cmErr <- controllermanager.Run(ctx, root, cmCfg, cfg) }()
	defer func() {
		cancel()
		wg.Wait()
		if err := <-cmErr; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	}()

	today := clk.Now().UTC().Format("2006-01-02")
	eventually(t, "the unused token labelled invalid-since today", func() (bool, error) {
		s, err := secrets.Get(ctx, "unused", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		return s.Labels[serviceaccount.LegacyTokenInvalidSinceLabel] == today, nil
	})
	// A day at a time, until the label is a period old.
	eventually(t, "the unused token deleted", func() (bool, error) {
		_, err := secrets.Get(ctx, "unused", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		if clk.Now().Before(last) {
			clk.Step(24 * time.Hour)
		}
		return false, err
	})
	if now := clk.Now(); now.Before(start.Add(4*24*time.Hour + period)) {
		t.Errorf("deleted at %v, less than a period after it was labelled (%v)", now, start.Add(4*24*time.Hour))
	}
	if n := podLists.Load(); n != 0 {
		t.Errorf("the cleaner listed a namespace's pods from the API server %d times, want its pod informer", n)
	}
	for _, name := range []string{"mounted", "used", "manual"} {
		s, err := secrets.Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatalf("secret %s: %v", name, err)
		}
		if v, ok := s.Labels[serviceaccount.LegacyTokenInvalidSinceLabel]; ok {
			t.Errorf("secret %s labelled invalid since %s", name, v)
		}
	}
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
