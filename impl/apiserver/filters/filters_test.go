package filters

import (
	"context"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/apiserver/auth"
	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
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

// TestPanicRecovery: a panic before the response began becomes one 500
// Status; a panic after it began aborts the stream (http.ErrAbortHandler)
// instead of gluing a Status to the partial answer.
func TestPanicRecovery(t *testing.T) {
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))

	early := WithPanicRecovery(http.HandlerFunc(func(http.ResponseWriter, *http.Request) { panic("boom") }), c, log)
	rw := httptest.NewRecorder()
	early.ServeHTTP(rw, httptest.NewRequest("GET", "/api/v1/pods", nil))
	if rw.Code != http.StatusInternalServerError || !strings.Contains(rw.Body.String(), `"kind":"Status"`) {
		t.Fatalf("early panic: %d %s", rw.Code, rw.Body.String())
	}

	late := WithPanicRecovery(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusNotFound)
		_, _ = w.Write([]byte(`{"kind":"Status"}`))
		panic("late")
	}), c, log)
	rw = httptest.NewRecorder()
	func() {
		defer func() {
			if v := recover(); v != http.ErrAbortHandler {
				t.Fatalf("late panic re-raised %v, want http.ErrAbortHandler", v)
			}
		}()
		late.ServeHTTP(rw, httptest.NewRequest("GET", "/api/v1/pods", nil))
	}()
	if strings.Count(rw.Body.String(), "Status") != 1 {
		t.Fatalf("a second body was written: %s", rw.Body.String())
	}
}

// Under WithRequestInfo the timeout reaches the handler without another
// copy of the request: the handler gets the request WithRequestInfo made,
// with the deadline.
func TestRequestTimeoutKeepsTheRequest(t *testing.T) {
	var infoReq, got *http.Request
	next := http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) { got = r })
	timed := WithRequestTimeout(next, time.Minute)
	h := WithRequestInfo(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		infoReq = r
		timed.ServeHTTP(w, r)
	}))
	h.ServeHTTP(httptest.NewRecorder(), httptest.NewRequest("GET", "/api/v1/namespaces/a/pods", nil))
	if got == nil || got != infoReq {
		t.Fatal("the timeout copied the request")
	}
	if _, ok := got.Context().Deadline(); !ok {
		t.Fatal("no deadline")
	}
	if request.InfoFrom(got.Context()) == nil {
		t.Fatal("no request info")
	}
}

// nameRecorder refuses everything with no reason and records the name it
// was asked about.
type nameRecorder struct{ name *string }

func (n nameRecorder) Authorize(_ context.Context, a auth.Attributes) (auth.Decision, string, error) {
	*n.name = a.Info.Name
	return auth.DecisionNoOpinion, "", nil
}

// A list by a metadata.name field selector is authorized and refused as a
// request for that name, as kube-apiserver's.
func TestAuthorizationNamesSelectedList(t *testing.T) {
	var asked string
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	h := WithAuthorization(http.NotFoundHandler(), c, nameRecorder{&asked}, slog.New(slog.NewTextHandler(io.Discard, nil)))
	r := httptest.NewRequest("GET", "/api/v1/namespaces/ns/secrets?fieldSelector=metadata.name%3Ds", nil)
	ctx := request.NewContext(r.Context(), r)
	request.SetUser(ctx, &request.User{Name: "bob"})
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, r.WithContext(ctx))
	if asked != "s" {
		t.Errorf("the authorizer was asked about %q, want s", asked)
	}
	want := `secrets \"s\" is forbidden: User \"bob\" cannot list resource \"secrets\" in API group \"\" in the namespace \"ns\"`
	if rec.Code != 403 || !strings.Contains(rec.Body.String(), want) || !strings.Contains(rec.Body.String(), `"name":"s"`) {
		t.Errorf("answer %d %s, want 403 naming s", rec.Code, rec.Body)
	}
}
