package apiserver_test

import (
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
)

// Whatever authorizer the server is configured with, system:masters is
// allowed first, as kube-apiserver's generic server asks a
// privileged-group authorizer before the configured ones. Under
// AlwaysDeny the server still starts (its own loopback writes at start
// are requests of system:masters), a system:masters user is allowed and
// anyone else refused by AlwaysDeny.
func TestConfiguredAuthorizerAfterSystemMasters(t *testing.T) {
	if testing.Short() {
		t.Skip("API server on embedded etcd: skipped with -short")
	}
	for _, tc := range []struct {
		name string
		cfg  func(*apiserver.Config)
	}{
		{"Config.Authorizer", func(c *apiserver.Config) { c.Authorizer = auth.AlwaysDeny{} }},
		{"Plugins.Authorizer", func(c *apiserver.Config) {
			c.Plugins = func(apiserver.StoreGetter) (apiserver.Plugins, error) {
				return apiserver.Plugins{Authorizer: auth.AuthorizerUnion{auth.AlwaysDeny{}}}, nil
			}
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, tc.cfg) // fails when the server never becomes ready
			if r := e.do("GET", "/api/v1/namespaces/kube-system", nil); r.code != http.StatusOK {
				t.Errorf("system:masters get namespace kube-system: %d %s", r.code, r.body)
			}
			// alice, impersonated by admin (system:masters may).
			r := e.do("GET", "/api/v1/namespaces/default/configmaps", nil, "Impersonate-User", "alice")
			expectStatus(t, r, http.StatusForbidden, metav1.StatusReasonForbidden,
				`configmaps is forbidden: User "alice" cannot list resource "configmaps" in API group "" in the namespace "default": Everything is forbidden.`)
		})
	}
}
