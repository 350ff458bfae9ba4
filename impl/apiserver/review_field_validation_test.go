package apiserver_test

import (
	"net/http"
	"strings"
	"testing"
)

// TestReviewFieldValidation: kube-apiserver decodes a review's body
// through its create handler, so fieldValidation applies to it as to any
// create: by default (Warn) an unknown or duplicate field is a Warning
// header and the review is answered; under Strict it is the decoder's 400
// "strict decoding error: …"; under Ignore it passes silently. A
// fieldValidation or dryRun value the create options refuse is refused
// here too, with the create path's answer.
func TestReviewFieldValidation(t *testing.T) {
	e := newEnv(t, nil)
	const authz, authn = "/apis/authorization.k8s.io/v1/", "/apis/authentication.k8s.io/v1/"
	for _, c := range []struct {
		path, kind, group string
		// fields are the body's fields after apiVersion and kind, with
		// an unknown one, and unknown its path.
		fields, unknown string
		// dup is a body's fields with one written twice, dupField its
		// path.
		dup, dupField string
	}{
		{authn + "tokenreviews", "TokenReview", "authentication.k8s.io",
			`"spec":{"token":"x","foo":1}`, "spec.foo",
			`"spec":{"token":"x","token":"y"}`, "spec.token"},
		{authz + "subjectaccessreviews", "SubjectAccessReview", "authorization.k8s.io",
			`"spec":{"user":"alice","resourceAttributes":{"verb":"get","resource":"pods"},"foo":1}`, "spec.foo",
			`"spec":{"user":"alice","user":"bob","resourceAttributes":{"verb":"get","resource":"pods"}}`, "spec.user"},
		{authz + "selfsubjectaccessreviews", "SelfSubjectAccessReview", "authorization.k8s.io",
			`"spec":{"resourceAttributes":{"verb":"get","resource":"pods","foo":1}}`, "spec.resourceAttributes.foo",
			`"spec":{"resourceAttributes":{"verb":"get","resource":"pods"}},"spec":{"resourceAttributes":{"verb":"list","resource":"pods"}}`, "spec"},
		{authz + "namespaces/default/localsubjectaccessreviews", "LocalSubjectAccessReview", "authorization.k8s.io",
			`"spec":{"user":"alice","resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"},"foo":1}`, "spec.foo",
			`"spec":{"user":"alice","user":"bob","resourceAttributes":{"namespace":"default","verb":"get","resource":"pods"}}`, "spec.user"},
		{authn + "selfsubjectreviews", "SelfSubjectReview", "authentication.k8s.io",
			`"foo":1`, "foo",
			`"metadata":{},"metadata":{}`, "metadata"},
		{authz + "selfsubjectrulesreviews", "SelfSubjectRulesReview", "authorization.k8s.io",
			`"spec":{"namespace":"default","foo":1}`, "spec.foo",
			`"spec":{"namespace":"default","namespace":"kube-system"}`, "spec.namespace"},
	} {
		head := `{"apiVersion":"` + c.group + `/v1","kind":"` + c.kind + `",`
		body, dup := []byte(head+c.fields+`}`), []byte(head+c.dup+`}`)
		for _, q := range []string{"", "?fieldValidation=Warn"} {
			r := e.do("POST", c.path+q, body)
			if want := `unknown field "` + c.unknown + `"`; r.code != http.StatusCreated || !warned(r, want) {
				t.Errorf("%s%s: %d Warning %q, want 201 warning %q: %s", c.kind, q, r.code, r.header.Values("Warning"), want, r.body)
			}
			r = e.do("POST", c.path+q, dup)
			if want := `duplicate field "` + c.dupField + `"`; r.code != http.StatusCreated || !warned(r, want) {
				t.Errorf("%s%s duplicate: %d Warning %q, want 201 warning %q: %s", c.kind, q, r.code, r.header.Values("Warning"), want, r.body)
			}
		}
		r := e.do("POST", c.path+"?fieldValidation=Strict", body)
		if want := c.kind + ` in version "v1" cannot be handled as a ` + c.kind + `: strict decoding error: unknown field "` + c.unknown + `"`; r.code != http.StatusBadRequest || r.status(t).Message != want {
			t.Errorf("%s Strict: %d %s, want 400 %q", c.kind, r.code, r.body, want)
		}
		r = e.do("POST", c.path+"?fieldValidation=Strict", dup)
		if want := `strict decoding error: duplicate field "` + c.dupField + `"`; r.code != http.StatusBadRequest || !strings.HasSuffix(r.status(t).Message, want) {
			t.Errorf("%s Strict duplicate: %d %s, want 400 ending %q", c.kind, r.code, r.body, want)
		}
		for _, b := range [][]byte{body, dup} {
			if r := e.do("POST", c.path+"?fieldValidation=Ignore", b); r.code != http.StatusCreated || len(r.header.Values("Warning")) != 0 {
				t.Errorf("%s Ignore: %d Warning %q: %s", c.kind, r.code, r.header.Values("Warning"), r.body)
			}
		}
		for _, q := range []string{"?fieldValidation=Sometimes", "?dryRun=Sometimes"} {
			want := e.do("POST", "/api/v1/namespaces/default/configmaps"+q, []byte(`{"metadata":{"name":"x"}}`))
			if r := e.do("POST", c.path+q, body); r.code != want.code || r.status(t).Message != want.status(t).Message {
				t.Errorf("%s%s: %d %s, want the create path's %d %s", c.kind, q, r.code, r.body, want.code, want.body)
			}
		}
	}
}

// warned reports whether r carries a Warning header whose text holds msg.
func warned(r response, msg string) bool {
	for _, w := range r.header.Values("Warning") {
		if strings.Contains(w, strings.ReplaceAll(msg, `"`, `\"`)) {
			return true
		}
	}
	return false
}
