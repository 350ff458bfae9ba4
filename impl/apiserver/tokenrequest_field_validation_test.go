package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// TestTokenRequestFieldValidation: kube-apiserver serves
// serviceaccounts/token through its create handler (TokenREST is a named
// creater), so the request's CreateOptions are decoded and validated and
// fieldValidation (Warn by default) applies to the TokenRequest body as to
// any create: an unknown or duplicate field is a Warning header and the
// token is issued, under Strict the decoder's 400, under Ignore nothing;
// a bad fieldValidation or dryRun value is the create options' refusal.
func TestTokenRequestFieldValidation(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) {
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
	})
	if r := e.do("POST", "/api/v1/namespaces/default/serviceaccounts", []byte(`{"metadata":{"name":"builder"}}`)); r.code != http.StatusCreated {
		t.Fatalf("create service account: %d %s", r.code, r.body)
	}
	const path = "/api/v1/namespaces/default/serviceaccounts/builder/token"
	const head = `{"apiVersion":"authentication.k8s.io/v1","kind":"TokenRequest",`
	unknown := []byte(head + `"spec":{"expirationSeconds":3600,"foo":1}}`)
	dup := []byte(head + `"spec":{"expirationSeconds":3600,"expirationSeconds":7200}}`)
	for _, q := range []string{"", "?fieldValidation=Warn"} {
		r := e.do("POST", path+q, unknown)
		if want := `unknown field "spec.foo"`; r.code != http.StatusCreated || !warned(r, want) {
			t.Errorf("unknown field%s: %d Warning %q, want 201 warning %q: %s", q, r.code, r.header.Values("Warning"), want, r.body)
		}
		r = e.do("POST", path+q, dup)
		if want := `duplicate field "spec.expirationSeconds"`; r.code != http.StatusCreated || !warned(r, want) {
			t.Errorf("duplicate field%s: %d Warning %q, want 201 warning %q: %s", q, r.code, r.header.Values("Warning"), want, r.body)
		}
	}
	r := e.do("POST", path+"?fieldValidation=Strict", unknown)
	if want := `TokenRequest in version "v1" cannot be handled as a TokenRequest: strict decoding error: unknown field "spec.foo"`; r.code != http.StatusBadRequest || r.status(t).Message != want {
		t.Errorf("Strict: %d %s, want 400 %q", r.code, r.body, want)
	}
	r = e.do("POST", path+"?fieldValidation=Strict", dup)
	if want := `strict decoding error: duplicate field "spec.expirationSeconds"`; r.code != http.StatusBadRequest || !strings.HasSuffix(r.status(t).Message, want) {
		t.Errorf("Strict duplicate: %d %s, want 400 ending %q", r.code, r.body, want)
	}
	for _, b := range [][]byte{unknown, dup} {
		if r := e.do("POST", path+"?fieldValidation=Ignore", b); r.code != http.StatusCreated || len(r.header.Values("Warning")) != 0 {
			t.Errorf("Ignore: %d Warning %q: %s", r.code, r.header.Values("Warning"), r.body)
		}
	}
	for _, q := range []string{"?fieldValidation=Sometimes", "?dryRun=Sometimes"} {
		want := e.do("POST", "/api/v1/namespaces/default/configmaps"+q, []byte(`{"metadata":{"name":"x"}}`))
		if r := e.do("POST", path+q, unknown); r.code != want.code || r.status(t).Message != want.status(t).Message {
			t.Errorf("%s: %d %s, want the create path's %d %s", q, r.code, r.body, want.code, want.body)
		}
	}
}
