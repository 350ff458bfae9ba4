package apiserver_test

import (
	"testing"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestReviewsDropSystemFields: the metadata fields the server owns
// (uid, creationTimestamp, deletionTimestamp, deletionGracePeriodSeconds)
// sent in a review's body are cleared before the review is validated, as
// kube-apiserver's create handler clears them before its REST: a
// SubjectAccessReview or LocalSubjectAccessReview carrying them is
// answered (not a 422 "metadata: must be empty"), and a TokenReview's
// answer does not echo them. Other metadata (labels) is still refused.
func TestReviewsDropSystemFields(t *testing.T) {
	e := newAuthEnv(t)
	c := ctx(t)
	grace := int64(5)
	now := metav1.NewTime(time.Unix(1700000000, 0))
	sys := func(ns string) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: ns, UID: types.UID("u-1"), CreationTimestamp: now, DeletionTimestamp: &now, DeletionGracePeriodSeconds: &grace}
	}
	ra := &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "default"}
	sar, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(c, &authorizationv1.SubjectAccessReview{ObjectMeta: sys(""),
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: ra}}, metav1.CreateOptions{})
	if err != nil || !sar.Status.Allowed || sar.UID != "" || sar.DeletionTimestamp != nil || sar.DeletionGracePeriodSeconds != nil {
		t.Errorf("SubjectAccessReview with system fields: %+v %v", sar, err)
	}
	lsar, err := e.cs.AuthorizationV1().LocalSubjectAccessReviews("default").Create(c, &authorizationv1.LocalSubjectAccessReview{ObjectMeta: sys("default"),
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: ra}}, metav1.CreateOptions{})
	if err != nil || !lsar.Status.Allowed || lsar.UID != "" || lsar.Namespace != "default" {
		t.Errorf("LocalSubjectAccessReview with system fields: %+v %v", lsar, err)
	}
	tr, err := e.cs.AuthenticationV1().TokenReviews().Create(c, &authenticationv1.TokenReview{ObjectMeta: sys(""),
		Spec: authenticationv1.TokenReviewSpec{Token: "alice-token"}}, metav1.CreateOptions{})
	if err != nil || tr.UID != "" || !tr.CreationTimestamp.IsZero() || tr.DeletionTimestamp != nil || tr.DeletionGracePeriodSeconds != nil {
		t.Errorf("TokenReview with system fields: %+v %v", tr, err)
	}
	_, err = e.cs.AuthorizationV1().SubjectAccessReviews().Create(c, &authorizationv1.SubjectAccessReview{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: ra}}, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) {
		t.Errorf("SubjectAccessReview with labels: %v, want a 422", err)
	}
}
