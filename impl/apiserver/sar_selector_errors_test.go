package apiserver_test

import (
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAccessReviewReportsIgnoredSelectors: as kube-apiserver's
// SubjectAccessReview REST, a review whose field or label selector could
// not be parsed whole says so in status.evaluationError, after the
// authorizer's own error: "… partially ignored due to parse error" when
// some requirements were kept, "… ignored due to parse error" when none
// were (a raw selector that does not parse is ignored whole), field
// selector first, joined by "; ". A selector that parses adds nothing.
func TestAccessReviewReportsIgnoredSelectors(t *testing.T) {
	e := newAuthEnv(t)
	c := ctx(t)
	in := func(key string) metav1.FieldSelectorRequirement {
		return metav1.FieldSelectorRequirement{Key: key, Operator: metav1.FieldSelectorOpIn, Values: []string{"x"}}
	}
	exists := metav1.FieldSelectorRequirement{Key: "b", Operator: metav1.FieldSelectorOpExists}
	labelIn := metav1.LabelSelectorRequirement{Key: "app", Operator: metav1.LabelSelectorOpIn, Values: []string{"web"}}
	labelBogus := metav1.LabelSelectorRequirement{Key: "c", Operator: "Bogus", Values: []string{"z"}}
	for _, tc := range []struct {
		name   string
		fields *authorizationv1.FieldSelectorAttributes
		labels *authorizationv1.LabelSelectorAttributes
		want   string
	}{
		{"parsed", &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{in("a")}},
			&authorizationv1.LabelSelectorAttributes{RawSelector: "app=web"}, ""},
		{"field partly", &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{in("a"), exists}}, nil,
			"spec.resourceAttributes.fieldSelector partially ignored due to parse error"},
		{"label whole", nil, &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{labelBogus}},
			"spec.resourceAttributes.labelSelector ignored due to parse error"},
		{"raw field and label partly", &authorizationv1.FieldSelectorAttributes{RawSelector: "a"},
			&authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{labelIn, labelBogus}},
			"spec.resourceAttributes.fieldSelector ignored due to parse error; spec.resourceAttributes.labelSelector partially ignored due to parse error"},
		{"raw label", nil, &authorizationv1.LabelSelectorAttributes{RawSelector: "app in ("},
			"spec.resourceAttributes.labelSelector ignored due to parse error"},
	} {
		ra := &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: "default", FieldSelector: tc.fields, LabelSelector: tc.labels}
		r, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(c, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "bob", ResourceAttributes: ra}}, metav1.CreateOptions{})
		if err != nil || r.Status.EvaluationError != tc.want {
			t.Errorf("%s: SAR evaluationError %q (%v), want %q", tc.name, r.Status.EvaluationError, err, tc.want)
		}
		l, err := e.cs.AuthorizationV1().LocalSubjectAccessReviews("default").Create(c, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "bob", ResourceAttributes: ra}}, metav1.CreateOptions{})
		if err != nil || l.Status.EvaluationError != tc.want {
			t.Errorf("%s: LSAR evaluationError %q (%v), want %q", tc.name, l.Status.EvaluationError, err, tc.want)
		}
		s, err := e.tokenClient(t, "alice-token", "").AuthorizationV1().SelfSubjectAccessReviews().Create(c, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra}}, metav1.CreateOptions{})
		if err != nil || s.Status.EvaluationError != tc.want {
			t.Errorf("%s: SSAR evaluationError %q (%v), want %q", tc.name, s.Status.EvaluationError, err, tc.want)
		}
	}
}
