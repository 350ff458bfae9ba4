package cluster

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth/tokencache"
)

// TestLegacyServiceAccountTokenSecret: in a cluster as `kubeproof up`
// starts it, a kubernetes.io/service-account-token Secret naming a
// ServiceAccount is filled by the controller manager's serviceaccount-token
// controller (token, namespace, ca.crt, the uid annotation); its token
// authenticates as the service account until the secret is deleted (then
// 401 once the token cache's acceptance expires, which the test brings
// about by moving the cache's clock on); and a token secret whose account
// is deleted is deleted too.
func TestLegacyServiceAccountTokenSecret(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var clockMu sync.Mutex
	var clockOffset time.Duration
	cacheNow := func() time.Time {
		clockMu.Lock()
		defer clockMu.Unlock()
		return time.Now().Add(clockOffset)
	}
	c, admin, _ := startForTest(t, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true,
		UnsafeNoFsync: true, CompactionInterval: -1, ControllerManager: true, TokenCacheNow: cacheNow})

	sa, err := admin.CoreV1().ServiceAccounts("default").Create(ctx,
		&corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "builder"}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	tokenSecret := func(name string) *corev1.Secret {
		return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name,
			Annotations: map[string]string{corev1.ServiceAccountNameKey: "builder"}},
			Type: corev1.SecretTypeServiceAccountToken}
	}
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, tokenSecret("builder-token"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	filled := waitForSecret(ctx, t, admin, "builder-token", func(s *corev1.Secret) bool { return len(s.Data[corev1.ServiceAccountTokenKey]) > 0 })
	if got := string(filled.Data[corev1.ServiceAccountNamespaceKey]); got != "default" {
		t.Errorf("data.namespace = %q, want default", got)
	}
	if !bytes.Equal(filled.Data[corev1.ServiceAccountRootCAKey], c.CA.CertPEM) {
		t.Errorf("data.ca.crt is not the cluster CA")
	}
	if got := filled.Annotations[corev1.ServiceAccountUIDKey]; got != string(sa.UID) {
		t.Errorf("uid annotation = %q, want %q", got, sa.UID)
	}

	asToken := rest.AnonymousClientConfig(c.AdminConfig)
	asToken.BearerToken = string(filled.Data[corev1.ServiceAccountTokenKey])
	tokenClient, err := kubernetes.NewForConfig(asToken)
	if err != nil {
		t.Fatal(err)
	}
	review, err := tokenClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("authenticating with the secret's token: %v", err)
	}
	if got := review.Status.UserInfo.Username; got != "system:serviceaccount:default:builder" {
		t.Errorf("user = %q, want system:serviceaccount:default:builder", got)
	}

	if err := admin.CoreV1().Secrets("default").Delete(ctx, "builder-token", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	// The acceptance cached by the request above lasts the cache's success
	// TTL, as kube-apiserver's; past it the token is looked up again, and
	// its secret is gone.
	clockMu.Lock()
	clockOffset += tokencache.DefaultSuccessTTL
	clockMu.Unlock()
	if _, err := tokenClient.AuthenticationV1().SelfSubjectReviews().Create(ctx, &authenticationv1.SelfSubjectReview{}, metav1.CreateOptions{}); !apierrors.IsUnauthorized(err) {
		t.Fatalf("the token of a deleted secret, past the token cache's TTL: %v, want 401", err)
	}

	// A token secret outlives its account only until the controller sees
	// the account go.
	if _, err := admin.CoreV1().Secrets("default").Create(ctx, tokenSecret("builder-token-2"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitForSecret(ctx, t, admin, "builder-token-2", func(s *corev1.Secret) bool { return len(s.Data[corev1.ServiceAccountTokenKey]) > 0 })
	if err := admin.CoreV1().ServiceAccounts("default").Delete(ctx, "builder", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	for {
		_, err := admin.CoreV1().Secrets("default").Get(ctx, "builder-token-2", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("the token secret of a deleted service account was not deleted: %v", err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func waitForSecret(ctx context.Context, t *testing.T, cs kubernetes.Interface, name string, done func(*corev1.Secret) bool) *corev1.Secret {
	t.Helper()
	for {
		s, err := cs.CoreV1().Secrets("default").Get(ctx, name, metav1.GetOptions{})
		if err == nil && done(s) {
			return s
		}
		if ctx.Err() != nil {
			t.Fatalf("secret %s was not filled: %v (last: %+v)", name, err, s)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
