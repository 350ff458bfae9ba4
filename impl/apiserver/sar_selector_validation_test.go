package apiserver_test

import (
	"errors"
	"net/http"
	"slices"
	"testing"

	authorizationv1 "k8s.io/api/authorization/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
)

// cause is one expected cause of a 422 Status: its type, field and
// message as kubectl and client-go show them.
type cause struct {
	typ   metav1.CauseType
	field string
	msg   string
}

// invalidCauses are the causes of err, which must be a 422 Invalid.
func invalidCauses(t *testing.T, err error) []cause {
	t.Helper()
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != http.StatusUnprocessableEntity || se.ErrStatus.Reason != metav1.StatusReasonInvalid || se.ErrStatus.Details == nil {
		t.Errorf("want a 422 Invalid Status, got %v", err)
		return nil
	}
	var out []cause
	for _, c := range se.ErrStatus.Details.Causes {
		out = append(out, cause{c.Type, c.Field, c.Message})
	}
	return out
}

// TestAccessReviewSelectorsAreValidated: as kube-apiserver's
// authorization validation, the field and label selectors of
// SubjectAccessReview, SelfSubjectAccessReview and
// LocalSubjectAccessReview are checked before anything is asked: a
// rawSelector beside requirements, neither of them, a requirement without
// key, In/NotIn without values, Exists/DoesNotExist with values, and for
// labels a key that is not a qualified name or a value that is not a
// label value are refused with a 422 naming each field. Unknown
// operators pass (newer clients may know more operators; the
// requirement is then left out of the question).
func TestAccessReviewSelectorsAreValidated(t *testing.T) {
	e := newAuthEnv(t)
	c := ctx(t)
	const (
		fs = "spec.resourceAttributes.fieldSelector"
		ls = "spec.resourceAttributes.labelSelector"
	)
	inOrNotIn := "Required value: must be specified when `operator` is 'In' or 'NotIn'"
	existsOrNot := "Forbidden: may not be specified when `operator` is 'Exists' or 'DoesNotExist'"
	badName := `Invalid value: "-bad": name part must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyName',  or 'my.name',  or '123-abc', regex used for validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')`
	badValue := `Invalid value: "a b": a valid label must be an empty string or consist of alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character (e.g. 'MyValue',  or 'my_value',  or '12345', regex used for validation is '(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')`
	for _, tc := range []struct {
		name   string
		fields *authorizationv1.FieldSelectorAttributes
		labels *authorizationv1.LabelSelectorAttributes
		want   []cause
	}{
		{name: "field raw and requirements",
			fields: &authorizationv1.FieldSelectorAttributes{RawSelector: "a=b", Requirements: []metav1.FieldSelectorRequirement{
				{Key: "a", Operator: metav1.FieldSelectorOpIn, Values: []string{"b"}}}},
			want: []cause{{metav1.CauseTypeFieldValueInvalid, fs + ".rawSelector", `Invalid value: "a=b": may not specified at the same time as requirements`}}},
		{name: "field neither",
			fields: &authorizationv1.FieldSelectorAttributes{},
			want:   []cause{{metav1.CauseTypeFieldValueRequired, fs + ".requirements", "Required value: when " + fs + " is specified, requirements or rawSelector is required"}}},
		{name: "field requirement without key or values",
			fields: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
				{Key: "a", Operator: metav1.FieldSelectorOpIn, Values: []string{"b"}},
				{Operator: metav1.FieldSelectorOpNotIn}}},
			want: []cause{
				{metav1.CauseTypeFieldValueRequired, fs + ".requirements[1].key", "Required value: must be specified"},
				{metav1.CauseTypeFieldValueRequired, fs + ".requirements[1].values", inOrNotIn}}},
		{name: "field exists with values",
			fields: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{
				{Key: "a", Operator: metav1.FieldSelectorOpDoesNotExist, Values: []string{"b"}}}},
			want: []cause{{metav1.CauseType(field.ErrorTypeForbidden), fs + ".requirements[0].values", existsOrNot}}},
		{name: "label raw and requirements",
			labels: &authorizationv1.LabelSelectorAttributes{RawSelector: "app", Requirements: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpExists}}},
			want: []cause{{metav1.CauseTypeFieldValueInvalid, ls + ".rawSelector", `Invalid value: "app": may not specified at the same time as requirements`}}},
		{name: "label neither",
			labels: &authorizationv1.LabelSelectorAttributes{},
			want:   []cause{{metav1.CauseTypeFieldValueRequired, ls + ".requirements", "Required value: when " + ls + " is specified, requirements or rawSelector is required"}}},
		{name: "label in without values, exists with values",
			labels: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
				{Key: "app", Operator: metav1.LabelSelectorOpIn},
				{Key: "tier", Operator: metav1.LabelSelectorOpExists, Values: []string{"web"}}}},
			want: []cause{
				{metav1.CauseTypeFieldValueRequired, ls + ".requirements[0].values", inOrNotIn},
				{metav1.CauseType(field.ErrorTypeForbidden), ls + ".requirements[1].values", existsOrNot}}},
		{name: "label bad key and value",
			labels: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{
				{Key: "-bad", Operator: metav1.LabelSelectorOpNotIn, Values: []string{"ok", "a b"}}}},
			want: []cause{
				{metav1.CauseTypeFieldValueInvalid, ls + ".requirements[0].key", badName},
				{metav1.CauseTypeFieldValueInvalid, ls + ".requirements[0].values[1]", badValue}}},
		{name: "field and label together",
			fields: &authorizationv1.FieldSelectorAttributes{},
			labels: &authorizationv1.LabelSelectorAttributes{},
			want: []cause{
				{metav1.CauseTypeFieldValueRequired, fs + ".requirements", "Required value: when " + fs + " is specified, requirements or rawSelector is required"},
				{metav1.CauseTypeFieldValueRequired, ls + ".requirements", "Required value: when " + ls + " is specified, requirements or rawSelector is required"}}},
		{name: "unknown operators pass",
			fields: &authorizationv1.FieldSelectorAttributes{Requirements: []metav1.FieldSelectorRequirement{{Key: "a", Operator: "Bogus"}}},
			labels: &authorizationv1.LabelSelectorAttributes{Requirements: []metav1.LabelSelectorRequirement{{Key: "app", Operator: "Bogus", Values: []string{"x"}}}}},
	} {
		ra := &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods", Namespace: "default", FieldSelector: tc.fields, LabelSelector: tc.labels}
		check := func(kind string, err error) {
			t.Helper()
			if tc.want == nil {
				if err != nil {
					t.Errorf("%s %s: %v, want no error", tc.name, kind, err)
				}
				return
			}
			if got := invalidCauses(t, err); !slices.Equal(got, tc.want) {
				t.Errorf("%s %s: causes\n%q\nwant\n%q", tc.name, kind, got, tc.want)
			}
		}
		_, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(c, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "bob", ResourceAttributes: ra}}, metav1.CreateOptions{})
		check("SubjectAccessReview", err)
		_, err = e.cs.AuthorizationV1().LocalSubjectAccessReviews("default").Create(c, &authorizationv1.LocalSubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "bob", ResourceAttributes: ra}}, metav1.CreateOptions{})
		check("LocalSubjectAccessReview", err)
		_, err = e.tokenClient(t, "alice-token", "").AuthorizationV1().SelfSubjectAccessReviews().Create(c, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra}}, metav1.CreateOptions{})
		check("SelfSubjectAccessReview", err)
	}
}

