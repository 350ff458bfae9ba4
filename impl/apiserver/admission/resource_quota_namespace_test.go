package admission

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestResourceQuotaIgnoresNamespaceCreate: a Namespace's create is
// admitted in the namespace it names (as kube-apiserver's create handler
// sets it), and ResourceQuota leaves it alone as upstream's plugin does
// (isNamespaceCreation): neither a quota on count/namespaces in that
// namespace nor a limitedResources entry for namespaces refuses it. Its
// updates are not counted either (an object count is charged on create
// only).
func TestResourceQuotaIgnoresNamespaceCreate(t *testing.T) {
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns"}}
	nsAttrs := func(op Operation, sub string) *Attributes {
		a := &Attributes{Operation: op, Resource: corev1.SchemeGroupVersion.WithResource("namespaces"),
			Kind: corev1.SchemeGroupVersion.WithKind("Namespace"), Namespace: "ns", Name: "ns", Subresource: sub, Object: ns.DeepCopy()}
		if op == Update {
			a.OldObject = ns.DeepCopy()
		}
		return a
	}
	for _, a := range []*Attributes{nsAttrs(Create, ""), nsAttrs(Update, ""), nsAttrs(Update, "status"), nsAttrs(Update, "finalize")} {
		store := &memQuotas{quotas: map[string]*corev1.ResourceQuota{
			"q": quota("q", rl("count/namespaces", "0"), rl("count/namespaces", "0")),
		}}
		p := &ResourceQuota{Store: store, LimitedResources: []LimitedResource{{Resource: "namespaces", MatchContains: []string{"namespaces"}}}}
		if err := p.Validate(context.Background(), a); err != nil {
			t.Errorf("%s namespaces/%s: %v", a.Operation, a.Subresource, err)
		}
		if store.updates != 0 {
			t.Errorf("%s namespaces/%s: %d quota updates, want none", a.Operation, a.Subresource, store.updates)
		}
	}
}
