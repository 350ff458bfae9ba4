package admission

import (
	"context"
	"strings"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
)

// As kube-apiserver's mutating dispatcher, which decides per webhook in
// its loop whether to call it: a dry-run request reaching a webhook with
// side effects Unknown or Some is refused (400, whatever the
// failurePolicy) when that webhook's turn comes: the webhooks before it
// are called, the ones after it are not, and its
// mutation.webhook.admission.k8s.io/round_0_index_<i> is recorded with
// mutated false. A namespaceSelector whose namespace is missing likewise
// fails the request (404) at that webhook's turn, the earlier webhooks
// called, without an annotation for it.
func TestMutatingWebhookRefusalsInOrder(t *testing.T) {
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse { return allow() })
	const mut = "mutation.webhook.admission.k8s.io/"
	t.Run("dry run", func(t *testing.T) {
		p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(
			hookSpec{name: "first.example.com"},
			hookSpec{name: "effects.example.com", sideEffects: admissionregistrationv1.SideEffectClassUnknown, failure: admissionregistrationv1.Ignore},
			hookSpec{name: "after.example.com"},
		)))}
		before := len(srv.requests())
		var err error
		got := annotationsAt(t, audit.LevelMetadata, func(ctx context.Context) {
			a := podCreate(newPod("p"))
			a.DryRun = true
			err = p.Admit(ctx, a)
		})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `admission webhook "effects.example.com" does not support dry run`) {
			t.Fatalf("got %v, want 400 does not support dry run", err)
		}
		if n := len(srv.requests()) - before; n != 1 {
			t.Errorf("%d webhook calls, want 1 (the webhook before the refused one)", n)
		}
		want := map[string]string{
			mut + "round_0_index_0": `{"configuration":"m","webhook":"first.example.com","mutated":false}`,
			mut + "round_0_index_1": `{"configuration":"m","webhook":"effects.example.com","mutated":false}`,
		}
		if len(got) != len(want) || got[mut+"round_0_index_0"] != want[mut+"round_0_index_0"] || got[mut+"round_0_index_1"] != want[mut+"round_0_index_1"] {
			t.Errorf("annotations %v, want %v", got, want)
		}
	})
	t.Run("missing namespace", func(t *testing.T) {
		p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(
			hookSpec{name: "first.example.com"},
			hookSpec{name: "selective.example.com", nsSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
			hookSpec{name: "after.example.com"},
		)))}
		before := len(srv.requests())
		var err error
		got := annotationsAt(t, audit.LevelMetadata, func(ctx context.Context) {
			err = p.Admit(ctx, podCreate(newPod("p")))
		})
		if !apierrors.IsNotFound(err) {
			t.Fatalf("got %v, want 404 NotFound", err)
		}
		if n := len(srv.requests()) - before; n != 1 {
			t.Errorf("%d webhook calls, want 1 (the webhook before the one with the selector)", n)
		}
		if len(got) != 1 || got[mut+"round_0_index_0"] == "" {
			t.Errorf("annotations %v, want only %sround_0_index_0", got, mut)
		}
	})
}

// As kube-apiserver's validating dispatcher, which decides for every
// webhook whether to call it before calling them all at once, and checks
// dry run in each call: a dry-run request reaching a webhook with side
// effects is refused (400) while the other matched webhooks are still
// called; a missing namespace fails the request before any is called.
func TestValidatingWebhookRefusalsInOrder(t *testing.T) {
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse { return allow() })
	t.Run("dry run", func(t *testing.T) {
		p := &ValidatingWebhook{testDispatcher(validatingWebhooks(srv.validating(
			hookSpec{name: "first.example.com"},
			hookSpec{name: "effects.example.com", sideEffects: admissionregistrationv1.SideEffectClassSome, failure: admissionregistrationv1.Ignore},
			hookSpec{name: "after.example.com"},
		)))}
		before := len(srv.requests())
		var err error
		got := annotationsAt(t, audit.LevelMetadata, func(ctx context.Context) {
			a := podCreate(newPod("p"))
			a.DryRun = true
			err = p.Validate(ctx, a)
		})
		if !apierrors.IsBadRequest(err) || !strings.Contains(err.Error(), `admission webhook "effects.example.com" does not support dry run`) {
			t.Fatalf("got %v, want 400 does not support dry run", err)
		}
		if n := len(srv.requests()) - before; n != 2 {
			t.Errorf("%d webhook calls, want 2 (the other matched webhooks)", n)
		}
		if len(got) != 0 {
			t.Errorf("annotations %v, want none (the refusal is no failed-open call)", got)
		}
	})
	t.Run("missing namespace", func(t *testing.T) {
		p := &ValidatingWebhook{testDispatcher(validatingWebhooks(srv.validating(
			hookSpec{name: "first.example.com"},
			hookSpec{name: "selective.example.com", nsSelector: &metav1.LabelSelector{MatchLabels: map[string]string{"env": "prod"}}},
		)))}
		before := len(srv.requests())
		if err := p.Validate(context.Background(), podCreate(newPod("p"))); !apierrors.IsNotFound(err) {
			t.Fatalf("got %v, want 404 NotFound", err)
		}
		if n := len(srv.requests()) - before; n != 0 {
			t.Errorf("%d webhook calls, want none", n)
		}
	})
}

