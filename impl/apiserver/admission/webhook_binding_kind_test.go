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
	"sync"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// bindingReview is what a webhook is told about one binding.
type bindingReview struct {
	Kind, RequestKind         metav1.GroupVersionKind
	Resource                  metav1.GroupVersionResource
	SubResource, Name         string
	ObjectKind, ObjectVersion string
}

// TestWebhookBindingKind: a webhook called for a binding is told the kind
// of the request's object, v1 Binding, as kube-apiserver's create handler
// admits with the kind its storage makes (BindingREST.New is a Binding):
// request.kind and requestKind are v1 Binding and the object is a Binding,
// for the pods/binding subresource (resource pods) as for the legacy
// bindings resource.
func TestWebhookBindingKind(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	const ns = "whbind"
	created(cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})).must(t, "namespace")
	created(cs.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{})).must(t, "service account")

	var mu sync.Mutex
	var seen []bindingReview
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		var rev struct {
			APIVersion string `json:"apiVersion"`
			Request    struct {
				UID         string                      `json:"uid"`
				Kind        metav1.GroupVersionKind     `json:"kind"`
				RequestKind metav1.GroupVersionKind     `json:"requestKind"`
				Resource    metav1.GroupVersionResource `json:"resource"`
				SubResource string                      `json:"subResource"`
				Name        string                      `json:"name"`
				Object      metav1.TypeMeta             `json:"object"`
			} `json:"request"`
		}
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &rev); err != nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		q := rev.Request
		mu.Lock()
		seen = append(seen, bindingReview{q.Kind, q.RequestKind, q.Resource, q.SubResource, q.Name, q.Object.Kind, q.Object.APIVersion})
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"apiVersion":%q,"kind":"AdmissionReview","response":{"uid":%q,"allowed":true}}`, rev.APIVersion, q.UID)
	}))
	srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	srv.StartTLS()
	t.Cleanup(srv.Close)
	take := func() []bindingReview {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}

	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	url := srv.URL
	cfg := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "binding-kind"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "kind.binding.example.com", FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"configmaps", "pods/binding", "bindings"}},
			}},
		}}}
	created(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, cfg, metav1.CreateOptions{})).must(t, "webhook configuration")
	n := 0
	eventually(t, "the webhook called", func() error {
		n++
		created(cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("probe%d", n)}}, metav1.CreateOptions{})).must(t, "probe")
		if len(take()) == 0 {
			return fmt.Errorf("webhook not called yet")
		}
		return nil
	})

	pods := cs.CoreV1().Pods(ns)
	for _, name := range []string{"sub", "legacy"} {
		created(pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}, metav1.CreateOptions{})).must(t, "pod "+name)
	}
	take()
	binding := func(name string) *corev1.Binding {
		return &corev1.Binding{ObjectMeta: metav1.ObjectMeta{Name: name}, Target: corev1.ObjectReference{Kind: "Node", Name: "n1"}}
	}
	if err := pods.Bind(ctx, binding("sub"), metav1.CreateOptions{}); err != nil {
		t.Fatalf("pods/binding: %v", err)
	}
	if err := cs.CoreV1().RESTClient().Post().Namespace(ns).Resource("bindings").Body(binding("legacy")).Do(ctx).Error(); err != nil {
		t.Fatalf("bindings: %v", err)
	}
	kind := metav1.GroupVersionKind{Version: "v1", Kind: "Binding"}
	want := []bindingReview{
		{kind, kind, metav1.GroupVersionResource{Version: "v1", Resource: "pods"}, "binding", "sub", "Binding", "v1"},
		{kind, kind, metav1.GroupVersionResource{Version: "v1", Resource: "bindings"}, "", "legacy", "Binding", "v1"},
	}
	got := take()
	if len(got) != len(want) {
		t.Fatalf("webhook calls %+v, want %+v", got, want)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("call %d: %+v, want %+v", i, got[i], want[i])
		}
	}
}
