package filters

import (
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

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

func TestRequestTimeoutSparesWatches(t *testing.T) {
	var deadlines []bool
	next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		_, ok := r.Context().Deadline()
		deadlines = append(deadlines, ok)
	})
	h := WithRequestInfo(WithRequestTimeout(next, time.Minute))
	for _, url := range []string{"/api/v1/namespaces/a/pods", "/api/v1/namespaces/a/pods?watch=true"} {
		h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", url, nil))
	}
	if len(deadlines) != 2 || !deadlines[0] || deadlines[1] {
		t.Fatalf("deadlines (list, watch): %v", deadlines)
	}
}
