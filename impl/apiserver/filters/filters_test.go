package filters

import (
	"net/http/httptest"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

func TestForbiddenMessages(t *testing.T) {
	u := &request.User{Name: "bob"}
	cases := []struct {
		method, url, reason, want string
	}{
		{"GET", "/api/v1/namespaces/ns/pods/p", "", `pods "p" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "ns"`},
		{"GET", "/apis/apps/v1/deployments", "", `deployments.apps is forbidden: User "bob" cannot list resource "deployments" in API group "apps" at the cluster scope`},
		{"PUT", "/api/v1/namespaces/ns/pods/p/status", "no RBAC policy matched", `pods "p" is forbidden: User "bob" cannot update resource "pods/status" in API group "" in the namespace "ns": no RBAC policy matched`},
		{"GET", "/metrics", "", `forbidden: User "bob" cannot get path "/metrics"`},
	}
	for _, c := range cases {
		info := request.Parse(httptest.NewRequest(c.method, c.url, nil))
		got := forbidden(auth.Attributes{User: u, Info: info}, c.reason)
		if got.ErrStatus.Message != c.want || got.ErrStatus.Code != 403 {
			t.Errorf("%s %s:\n got %q\nwant %q", c.method, c.url, got.ErrStatus.Message, c.want)
		}
	}
}
