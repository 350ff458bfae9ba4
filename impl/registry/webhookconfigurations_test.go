package registry

import (
	"context"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func validWebhook() admissionregistrationv1.ValidatingWebhook {
	none := admissionregistrationv1.SideEffectClassNone
	return admissionregistrationv1.ValidatingWebhook{
		Name:                    "check.example.com",
		ClientConfig:            admissionregistrationv1.WebhookClientConfig{URL: ptr("https://hook.example.com/validate")},
		Rules:                   []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"CREATE"}, Rule: admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"pods"}}}},
		SideEffects:             &none,
		AdmissionReviewVersions: []string{"v1"},
	}
}

func TestValidatingWebhookConfigurationDefaults(t *testing.T) {
	r := find(t, admissionregistrationv1.SchemeGroupVersion, "validatingwebhookconfigurations")
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{validWebhook()}}
	r.Strategy.Default(c)
	w := c.Webhooks[0]
	if *w.FailurePolicy != admissionregistrationv1.Fail || *w.MatchPolicy != admissionregistrationv1.Equivalent ||
		*w.TimeoutSeconds != 10 || w.NamespaceSelector == nil || w.ObjectSelector == nil || *w.Rules[0].Scope != admissionregistrationv1.AllScopes {
		t.Fatalf("defaults: %+v", w)
	}
	wantErrors(t, r.Strategy.Validate(context.Background(), c))
}

func TestWebhookConfigurationValidation(t *testing.T) {
	some := admissionregistrationv1.SideEffectClassSome
	tests := []struct {
		name   string
		mutate func(w *admissionregistrationv1.ValidatingWebhook)
		want   []string
	}{
		{"valid", func(*admissionregistrationv1.ValidatingWebhook) {}, nil},
		{"two-segment name", func(w *admissionregistrationv1.ValidatingWebhook) { w.Name = "example.com" }, []string{invalid + " webhooks[0].name"}},
		{"http url", func(w *admissionregistrationv1.ValidatingWebhook) { w.ClientConfig.URL = ptr("http://x.example.com") },
			[]string{invalid + " webhooks[0].clientConfig.url"}},
		{"url and service", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "ns", Name: "svc"}
		}, []string{required + " webhooks[0].clientConfig"}},
		{"service without name", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.ClientConfig.URL = nil
			w.ClientConfig.Service = &admissionregistrationv1.ServiceReference{Namespace: "ns", Path: ptr("x")}
		}, []string{required + " webhooks[0].clientConfig.service.name", invalid + " webhooks[0].clientConfig.service.path"}},
		{"side effects Some", func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = &some }, []string{notSupported + " webhooks[0].sideEffects"}},
		{"no side effects", func(w *admissionregistrationv1.ValidatingWebhook) { w.SideEffects = nil }, []string{required + " webhooks[0].sideEffects"}},
		{"timeout 31", func(w *admissionregistrationv1.ValidatingWebhook) { w.TimeoutSeconds = ptr(int32(31)) }, []string{invalid + " webhooks[0].timeoutSeconds"}},
		{"no review versions", func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = nil },
			[]string{required + " webhooks[0].admissionReviewVersions"}},
		{"unknown review version", func(w *admissionregistrationv1.ValidatingWebhook) { w.AdmissionReviewVersions = []string{"v2"} },
			[]string{invalid + " webhooks[0].admissionReviewVersions"}},
		{"bad operation", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.Rules[0].Operations = []admissionregistrationv1.OperationType{"PATCH"}
		},
			[]string{notSupported + " webhooks[0].rules[0].operations[0]"}},
		{"wildcard with others", func(w *admissionregistrationv1.ValidatingWebhook) { w.Rules[0].Resources = []string{"*", "pods"} },
			[]string{invalid + " webhooks[0].rules[0].resources[0]"}},
		{"bad scope", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.Rules[0].Scope = ptr(admissionregistrationv1.ScopeType("Everywhere"))
		},
			[]string{notSupported + " webhooks[0].rules[0].scope"}},
		{"bad selector", func(w *admissionregistrationv1.ValidatingWebhook) {
			w.NamespaceSelector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "k", Operator: "Near"}}}
		}, []string{invalid + " webhooks[0].namespaceSelector.matchExpressions[0].operator"}},
	}
	r := find(t, admissionregistrationv1.SchemeGroupVersion, "validatingwebhookconfigurations")
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := validWebhook()
			tt.mutate(&w)
			c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.ValidatingWebhook{w}}
			wantErrors(t, r.Strategy.Validate(context.Background(), c), tt.want...)
		})
	}

	// Names are unique within a configuration.
	c := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{validWebhook(), validWebhook()}}
	wantErrors(t, r.Strategy.Validate(context.Background(), c), duplicate+" webhooks[1].name")
}

func TestMutatingWebhookConfigurationReinvocation(t *testing.T) {
	r := find(t, admissionregistrationv1.SchemeGroupVersion, "mutatingwebhookconfigurations")
	v := validWebhook()
	m := admissionregistrationv1.MutatingWebhook{Name: v.Name, ClientConfig: v.ClientConfig, Rules: v.Rules, SideEffects: v.SideEffects, AdmissionReviewVersions: v.AdmissionReviewVersions}
	c := &admissionregistrationv1.MutatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Webhooks: []admissionregistrationv1.MutatingWebhook{m}}
	r.Strategy.Default(c)
	if *c.Webhooks[0].ReinvocationPolicy != admissionregistrationv1.NeverReinvocationPolicy {
		t.Fatalf("reinvocationPolicy %v", *c.Webhooks[0].ReinvocationPolicy)
	}
	wantErrors(t, r.Strategy.Validate(context.Background(), c))
	c.Webhooks[0].ReinvocationPolicy = ptr(admissionregistrationv1.ReinvocationPolicyType("Always"))
	wantErrors(t, r.Strategy.Validate(context.Background(), c), notSupported+" webhooks[0].reinvocationPolicy")
}
