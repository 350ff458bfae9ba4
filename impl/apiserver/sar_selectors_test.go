package apiserver

import (
	"reflect"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth/webhook"
)

// A SubjectAccessReview's selector requirements reach the authorizers as
// kube-apiserver's SubjectAccessReview REST passes them on (the webhook
// authorizer sends them on in its own review): field In and NotIn of one
// value, label In, NotIn, Exists and DoesNotExist; requirements it cannot
// express (several field values, field Exists, unknown operators) are
// left out, which only broadens the question.
func TestAccessReviewSelectorRequirementsReachTheAuthorizer(t *testing.T) {
	ra := &authorizationv1.ResourceAttributes{Verb: "list", Version: "v1", Resource: "pods", Namespace: "ns",
		FieldSelector: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
			{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n,1"}},
			{Key: "status.phase", Operator: metav1.FieldSelectorOpNotIn, Values: []string{"Failed"}},
			{Key: "a", Operator: metav1.FieldSelectorOpIn, Values: []string{"x", "y"}},
			{Key: "b", Operator: metav1.FieldSelectorOpExists},
		}},
		LabelSelector: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
			{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}},
			{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist},
			{Key: "c", Operator: "Bogus", Values: []string{"z"}},
		}},
	}
	info := attributesInfo(ra, nil)
	// Authorizers reading the selectors' text (the Node authorizer) see
	// the same requirements.
	if info.FieldSelector != `spec.nodeName=n\,1,status.phase!=Failed` || info.LabelSelector != "app in (api,web),!tier" {
		t.Errorf("selector texts %q %q", info.FieldSelector, info.LabelSelector)
	}
	got := webhook.ReviewSpec(auth.Attributes{Info: info}).ResourceAttributes
	wantFields := []metav1.FieldSelectorRequirement{
		{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n,1"}},
		{Key: "status.phase", Operator: metav1.FieldSelectorOpNotIn, Values: []string{"Failed"}},
	}
	if got.FieldSelector == nil || !reflect.DeepEqual(got.FieldSelector.Requirements, wantFields) {
		t.Errorf("field selector %+v, want %+v", got.FieldSelector, wantFields)
	}
	wantLabels := []metav1.LabelSelectorRequirement{
		{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web", "api"}},
		{Key: "tier", Operator: metav1.LabelSelectorOpDoesNotExist},
	}
	if got.LabelSelector == nil || !reflect.DeepEqual(got.LabelSelector.Requirements, wantLabels) {
		t.Errorf("label selector %+v, want %+v", got.LabelSelector, wantLabels)
	}
	// A raw selector is passed on as it is.
	ra = &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods",
		FieldSelector: &authorizationv1.FieldSelectorAttributes{RawSelector: "spec.nodeName=n1"}}
	got = webhook.ReviewSpec(auth.Attributes{Info: attributesInfo(ra, nil)}).ResourceAttributes
	want := []metav1.FieldSelectorRequirement{{Key: "spec.nodeName", Operator: metav1.FieldSelectorOpIn, Values: []string{"n1"}}}
	if got.FieldSelector == nil || !reflect.DeepEqual(got.FieldSelector.Requirements, want) {
		t.Errorf("raw field selector: %+v", got.FieldSelector)
	}
}

// An access review naming no version asks about every version: the
// authorizers (the webhook's review) see "*", as kube-apiserver's
// SubjectAccessReview REST fills it (matchAllVersionIfEmpty).
func TestAccessReviewWithoutVersionAsksAboutAll(t *testing.T) {
	for version, want := range map[string]string{"": "*", "v1": "v1"} {
		ra := &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Version: version}
		if got := webhook.ReviewSpec(auth.Attributes{Info: attributesInfo(ra, nil)}).ResourceAttributes.Version; got != want {
			t.Errorf("version %q: the webhook is asked about %q, want %q", version, got, want)
		}
	}
}
