package admission

import (
	"context"
	"fmt"
	"testing"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// A webhook's namespaceSelector is matched as kube-apiserver's namespace
// matcher does:
//
//   - an empty selector ({}) matches without reading the namespace, as does
//     any selector for a cluster-scoped request that is not to a namespace;
//   - a create or update of a Namespace (no subresource) is matched by the
//     object's own labels;
//   - every other request (a Namespace's delete, its status and finalize
//     subresources, any namespaced object) by its namespace's labels, read
//     from the cache, then from storage when the cache has none;
//   - a namespace found in neither fails the request with that 404
//     NotFound (namespaces "<name>" not found), whatever the selector, but
//     only for a webhook whose rules and objectSelector match the request:
//     one they exclude is skipped quietly.
func TestWebhookNamespaceSelectorReadsTheNamespace(t *testing.T) {
	srv := newHookServer(t, func(string, *admissionv1.AdmissionRequest) *admissionv1.AdmissionResponse {
		return &admissionv1.AdmissionResponse{Allowed: true}
	})
	prodLabels := map[string]string{"env": "prod"}
	onlyProd := &metav1.LabelSelector{MatchLabels: prodLabels}
	notProd := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "env", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"prod"}}}}
	everything := &metav1.LabelSelector{}
	onlyWeb := &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}}
	all := []admissionregistrationv1.RuleWithOperations{{
		Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.OperationAll},
		Rule:       admissionregistrationv1.Rule{APIGroups: []string{"*"}, APIVersions: []string{"*"}, Resources: []string{"*", "*/*"}},
	}}
	deployments := []admissionregistrationv1.RuleWithOperations{{Operations: []admissionregistrationv1.OperationType{"*"},
		Rule: admissionregistrationv1.Rule{APIGroups: []string{"apps"}, APIVersions: []string{"*"}, Resources: []string{"deployments"}}}}

	nsGVR := corev1.SchemeGroupVersion.WithResource("namespaces")
	nsKind := corev1.SchemeGroupVersion.WithKind("Namespace")
	namespace := func(name string, labels map[string]string) *corev1.Namespace {
		return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}}
	}
	podIn := func(ns string) *Attributes {
		p := newPod("p")
		p.Namespace = ns
		return &Attributes{Operation: Update, Resource: corev1.SchemeGroupVersion.WithResource("pods"), Kind: corev1.SchemeGroupVersion.WithKind("Pod"),
			Namespace: ns, Name: "p", Object: p, OldObject: p}
	}
	nsWrite := func(op Operation, sub string, obj, old *corev1.Namespace) *Attributes {
		a := &Attributes{Operation: op, Resource: nsGVR, Kind: nsKind, Subresource: sub, Namespace: "ns", Name: "ns"}
		if obj != nil {
			a.Object = obj
		}
		if old != nil {
			a.OldObject = old
		}
		return a
	}
	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}
	nodeCreate := &Attributes{Operation: Create, Resource: corev1.SchemeGroupVersion.WithResource("nodes"), Kind: corev1.SchemeGroupVersion.WithKind("Node"),
		Name: "n", Object: node}

	type lookup struct {
		name  string
		fresh bool
	}
	tests := []struct {
		name    string
		spec    hookSpec
		a       *Attributes
		stored  map[string]*corev1.Namespace // by name; nil: none
		cached  bool                         // the cache has the stored namespaces too
		called  bool
		wantErr string // the 404's message when the request fails
		lookups []lookup
	}{
		{"missing namespace, selector would match empty labels", hookSpec{nsSelector: notProd, rules: all}, podIn("gone"), nil, false,
			false, `namespaces "gone" not found`, []lookup{{"gone", false}, {"gone", true}}},
		{"missing namespace, selector needing labels", hookSpec{nsSelector: onlyProd, rules: all}, podIn("gone"), nil, false,
			false, `namespaces "gone" not found`, []lookup{{"gone", false}, {"gone", true}}},
		{"missing namespace, empty selector: no lookup", hookSpec{nsSelector: everything, rules: all}, podIn("gone"), nil, false,
			true, "", nil},
		{"missing namespace, objectSelector excludes", hookSpec{nsSelector: onlyProd, objSelector: onlyWeb, rules: all}, podIn("gone"), nil, false,
			false, "", []lookup{{"gone", false}, {"gone", true}}},
		{"missing namespace, rules exclude", hookSpec{nsSelector: onlyProd, rules: deployments}, podIn("gone"), nil, false,
			false, "", nil},
		{"namespace only in storage", hookSpec{nsSelector: onlyProd, rules: all}, podIn("late"), map[string]*corev1.Namespace{"late": namespace("late", prodLabels)}, false,
			true, "", []lookup{{"late", false}, {"late", true}}},
		{"namespace in the cache", hookSpec{nsSelector: onlyProd, rules: all}, podIn("ns"), map[string]*corev1.Namespace{"ns": namespace("ns", prodLabels)}, true,
			true, "", []lookup{{"ns", false}}},
		{"namespace create: its own labels", hookSpec{nsSelector: onlyProd, rules: all}, nsWrite(Create, "", namespace("ns", prodLabels), nil), nil, false,
			true, "", nil},
		{"namespace update: its new labels", hookSpec{nsSelector: onlyProd, rules: all}, nsWrite(Update, "", namespace("ns", prodLabels), namespace("ns", nil)), nil, false,
			true, "", nil},
		{"namespace delete: the stored namespace's labels", hookSpec{nsSelector: onlyProd, rules: all}, nsWrite(Delete, "", nil, namespace("ns", nil)),
			map[string]*corev1.Namespace{"ns": namespace("ns", prodLabels)}, true, true, "", []lookup{{"ns", false}}},
		{"namespace status: the stored namespace's labels", hookSpec{nsSelector: onlyProd, rules: all}, nsWrite(Update, "status", namespace("ns", prodLabels), namespace("ns", prodLabels)),
			map[string]*corev1.Namespace{"ns": namespace("ns", nil)}, true, false, "", []lookup{{"ns", false}}},
		{"namespace finalize, namespace gone", hookSpec{nsSelector: onlyProd, rules: all}, nsWrite(Update, "finalize", namespace("ns", prodLabels), namespace("ns", prodLabels)),
			nil, false, false, `namespaces "ns" not found`, []lookup{{"ns", false}, {"ns", true}}},
		{"cluster-scoped: no lookup", hookSpec{nsSelector: onlyProd, rules: all}, nodeCreate, nil, false,
			true, "", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv.mu.Lock()
			srv.seen = nil
			srv.mu.Unlock()
			tt.spec.name, tt.spec.path = "ns.example.com", "/allow"
			d := testDispatcher(validatingWebhooks(srv.validating(tt.spec)))
			var lookups []lookup
			d.namespaces = func(_ context.Context, name string, fresh bool) (*corev1.Namespace, error) {
				lookups = append(lookups, lookup{name, fresh})
				if ns, ok := tt.stored[name]; ok && (fresh || tt.cached) {
					return ns, nil
				}
				return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "namespaces"}, name)
			}
			err := (&ValidatingWebhook{d}).Validate(context.Background(), tt.a)
			if tt.wantErr != "" {
				st, ok := err.(apierrors.APIStatus)
				if !ok || !apierrors.IsNotFound(err) || st.Status().Code != 404 || err.Error() != tt.wantErr ||
					st.Status().Details == nil || st.Status().Details.Kind != "namespaces" {
					t.Fatalf("got %#v, want the 404 %q", err, tt.wantErr)
				}
			} else if err != nil {
				t.Fatalf("refused: %v", err)
			}
			if called := len(srv.requests()) > 0; called != tt.called {
				t.Errorf("webhook called %v, want %v", called, tt.called)
			}
			if fmt.Sprint(lookups) != fmt.Sprint(tt.lookups) {
				t.Errorf("namespace lookups %v, want %v", lookups, tt.lookups)
			}
		})
	}
}
