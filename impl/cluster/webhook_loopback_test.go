package cluster

import (
	"context"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// In a cluster as `kubeproof up` starts it (Node,RBAC authorization), a
// webhook addressed to default/kubernetes:443 is the API server itself,
// called with its own identity (system:apiserver, in system:masters, which
// the authorizer asked before Node and RBAC lets do anything): the call reaches the
// handler of its path, here none, and fails with the server's 404 rather
// than a 401 or a 403.
func TestWebhookAtTheKubernetesServiceIsThisAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true, CompactionInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Errorf("stopping: %v", err)
		}
	}()
	cs, err := c.Client()
	if err != nil {
		t.Fatal(err)
	}
	none := admissionregistrationv1.SideEffectClassNone
	path := "/apis/webhooks.example.com/v1/check"
	timeout := int32(3)
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "loopback"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "loopback.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			TimeoutSeconds: &timeout,
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "kubernetes", Path: &path}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	want := `failed calling webhook "loopback.example.com": failed to call webhook: the server could not find the requested resource`
	deadline := time.Now().Add(20 * time.Second)
	for {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-"}}, metav1.CreateOptions{})
		if apierrors.IsInternalError(err) && strings.Contains(err.Error(), want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("create: %v, want a 500 with %q", err, want)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
