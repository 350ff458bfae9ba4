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
	"strings"
	"sync"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// seenRequest is what a webhook was told about one write.
type seenRequest struct {
	op, name, namespace, sub string
}

// As kube-apiserver: the admission namespace of a write to a Namespace is
// the namespace's own name, for every verb and for its status and
// finalize subresources. The create handler sets it from the object's
// name (create.go: namespace = name for the namespaces resource); the
// others take it from the request path (/api/v1/namespaces/{name}, whose
// request info's namespace is the name). A generateName create has no
// name at that point, so its namespace stays empty, while the validating
// webhooks are told the generated name.
func TestWebhookNamespaceWriteNamespaceIsItsName(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()

	var mu sync.Mutex
	var seen []seenRequest
	hook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rev := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		if strings.HasPrefix(rev.Request.Name, "hnsadm-") {
			mu.Lock()
			seen = append(seen, seenRequest{string(rev.Request.Operation), rev.Request.Name, rev.Request.Namespace, rev.Request.SubResource})
			mu.Unlock()
		}
		rev.Response = &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true}
		rev.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rev)
	}))
	hook.Config.ErrorLog = log.New(io.Discard, "", 0)
	hook.StartTLS()
	t.Cleanup(hook.Close)
	take := func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}

	url := hook.URL + "/watch"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	created(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "namespaces"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "namespaces.example.com", FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"namespaces", "namespaces/status", "namespaces/finalize"}},
			}},
		}},
	}, metav1.CreateOptions{})).must(t, "validating webhook configuration")

	// Wait for the configuration to reach the dispatcher.
	n := 0
	eventually(t, "the webhook sees namespace creates", func() error {
		n++
		if _, err := core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("hnsadm-probe%d", n)}}, metav1.CreateOptions{}); err != nil {
			return err
		}
		if len(take()) == 0 {
			return fmt.Errorf("not called yet")
		}
		return nil
	})

	expect := func(what string, want ...seenRequest) {
		t.Helper()
		got := take()
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: the webhook saw %+v, want %+v", what, got, want)
		}
	}

	const name = "hnsadm-a"
	ns := created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})).must(t, "namespace")
	expect("create", seenRequest{"CREATE", name, name, ""})

	ns.Labels = map[string]string{"team": "x"}
	ns = created(core.Namespaces().Update(ctx, ns, metav1.UpdateOptions{})).must(t, "namespace update")
	expect("update", seenRequest{"UPDATE", name, name, ""})

	ns = created(core.Namespaces().Patch(ctx, name, "application/merge-patch+json", []byte(`{"metadata":{"labels":{"team":"y"}}}`), metav1.PatchOptions{})).must(t, "namespace patch")
	expect("patch", seenRequest{"UPDATE", name, name, ""})

	ns = created(core.Namespaces().UpdateStatus(ctx, ns, metav1.UpdateOptions{})).must(t, "namespace status update")
	expect("status update", seenRequest{"UPDATE", name, name, "status"})

	ns = created(core.Namespaces().Finalize(ctx, ns, metav1.UpdateOptions{})).must(t, "namespace finalize")
	expect("finalize", seenRequest{"UPDATE", name, name, "finalize"})

	if err := core.Namespaces().Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
		t.Fatalf("deleting the namespace: %v", err)
	}
	expect("delete", seenRequest{"DELETE", name, name, ""})

	applied := `{"apiVersion":"v1","kind":"Namespace","metadata":{"name":"hnsadm-applied"}}`
	if _, err := core.Namespaces().Patch(ctx, "hnsadm-applied", "application/apply-patch+yaml", []byte(applied), metav1.PatchOptions{FieldManager: "t"}); err != nil {
		t.Fatalf("applying a new namespace: %v", err)
	}
	expect("apply create", seenRequest{"CREATE", "hnsadm-applied", "hnsadm-applied", ""})

	gen := created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "hnsadm-"}}, metav1.CreateOptions{})).must(t, "generated namespace")
	expect("generateName create", seenRequest{"CREATE", gen.Name, "", ""})
}

// As kube-apiserver's namespace matcher: a webhook's namespaceSelector is
// matched, for an update of namespaces/status or namespaces/finalize,
// against the labels of the namespace the request is admitted in, the
// namespace itself as stored (for a Namespace's own create and update,
// against the object's labels). With no namespace on those requests the
// selector was not applied and the webhook was called for every namespace.
func TestWebhookNamespaceSelectorOnNamespaceSubresources(t *testing.T) {
	cs, _ := startServer(t)
	ctx := context.Background()
	core := cs.CoreV1()

	var mu sync.Mutex
	var seen []seenRequest
	hook := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rev := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(r.Body).Decode(rev); err != nil || rev.Request == nil {
			http.Error(w, "bad review", http.StatusBadRequest)
			return
		}
		mu.Lock()
		seen = append(seen, seenRequest{string(rev.Request.Operation), rev.Request.Name, rev.Request.Namespace, rev.Request.SubResource})
		mu.Unlock()
		rev.Response = &admissionv1.AdmissionResponse{UID: rev.Request.UID, Allowed: true}
		rev.Request = nil
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(rev)
	}))
	hook.Config.ErrorLog = log.New(io.Discard, "", 0)
	hook.StartTLS()
	t.Cleanup(hook.Close)
	take := func() []seenRequest {
		mu.Lock()
		defer mu.Unlock()
		out := seen
		seen = nil
		return out
	}

	// Both namespaces exist before the webhook does.
	plain := created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hnsadm-plain"}}, metav1.CreateOptions{})).must(t, "namespace")
	team := created(core.Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "hnsadm-team",
		Labels: map[string]string{"team": "x"}}}, metav1.CreateOptions{})).must(t, "namespace")

	url := hook.URL + "/status"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	created(cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "namespace-status"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "status.example.com", FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			ClientConfig: admissionregistrationv1.WebhookClientConfig{URL: &url,
				CABundle: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: hook.Certificate().Raw})},
			NamespaceSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"team": "x"}},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
				Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"},
					Resources: []string{"namespaces/status", "namespaces/finalize"}},
			}},
		}},
	}, metav1.CreateOptions{})).must(t, "validating webhook configuration")

	eventually(t, "the webhook sees the labelled namespace's status updates", func() error {
		if _, err := core.Namespaces().UpdateStatus(ctx, team, metav1.UpdateOptions{}); err != nil {
			return err
		}
		if len(take()) == 0 {
			return fmt.Errorf("not called yet")
		}
		return nil
	})

	if _, err := core.Namespaces().UpdateStatus(ctx, plain, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := core.Namespaces().Finalize(ctx, plain, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got := take(); len(got) != 0 {
		t.Errorf("the unlabelled namespace's status and finalize: the webhook was called: %+v", got)
	}
	if _, err := core.Namespaces().Finalize(ctx, team, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got, want := take(), []seenRequest{{"UPDATE", "hnsadm-team", "hnsadm-team", "finalize"}}; fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("the labelled namespace's finalize: the webhook saw %+v, want %+v", got, want)
	}
}
