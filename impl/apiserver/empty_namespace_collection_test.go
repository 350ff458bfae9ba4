package apiserver_test

import (
	"net/http"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
)

// TestEmptyNamespaceCollection: POST and DELETE on a collection under an
// empty namespace segment (/api/v1/namespaces//configmaps) are the
// namespaced create and deletecollection routes to kube-apiserver's router
// (its request-info parser gives them the empty namespace), not its 405.
// The create handler lets the request's empty namespace win over the
// body's (rest.EnsureObjectNamespaceMatchesRequestNamespace), admission
// runs, and the strategy's validation refuses the object (422
// metadata.namespace: Required value); a pod first meets the ServiceAccount
// plugin, which finds no service account in no namespace (403). The
// deletecollection lists every namespace's objects (the store's list key
// without a namespace) and deletes each by name in the request's empty
// namespace, whose key function refuses it: 400 "Namespace parameter
// required." when anything matches, nothing deleted; an empty list when
// nothing does.
func TestEmptyNamespaceCollection(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) {
		c.ServiceAccounts = &apiserver.ServiceAccountConfig{Issuers: []string{issuer}, SigningKey: saKey}
		c.Plugins = func(stores apiserver.StoreGetter) (apiserver.Plugins, error) {
			m, v, s, err := admission.NewPlugins([]string{"NamespaceLifecycle", "ServiceAccount"}, stores)
			return apiserver.Plugins{Mutators: m, Validators: v, Starters: s}, err
		}
	})
	if r := e.do("POST", "/api/v1/namespaces/default/configmaps", []byte(`{"metadata":{"name":"keep"}}`)); r.code != http.StatusCreated {
		t.Fatalf("create default/keep: %d %s", r.code, r.body)
	}
	const required = "metadata.namespace: Required value"
	for _, c := range []struct{ path, body string }{
		{"/api/v1/namespaces//configmaps", `{"metadata":{"name":"x"}}`},
		{"/api/v1/namespaces//configmaps", `{"metadata":{"name":"x","namespace":"default"}}`},
		{"/apis/apps/v1/namespaces//deployments", `{"metadata":{"name":"x"}}`},
	} {
		r := e.do("POST", c.path, []byte(c.body))
		if st := r.status(t); r.code != http.StatusUnprocessableEntity || st.Reason != metav1.StatusReasonInvalid || !strings.Contains(st.Message, required) {
			t.Errorf("POST %s %s: %d %s, want 422 %q", c.path, c.body, r.code, r.body, required)
		}
	}
	r := e.do("POST", "/api/v1/namespaces//pods", []byte(`{"metadata":{"name":"x"},"spec":{"containers":[{"name":"c","image":"i"}]}}`))
	if st := r.status(t); r.code != http.StatusForbidden || !strings.Contains(st.Message, `error looking up service account /default: serviceaccount "default" not found`) {
		t.Errorf("POST a pod under namespaces//: %d %s, want the ServiceAccount plugin's 403", r.code, r.body)
	}

	r = e.do("DELETE", "/api/v1/namespaces//configmaps", nil)
	if st := r.status(t); r.code != http.StatusBadRequest || st.Message != "Namespace parameter required." {
		t.Errorf("DELETE namespaces//configmaps: %d %s, want 400 Namespace parameter required.", r.code, r.body)
	}
	if r := e.do("GET", "/api/v1/namespaces/default/configmaps/keep", nil); r.code != http.StatusOK {
		t.Errorf("default/keep after the refused deletecollection: %d %s", r.code, r.body)
	}
	r = e.do("DELETE", "/api/v1/namespaces//configmaps?labelSelector=none%3Dnone", nil)
	if r.code != http.StatusOK || !strings.Contains(string(r.body), `"kind":"ConfigMapList"`) || !strings.Contains(string(r.body), `"items":[]`) {
		t.Errorf("DELETE namespaces//configmaps matching nothing: %d %s, want 200 and an empty ConfigMapList", r.code, r.body)
	}
}
