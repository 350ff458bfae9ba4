package apiserver_test

import (
	"net/http"
	"testing"
)

// TestNoRouteActsAcrossNamespaces is a table over paths × methods of a
// namespaced resource addressed without a namespace. kube-apiserver
// registers, outside /namespaces/<ns>/, only the list and watch of a
// listable namespaced resource's collection: its router answers 405 to
// any other method there and 404 to any object or subresource path (every
// handler's: eviction, binding, log/exec/attach/portforward, pods and
// services proxy, token requests, status, scale, resize, ephemeral
// containers), and to a namespaced review's collection, which has no
// list. No request may read or change either namespace's objects.
func TestNoRouteActsAcrossNamespaces(t *testing.T) {
	e := newEnv(t, nil)
	objects := []string{"configmaps/x", "pods/p", "serviceaccounts/sa", "services/s"}
	for _, ns := range []string{"a", "b"} {
		for _, c := range []struct{ coll, body string }{
			{"/api/v1/namespaces", `{"metadata":{"name":"` + ns + `"}}`},
			{"/api/v1/namespaces/" + ns + "/configmaps", `{"metadata":{"name":"x"}}`},
			{"/api/v1/namespaces/" + ns + "/serviceaccounts", `{"metadata":{"name":"sa"}}`},
			{"/api/v1/namespaces/" + ns + "/services", `{"metadata":{"name":"s"},"spec":{"ports":[{"port":80}]}}`},
			{"/api/v1/namespaces/" + ns + "/pods", `{"metadata":{"name":"p"},"spec":{"containers":[{"name":"c","image":"i"}]}}`},
		} {
			if r := e.do("POST", c.coll, []byte(c.body)); r.code != http.StatusCreated {
				t.Fatalf("POST %s: %d %s", c.coll, r.code, r.body)
			}
		}
	}
	before := map[string]string{}
	for _, ns := range []string{"a", "b"} {
		for _, o := range objects {
			before[ns+"/"+o] = string(e.do("GET", "/api/v1/namespaces/"+ns+"/"+o, nil).body)
		}
	}

	methods := []string{"GET", "POST", "PUT", "PATCH", "DELETE"}
	// Object and subresource paths without a namespace: 404 whatever the
	// method.
	for _, p := range []string{
		"/api/v1/configmaps/x",
		"/api/v1/pods/p",
		"/api/v1/pods/p/status",
		"/api/v1/pods/p/eviction",
		"/api/v1/pods/p/binding",
		"/api/v1/pods/p/log",
		"/api/v1/pods/p/exec",
		"/api/v1/pods/p/attach",
		"/api/v1/pods/p/portforward",
		"/api/v1/pods/p/ephemeralcontainers",
		"/api/v1/pods/p/resize",
		"/api/v1/pods/p/proxy/",
		"/api/v1/services/s/proxy/",
		"/api/v1/serviceaccounts/sa/token",
		"/apis/apps/v1/deployments/d/scale",
		"/apis/authorization.k8s.io/v1/localsubjectaccessreviews",
		"/api/v1/namespaces/a/namespaces/b",
	} {
		for _, m := range methods {
			checkRouterAnswer(t, e, m, p, http.StatusNotFound)
		}
	}
	// Collections across namespaces: list (and watch) only.
	for _, p := range []string{
		"/api/v1/configmaps",
		"/api/v1/pods",
		"/api/v1/serviceaccounts",
		"/apis/apps/v1/deployments",
		"/apis/events.k8s.io/v1/events",
		"/apis/coordination.k8s.io/v1/leases",
	} {
		if r := e.do("GET", p, nil); r.code != http.StatusOK {
			t.Errorf("GET %s: %d %s, want the list", p, r.code, r.body)
		}
		for _, m := range methods[1:] {
			checkRouterAnswer(t, e, m, p, http.StatusMethodNotAllowed)
		}
	}

	for _, ns := range []string{"a", "b"} {
		for _, o := range objects {
			if got := string(e.do("GET", "/api/v1/namespaces/"+ns+"/"+o, nil).body); got != before[ns+"/"+o] {
				t.Errorf("%s/%s changed:\nbefore %s\nafter  %s", ns, o, before[ns+"/"+o], got)
			}
		}
	}
}

// checkRouterAnswer sends m p as admin (a body for the methods that take
// one) and checks it gets kube-apiserver's router's 404 or 405.
func checkRouterAnswer(t *testing.T, e *env, m, p string, code int) {
	t.Helper()
	var body []byte
	var hdr []string
	switch m {
	case "POST", "PUT":
		body = []byte(`{"apiVersion":"policy/v1","kind":"Eviction","metadata":{"name":"p","namespace":"a"}}`)
	case "PATCH":
		body, hdr = []byte(`{"metadata":{"labels":{"x":"y"}}}`), []string{"Content-Type", "application/merge-patch+json"}
	}
	r := e.do(m, p, body, hdr...)
	want := map[int]string{http.StatusNotFound: "the server could not find the requested resource",
		http.StatusMethodNotAllowed: "the server does not allow this method on the requested resource"}[code]
	if r.code != code {
		t.Errorf("%s %s: %d %s, want %d %q", m, p, r.code, r.body, code, want)
		return
	}
	if st := r.status(t); st.Message != want {
		t.Errorf("%s %s: %q, want %q", m, p, st.Message, want)
	}
}