// TestAccessReviewCauseOrder: kube-apiserver lists a review's spec
// causes (user, then selectors) before its metadata cause, and the
// message of the 422 names the kind and every cause, as kubectl prints
// it.
func TestAccessReviewCauseOrder(t *testing.T) {
	e := newAuthEnv(t)
	_, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(ctx(t), &authorizationv1.SubjectAccessReview{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"a": "b"}},
		Spec: authorizationv1.SubjectAccessReviewSpec{ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "list", Resource: "pods",
			FieldSelector: &authorizationv1.FieldSelectorAttributes{RawSelector: "x=y", Requirements: []metav1.FieldSelectorRequirement{{Key: "x", Operator: metav1.FieldSelectorOpIn, Values: []string{"y"}}}}}}},
		metav1.CreateOptions{})
	var fields []string
	for _, c := range invalidCauses(t, err) {
		fields = append(fields, c.field)
	}
	if want := []string{"spec.user", "spec.resourceAttributes.fieldSelector.rawSelector", "metadata"}; !slices.Equal(fields, want) {
		t.Errorf("cause fields %q, want %q", fields, want)
	}
	const prefix = `.authorization.k8s.io "" is invalid: [spec.user: Invalid value: "": at least one of user or group must be specified, spec.resourceAttributes.fieldSelector.rawSelector: Invalid value: "x=y": may not specified at the same time as requirements, metadata: Invalid value: `
	if err == nil || len(err.Error()) < len(prefix) || err.Error()[:len(prefix)] != prefix {
		t.Errorf("message %v, want it to begin %s", err, prefix)
	}
}

