package apiserver_test

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"encoding/json"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// TestUnservedMethodIsRoutersAnswer: a method no route of a resource path
// serves — one outside the six (OPTIONS, TRACE, CONNECT, anything), a
// verb the resource or subresource does not have, a POST naming an
// object, a PUT or PATCH of a collection, a create or deletecollection of
// a namespaced resource across namespaces — is answered as kube-apiserver's router answers it: 405
// MethodNotAllowed with the generic message and empty details, not a
// "<verb> is not supported" naming the resource. (CONNECT is not sent
// here: over HTTP/2 a client's CONNECT carries no path; fuzz's FuzzHTTP
// sends it in-process.)
func TestUnservedMethodIsRoutersAnswer(t *testing.T) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, func(c *apiserver.Config) {
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{"https://issuer.example"}, SigningKey: key}
	})
	const pods = "/api/v1/namespaces/default/pods"
	cases := []struct{ method, path string }{
		{"OPTIONS", pods},
		{"OPTIONS", pods + "/a"},
		{"TRACE", pods + "/a"},
		{"FOO", "/apis/apps/v1/namespaces/default/deployments"},
		{"OPTIONS", "/api/v1/nodes/a/status"},
		{"TRACE", "/apis/apps/v1/namespaces/default/deployments/a/scale"},
		{"POST", pods + "/a"},
		{"DELETE", pods + "/a/status"},
		{"GET", pods + "/a/binding"},
		{"GET", "/api/v1/namespaces/default/finalize"},
		{"GET", "/api/v1/namespaces/default/serviceaccounts/default/token"},
		{"PUT", pods + "/a/log"},
		{"DELETE", pods + "/a/exec"},
		{"GET", pods + "/a/eviction"},
		{"PUT", pods},
		{"PATCH", "/api/v1/namespaces"},
		{"POST", "/api/v1/configmaps"},
		{"DELETE", "/api/v1/configmaps"},
		{"PUT", "/apis/apps/v1/deployments"},
		{"TRACE", pods + "/a/eviction"},
		{"GET", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews"},
		{"OPTIONS", "/apis/authentication.k8s.io/v1/tokenreviews"},
	}
	for _, c := range cases {
		r := e.do(c.method, c.path, nil)
		if r.code != http.StatusMethodNotAllowed {
			t.Errorf("%s %s: %d, want 405: %s", c.method, c.path, r.code, r.body)
			continue
		}
		var st metav1.Status
		if err := json.Unmarshal(r.body, &st); err != nil || st.Kind != "Status" {
			t.Errorf("%s %s: not a Status: %s", c.method, c.path, r.body)
			continue
		}
		want := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: http.StatusMethodNotAllowed,
			Reason: metav1.StatusReasonMethodNotAllowed, Message: "the server does not allow this method on the requested resource", Details: &metav1.StatusDetails{}}
		got, _ := json.Marshal(st)
		exp, _ := json.Marshal(want)
		if string(got) != string(exp) {
			t.Errorf("%s %s:\n got %s\nwant %s", c.method, c.path, got, exp)
		}
	}
}
