package admission_test

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/pki"
)

// A webhook addressed by clientConfig.service, through a real API server:
// the Service is read from the server's own services (here an
// ExternalName service naming localhost, which kube-apiserver's default
// resolver dials at the reference's port), and the webhook's certificate
// is checked for hook.default.svc. Before the Service exists the call
// fails (service "hook" not found).
func TestWebhookByServiceThroughTheAPIServer(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	ca, err := pki.NewCA("webhook-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.IssueServing("webhook", []string{"hook.default.svc"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := kp.TLSCertificate()
	if err != nil {
		t.Fatal(err)
	}
	hook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rev := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		rev.Response = &admissionv1.AdmissionResponse{UID: rev.Request.UID, Result: &metav1.Status{Message: "denied by the service at " + r.URL.Path}}
		rev.Request = nil
		_ = json.NewEncoder(w).Encode(rev)
	}))
	hook.TLS = &tls.Config{Certificates: []tls.Certificate{cert}}
	hook.Config.ErrorLog = log.New(io.Discard, "", 0)
	hook.StartTLS()
	t.Cleanup(hook.Close)
	_, p, _ := net.SplitHostPort(hook.Listener.Addr().String())
	n, _ := strconv.Atoi(p)
	port := int32(n)

	none := admissionregistrationv1.SideEffectClassNone
	path := "/check"
	created(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "by-service"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{Name: "svc.example.com", SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{CABundle: ca.CertPEM,
				Service: &admissionregistrationv1.ServiceReference{Namespace: "default", Name: "hook", Path: &path, Port: &port}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
		}},
	}, metav1.CreateOptions{})).must(t, "validating webhook configuration")

	cm := func() error {
		_, err := cs.CoreV1().ConfigMaps("default").Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{GenerateName: "cm-"}}, metav1.CreateOptions{})
		return err
	}
	eventually(t, "the webhook called without its service", func() error {
		err := cm()
		if apierrors.IsInternalError(err) && strings.Contains(err.Error(), `service "hook" not found`) {
			return nil
		}
		return errors.New("not yet: " + errString(err))
	})
	created(cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "hook"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "localhost"}}, metav1.CreateOptions{})).must(t, "service")
	eventually(t, "the webhook called at its service", func() error {
		err := cm()
		if apierrors.IsBadRequest(err) && strings.Contains(err.Error(), `admission webhook "svc.example.com" denied the request: denied by the service at /check`) {
			return nil
		}
		return errors.New("not yet: " + errString(err))
	})
}

func errString(err error) string {
	if err == nil {
		return "allowed"
	}
	return err.Error()
}
