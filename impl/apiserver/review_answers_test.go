package apiserver_test

import (
	"testing"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestSelfReviewsAnswerWithNewObjects: SelfSubjectReview and
// SelfSubjectRulesReview answer as kube-apiserver's RESTs do, with a new
// object rather than the request echoed: a SelfSubjectReview carries a
// creationTimestamp and none of the request's metadata; a
// SelfSubjectRulesReview carries only its status. A SelfSubjectRulesReview
// without spec.namespace is the REST's 400 "no namespace on request"
// (there is no validation of this kind to make it a 422).
func TestSelfReviewsAnswerWithNewObjects(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	labels := map[string]string{"a": "b"}
	ssr, err := e.cs.AuthenticationV1().SelfSubjectReviews().Create(c, &authenticationv1.SelfSubjectReview{ObjectMeta: metav1.ObjectMeta{Name: "me", Labels: labels}}, metav1.CreateOptions{})
	if err != nil || ssr.Name != "" || len(ssr.Labels) != 0 || ssr.CreationTimestamp.IsZero() || ssr.Status.UserInfo.Username == "" {
		t.Errorf("SelfSubjectReview: %+v %v", ssr, err)
	}
	ssrr, err := e.cs.AuthorizationV1().SelfSubjectRulesReviews().Create(c, &authorizationv1.SelfSubjectRulesReview{ObjectMeta: metav1.ObjectMeta{Labels: labels},
		Spec: authorizationv1.SelfSubjectRulesReviewSpec{Namespace: "default"}}, metav1.CreateOptions{})
	if err != nil || len(ssrr.Labels) != 0 || ssrr.Spec.Namespace != "" || len(ssrr.Status.ResourceRules) == 0 {
		t.Errorf("SelfSubjectRulesReview: %+v %v", ssrr, err)
	}
	_, err = e.cs.AuthorizationV1().SelfSubjectRulesReviews().Create(c, &authorizationv1.SelfSubjectRulesReview{}, metav1.CreateOptions{})
	if !apierrors.IsBadRequest(err) || err.Error() != "no namespace on request" {
		t.Errorf("SelfSubjectRulesReview without a namespace: %v, want the 400 \"no namespace on request\"", err)
	}
}