// As kube-apiserver's mutating dispatcher, which runs ShouldCallHook for
// each webhook against the object as the webhooks before it left it: a
// webhook whose objectSelector matches only the labels an earlier
// webhook added is called, and a reinvocation is skipped for a webhook
// whose objectSelector no longer matches the object.
func TestMutatingWebhookObjectSelectorSeesEarlierPatches(t *testing.T) {
	srv := newHookServer(t, func(path string, r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		switch path {
		case "/label":
			if strings.Contains(string(r.Object.Raw), `"tier":"web"`) {
				return allow()
			}
			return patchResponse(`[{"op":"add","path":"/metadata/labels","value":{"tier":"web"}}]`)
		case "/unlabel":
			if strings.Contains(string(r.Object.Raw), `"tier":"web"`) {
				return patchResponse(`[{"op":"remove","path":"/metadata/labels/tier"}]`)
			}
		}
		return allow()
	})
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
	t.Run("later webhook matches the added label", func(t *testing.T) {
		p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(
			hookSpec{name: "label.example.com", path: "/label"},
			hookSpec{name: "web-only.example.com", objSelector: web},
		)))}
		before := len(srv.requests())
		if err := p.Admit(context.Background(), podCreate(newPod("p"))); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.requests()) - before; n != 2 {
			t.Errorf("%d webhook calls, want 2 (the selector matches the label the first webhook added)", n)
		}
	})
	t.Run("reinvocation of a webhook that no longer matches", func(t *testing.T) {
		p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(
			hookSpec{name: "label.example.com", path: "/label"},
			hookSpec{name: "web-only.example.com", objSelector: web, reinvoke: true},
			hookSpec{name: "unlabel.example.com", path: "/unlabel"},
		)))}
		before := len(srv.requests())
		if err := p.Admit(context.Background(), podCreate(newPod("p"))); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.requests()) - before; n != 3 {
			t.Errorf("%d webhook calls, want 3 (no reinvocation of web-only: its selector no longer matches)", n)
		}
	})
}

// A Namespace's create or update is matched by the namespace's own labels
// (kube-apiserver's namespace matcher), and, as for the objectSelector,
// by the labels as the mutating webhooks before have left them:
// kube-apiserver's mutating dispatcher hands ShouldCallHook the patched
// object, and its namespace matcher reads the labels from that object at
// each webhook's turn. So a webhook whose namespaceSelector matches only
// a label an earlier webhook added to the namespace is called, and one
// whose label an earlier webhook removed is not.
func TestMutatingWebhookNamespaceSelectorSeesEarlierPatches(t *testing.T) {
	srv := newHookServer(t, func(path string, r *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		switch path {
		case "/label":
			return patchResponse(`[{"op":"add","path":"/metadata/labels","value":{"tier":"web"}}]`)
		case "/unlabel":
			return patchResponse(`[{"op":"remove","path":"/metadata/labels/tier"}]`)
		}
		return allow()
	})
	web := &metav1.LabelSelector{MatchLabels: map[string]string{"tier": "web"}}
	// The first webhook's selector is not empty, so its namespace's labels
	// are read before its patch.
	anyNamespace := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "other", Operator: metav1.LabelSelectorOpDoesNotExist}}}
	namespaces := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"namespaces"}},
	}}
	nsCreate := func(labels map[string]string) *Attributes {
		ns := &corev1.Namespace{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Namespace"}, ObjectMeta: metav1.ObjectMeta{Name: "ns", Labels: labels}}
		return &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("namespaces"),
			Kind: corev1.SchemeGroupVersion.WithKind("Namespace"), Namespace: "ns", Name: "ns", Object: ns}
	}
	for _, tt := range []struct {
		name   string
		first  string
		labels map[string]string
		want   int
	}{
		{"label added by an earlier webhook", "/label", nil, 2},
		{"label removed by an earlier webhook", "/unlabel", map[string]string{"tier": "web"}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			p := &MutatingWebhook{webhookDispatcher: testDispatcher(mutatingWebhooks(srv.mutating(
				hookSpec{name: "first.example.com", path: tt.first, nsSelector: anyNamespace, rules: namespaces},
				hookSpec{name: "web-only.example.com", path: "/allow", nsSelector: web, rules: namespaces},
			)))}
			before := len(srv.requests())
			if err := p.Admit(context.Background(), nsCreate(tt.labels)); err != nil {
				t.Fatal(err)
			}
			if n := len(srv.requests()) - before; n != tt.want {
				t.Errorf("%d webhook calls, want %d (web-only's namespaceSelector is matched against the namespace as the first webhook left it)", n, tt.want)
			}
		})
	}
}
