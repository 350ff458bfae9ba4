package serviceaccount

import (
	"context"
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// failingGenerator cannot sign.
type failingGenerator struct{ calls int }

func (g *failingGenerator) IssueLegacy(*corev1.ServiceAccount, string) (string, error) {
	g.calls++
	return "", errors.New("no key")
}

// TestTokenSigningFailureIsNotRetried: as upstream's tokens controller, a
// token secret whose token cannot be signed is not retried by the queue
// (the sync returns no error; the next event of the secret brings it
// back), while a failed write of the filled secret is.
func TestTokenSigningFailureIsNotRetried(t *testing.T) {
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "sa", UID: "sa-uid", ResourceVersion: "1"}}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "tok", UID: "s-uid", ResourceVersion: "2",
		Annotations: map[string]string{corev1.ServiceAccountNameKey: "sa"}}, Type: corev1.SecretTypeServiceAccountToken}
	client := fake.NewClientset(sa, secret)
	factory := informers.NewSharedInformerFactory(client, 0)
	gen := &failingGenerator{}
	c, err := NewTokens(client, gen, nil, factory.Core().V1().ServiceAccounts(), factory.Core().V1().Secrets())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	_ = factory.Core().V1().ServiceAccounts().Informer().GetStore().Add(sa)
	_ = factory.Core().V1().Secrets().Informer().GetStore().Add(secret)
	key := joinKey("ns", "tok", "s-uid", "sa", "")
	if err := c.syncSecret(ctx, key); err != nil {
		t.Errorf("sync after a signing failure: %v, want nil (not retried)", err)
	}
	if gen.calls != 1 {
		t.Errorf("signed %d times, want 1", gen.calls)
	}

	// With the token there, a failed write (not a conflict) is retried.
	secret.Data = map[string][]byte{corev1.ServiceAccountTokenKey: []byte("t")}
	if _, err := client.CoreV1().Secrets("ns").Update(ctx, secret, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	live, err := client.CoreV1().Secrets("ns").Get(ctx, "tok", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	_ = factory.Core().V1().Secrets().Informer().GetStore().Update(live)
	client.PrependReactor("update", "secrets", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewInternalError(errors.New("etcd is down"))
	})
	if err := c.syncSecret(ctx, key); err == nil {
		t.Error("sync after a failed write of the namespace: nil, want an error (retried)")
	}
}
