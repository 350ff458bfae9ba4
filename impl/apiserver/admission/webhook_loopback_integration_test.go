package admission_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A webhook addressed to the service default/kubernetes on port 443 is
// called at the API server itself, as kube-apiserver's loopback service
// resolver and client configuration do: at the server's own address,
// trusting its loopback certificate, with its loopback token (the
// server's own identity, in system:masters). Nothing this server serves
// answers an AdmissionReview, so the call fails with the server's own
// 404 Status, "the server could not find the requested resource": the
// request reached the server and passed authentication (this server
// refuses anonymous requests with 401 Unauthorized). Without the loopback
// resolution the call went to the service's ClusterIP, which nothing
// routes here.
func TestWebhookAtTheKubernetesServiceCallsTheServerItself(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	none := admissionregistrationv1.SideEffectClassNone
	path := "/apis/webhooks.example.com/v1/check"
	timeout := int32(3)
	created(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
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
	}, metav1.CreateOptions{})).must(t, "validating webhook configuration")

	want := `failed calling webhook "loopback.example.com": failed to call webhook: the server could not find the requested resource`
	eventually(t, "the webhook called at the API server itself", func() error {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-"}}, metav1.CreateOptions{})
		if apierrors.IsInternalError(err) && strings.Contains(err.Error(), want) {
			return nil
		}
		return errors.New("not yet: " + errString(err))
	})
}
