package apiserver_test

import (
	"encoding/json"
	"net/http"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestPathWithoutRouteIsRoutersNotFound: a path kube-apiserver registers
// no route for — a namespaced resource's object without a namespace, a
// cluster-scoped resource under one, segments past a subresource — is
// answered, whatever the method, as its router answers it: 404 NotFound
// "the server could not find the requested resource" with empty details,
// not a NotFound naming an empty or the path's object.
func TestPathWithoutRouteIsRoutersNotFound(t *testing.T) {
	e := newEnv(t, nil)
	paths := []string{
		"/api/v1/pods/seed",
		"/api/v1/pods/seed/status",
		"/apis/events.k8s.io/v1/events/seed",
		"/apis/apps/v1/deployments/x/scale",
		"/api/v1/namespaces/default/nodes",
		"/api/v1/namespaces/default/nodes/x",
		"/api/v1/namespaces/default/configmaps/x/status/extra",
	}
	want := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: http.StatusNotFound,
		Reason: metav1.StatusReasonNotFound, Message: "the server could not find the requested resource", Details: &metav1.StatusDetails{}}
	exp, _ := json.Marshal(want)
	for _, p := range paths {
		for _, m := range []string{"GET", "PUT", "DELETE", "TRACE"} {
			r := e.do(m, p, nil)
			var st metav1.Status
			if err := json.Unmarshal(r.body, &st); err != nil || r.code != http.StatusNotFound {
				t.Errorf("%s %s: %d %s, want 404", m, p, r.code, r.body)
				continue
			}
			if got, _ := json.Marshal(st); string(got) != string(exp) {
				t.Errorf("%s %s:\n got %s\nwant %s", m, p, got, exp)
			}
		}
	}
}
