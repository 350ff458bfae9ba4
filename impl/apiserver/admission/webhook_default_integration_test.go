package admission_test

import (
	"context"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// As kube-apiserver's mutating webhook dispatcher (it runs the scheme's
// defaulter on the object after applying each patch): a container a
// webhook adds to a pod gets the container defaults (imagePullPolicy,
// terminationMessagePath and -Policy), and a serviceAccountName it changes
// is mirrored in the deprecated serviceAccount, before the pod is
// validated and stored.
func TestMutatingWebhookPatchIsDefaulted(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()
	hook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rev := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		pt := admissionv1.PatchTypeJSONPatch
		patch := `[{"op":"add","path":"/spec/containers/-","value":{"name":"sidecar","image":"busybox:latest"}},` +
			`{"op":"replace","path":"/spec/serviceAccountName","value":"robot"}]`
		if rev.Request.Name == "sa-only" {
			patch = `[{"op":"replace","path":"/spec/serviceAccountName","value":"robot"}]`
		}
		rev.Response = &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true, PatchType: &pt, Patch: []byte(patch)}
		rev.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rev)
	}))
	hook.Config.ErrorLog = log.New(io.Discard, "", 0)
	hook.StartTLS()
	t.Cleanup(hook.Close)

	for _, sa := range []string{"default", "robot"} {
		created(core.ServiceAccounts("default").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: sa}}, metav1.CreateOptions{})).must(t, "service account")
	}
	url := hook.URL + "/inject"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	created(cs.AdmissionregistrationV1().MutatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.MutatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "inject"},
		Webhooks: []admissionregistrationv1.MutatingWebhook{{
			Name: "inject.example.com", FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}},
			}},
		}},
	}, metav1.CreateOptions{})).must(t, "mutating webhook configuration")

	n := 0
	eventually(t, "a pod patched by the webhook and defaulted", func() error {
		n++
		p, err := core.Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", n)},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})
		if apierrors.IsInvalid(err) {
			t.Fatalf("the patched pod: %v", err)
		}
		if err != nil {
			return err
		}
		if len(p.Spec.Containers) != 2 {
			return fmt.Errorf("not patched yet: %d containers", len(p.Spec.Containers))
		}
		c := p.Spec.Containers[1]
		if c.ImagePullPolicy != corev1.PullAlways || c.TerminationMessagePath != corev1.TerminationMessagePathDefault ||
			c.TerminationMessagePolicy != corev1.TerminationMessageReadFile {
			t.Fatalf("the injected container was not defaulted: %+v", c)
		}
		if p.Spec.ServiceAccountName != "robot" || p.Spec.DeprecatedServiceAccount != "robot" {
			t.Fatalf("serviceAccountName %q, serviceAccount %q: want both robot", p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount)
		}
		return nil
	})
	// A patch that changes only serviceAccountName.
	p := created(core.Pods("default").Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "sa-only"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})).must(t, "pod sa-only")
	if p.Spec.ServiceAccountName != "robot" || p.Spec.DeprecatedServiceAccount != "robot" {
		t.Fatalf("serviceAccountName %q, serviceAccount %q: want both robot", p.Spec.ServiceAccountName, p.Spec.DeprecatedServiceAccount)
	}
}
