package filters

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/request"
)

// allowList allows "resource/name" impersonation targets it lists.
type allowList map[string]bool

func (a allowList) Authorize(_ context.Context, at auth.Attributes) (auth.Decision, string, error) {
	i := at.Info
	key := i.Resource + "/" + i.Name
	if i.Subresource != "" {
		key = i.Resource + "/" + i.Subresource + "/" + i.Name
	}
	if i.Namespace != "" {
		key = i.Namespace + ":" + key
	}
	if i.Verb == "impersonate" && a[key] {
		return auth.DecisionAllow, "", nil
	}
	return auth.DecisionNoOpinion, "", nil
}

func TestImpersonation(t *testing.T) {
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	allowed := allowList{"users/bob": true, "groups/devs": true, "uids/1234": true,
		"userextras/scopes/view": true, "ns:serviceaccounts/builder": true, "users/system:anonymous": true}
	var got *request.User
	var gotHeaders http.Header
	h := WithImpersonation(http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
		got, gotHeaders = request.UserFrom(r.Context()), r.Header
	}), c, allowed, log)
	alice := &request.User{Name: "alice", Groups: []string{"system:authenticated"}}
	cases := []struct {
		name    string
		headers [][2]string
		code    int
		want    *request.User
		msg     string
	}{
		{name: "none", code: 200, want: alice},
		{name: "user", headers: [][2]string{{"Impersonate-User", "bob"}}, code: 200,
			want: &request.User{Name: "bob", Groups: []string{"system:authenticated"}}},
		{name: "user, group, uid, extra", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Group", "devs"},
			{"Impersonate-Uid", "1234"}, {"Impersonate-Extra-Scopes", "view"}}, code: 200,
			want: &request.User{Name: "bob", UID: "1234", Groups: []string{"devs", "system:authenticated"}, Extra: map[string][]string{"scopes": {"view"}}}},
		{name: "service account gets its groups", headers: [][2]string{{"Impersonate-User", "system:serviceaccount:ns:builder"}}, code: 200,
			want: &request.User{Name: "system:serviceaccount:ns:builder", Groups: []string{"system:serviceaccounts", "system:serviceaccounts:ns", "system:authenticated"}}},
		{name: "anonymous", headers: [][2]string{{"Impersonate-User", "system:anonymous"}}, code: 200,
			want: &request.User{Name: "system:anonymous", Groups: []string{"system:unauthenticated"}}},
		{name: "user denied", headers: [][2]string{{"Impersonate-User", "root"}}, code: 403,
			msg: `users "root" is forbidden: User "alice" cannot impersonate resource "users" in API group "" at the cluster scope`},
		{name: "group denied", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Group", "system:masters"}}, code: 403,
			msg: `groups "system:masters" is forbidden: User "alice" cannot impersonate resource "groups" in API group "" at the cluster scope`},
		{name: "uid denied", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Uid", "0"}}, code: 403,
			msg: `uids.authentication.k8s.io "0" is forbidden: User "alice" cannot impersonate resource "uids" in API group "authentication.k8s.io" at the cluster scope`},
		{name: "extra denied", headers: [][2]string{{"Impersonate-User", "bob"}, {"Impersonate-Extra-Scopes", "admin"}}, code: 403,
			msg: `cannot impersonate resource "userextras/scopes" in API group "authentication.k8s.io"`},
		{name: "service account in another namespace", headers: [][2]string{{"Impersonate-User", "system:serviceaccount:other:builder"}}, code: 403,
			msg: `serviceaccounts "builder" is forbidden: User "alice" cannot impersonate resource "serviceaccounts" in API group "" in the namespace "other"`},
		{name: "group without user", headers: [][2]string{{"Impersonate-Group", "devs"}}, code: 400,
			msg: "requested groups without impersonating a user"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, gotHeaders = nil, nil
			r := httptest.NewRequest("GET", "/api/v1/pods", nil)
			for _, h := range tc.headers {
				r.Header.Add(h[0], h[1])
			}
			r = r.WithContext(request.WithUser(r.Context(), alice))
			rw := httptest.NewRecorder()
			h.ServeHTTP(rw, r)
			if rw.Code != tc.code {
				t.Fatalf("code %d, want %d: %s", rw.Code, tc.code, rw.Body.String())
			}
			if tc.code != 200 {
				var st metav1.Status
				if err := json.Unmarshal(rw.Body.Bytes(), &st); err != nil || !strings.Contains(st.Message, tc.msg) {
					t.Fatalf("status %q (%v), want it to contain %q", st.Message, err, tc.msg)
				}
				if got != nil {
					t.Fatal("request reached the handler")
				}
				return
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Fatalf("user %+v, want %+v", got, tc.want)
			}
			for k := range gotHeaders {
				if strings.HasPrefix(k, "Impersonate-") {
					t.Fatalf("header %s left on the request", k)
				}
			}
		})
	}
}