// TestAccessReviewAttributesUnion: as kube-apiserver 1.37, a review with
// both resourceAttributes and nonResourceAttributes, or neither, is a 422
// whose one cause is on spec itself ("exactly one of …", the
// nonResourceAttributes given as its value).
func TestAccessReviewAttributesUnion(t *testing.T) {
	e := newAuthEnv(t)
	c := ctx(t)
	ra := &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "default"}
	nra := &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}
	for _, tc := range []struct {
		name string
		ra   *authorizationv1.ResourceAttributes
		nra  *authorizationv1.NonResourceAttributes
		want string
	}{
		{"neither", nil, nil, "Invalid value: null: exactly one of nonResourceAttributes or resourceAttributes must be specified"},
		{"both", ra, nra, `Invalid value: {"path":"/healthz","verb":"get"}: exactly one of nonResourceAttributes or resourceAttributes must be specified`},
	} {
		want := []cause{{metav1.CauseTypeFieldValueInvalid, "spec", tc.want}}
		_, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(c, &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
			User: "bob", ResourceAttributes: tc.ra, NonResourceAttributes: tc.nra}}, metav1.CreateOptions{})
		if got := invalidCauses(t, err); !slices.Equal(got, want) {
			t.Errorf("%s SubjectAccessReview: causes %q, want %q", tc.name, got, want)
		}
		_, err = e.tokenClient(t, "alice-token", "").AuthorizationV1().SelfSubjectAccessReviews().Create(c, &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: tc.ra, NonResourceAttributes: tc.nra}}, metav1.CreateOptions{})
		if got := invalidCauses(t, err); !slices.Equal(got, want) {
			t.Errorf("%s SelfSubjectAccessReview: causes %q, want %q", tc.name, got, want)
		}
	}
}

// TestLocalAccessReviewNamespace: a LocalSubjectAccessReview takes the
// request's namespace as its metadata.namespace (another is a 400, as
// for every namespaced create); then, as kube-apiserver's validation, its
// metadata "must be empty except for namespace" and
// spec.resourceAttributes.namespace "must match metadata.namespace" (422
// causes after the spec's), and nonResourceAttributes are "disallowed on
// this kind of request".
func TestLocalAccessReviewNamespace(t *testing.T) {
	e := newAuthEnv(t)
	c := ctx(t)
	lsar := func(meta metav1.ObjectMeta, spec authorizationv1.SubjectAccessReviewSpec) error {
		_, err := e.cs.AuthorizationV1().LocalSubjectAccessReviews("default").Create(c, &authorizationv1.LocalSubjectAccessReview{ObjectMeta: meta, Spec: spec}, metav1.CreateOptions{})
		return err
	}
	err := lsar(metav1.ObjectMeta{Name: "x"}, authorizationv1.SubjectAccessReviewSpec{User: "bob",
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "other"}})
	want := []cause{
		{metav1.CauseTypeFieldValueInvalid, "metadata", `Invalid value: {"name":"x","namespace":"default"}: must be empty except for namespace`},
		{metav1.CauseTypeFieldValueInvalid, "spec.resourceAttributes.namespace", `Invalid value: "other": must match metadata.namespace`},
	}
	if got := invalidCauses(t, err); !slices.Equal(got, want) {
		t.Errorf("causes %q, want %q", got, want)
	}
	err = lsar(metav1.ObjectMeta{}, authorizationv1.SubjectAccessReviewSpec{User: "bob",
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/healthz", Verb: "get"}})
	want = []cause{{metav1.CauseTypeFieldValueInvalid, "spec.nonResourceAttributes", `Invalid value: {"path":"/healthz","verb":"get"}: disallowed on this kind of request`}}
	if got := invalidCauses(t, err); !slices.Equal(got, want) {
		t.Errorf("non-resource: causes %q, want %q", got, want)
	}
	err = lsar(metav1.ObjectMeta{Namespace: "other"}, authorizationv1.SubjectAccessReviewSpec{User: "bob",
		ResourceAttributes: &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "other"}})
	if !apierrors.IsBadRequest(err) || err.Error() != "the namespace of the provided object does not match the namespace sent on the request" {
		t.Errorf("metadata.namespace other: %v, want a 400", err)
	}
}

// TestClusterReviewDropsNamespace: a cluster-scoped review whose body
// names a namespace is answered with the namespace dropped, as
// kube-apiserver's create handler clears the namespace of a
// cluster-scoped object before its REST (and validation) sees it: no
// "metadata: must be empty" for it.
func TestClusterReviewDropsNamespace(t *testing.T) {
	e := newAuthEnv(t)
	c := ctx(t)
	meta := metav1.ObjectMeta{Namespace: "elsewhere"}
	ra := &authorizationv1.ResourceAttributes{Verb: "get", Resource: "pods", Namespace: "default"}
	sar, err := e.cs.AuthorizationV1().SubjectAccessReviews().Create(c, &authorizationv1.SubjectAccessReview{ObjectMeta: meta,
		Spec: authorizationv1.SubjectAccessReviewSpec{User: "bob", ResourceAttributes: ra}}, metav1.CreateOptions{})
	if err != nil || sar.Namespace != "" || !sar.Status.Allowed {
		t.Errorf("SubjectAccessReview with a namespace: %+v %v", sar, err)
	}
	ssar, err := e.tokenClient(t, "alice-token", "").AuthorizationV1().SelfSubjectAccessReviews().Create(c, &authorizationv1.SelfSubjectAccessReview{ObjectMeta: meta,
		Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: ra}}, metav1.CreateOptions{})
	if err != nil || ssar.Namespace != "" || !ssar.Status.Allowed {
		t.Errorf("SelfSubjectAccessReview with a namespace: %+v %v", ssar, err)
	}
}
