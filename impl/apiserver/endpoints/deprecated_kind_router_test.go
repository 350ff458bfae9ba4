package endpoints

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
)

// kube-apiserver adds a deprecated kind's warning in the handlers of the
// resource's routes, so a request its router answers (a path or method
// with no route: 404 "the server could not find the requested resource"
// or 405) gets none, while a request a route serves does, failed or not.
func TestDeprecatedKindWarningNotOnRouterAnswers(t *testing.T) {
	h, _ := servedHandler(t, "endpoints")
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"PUT", "/api/v1/namespaces/default/endpoints", 405},   // update of a collection
		{"PATCH", "/api/v1/namespaces/default/endpoints", 405}, // patch of a collection
		{"POST", "/api/v1/endpoints", 405},                     // create across namespaces
		{"DELETE", "/api/v1/endpoints", 405},                   // deletecollection across namespaces
		{"OPTIONS", "/api/v1/namespaces/default/endpoints/a", 405},
		{"POST", "/api/v1/namespaces/default/endpoints/a", 405}, // a POST naming an object
		{"GET", "/api/v1/endpoints/a", 404},                     // a namespaced object outside a namespace
		{"GET", "/api/v1/namespaces/default/endpoints/a/status", 404},
		{"PUT", "/api/v1/namespaces/default/endpoints/a/status", 404},
		{"GET", "/api/v1/namespaces/default/endpoints/a/status/x", 404},
	} {
		r := do(h, tc.method, tc.path, "application/json", `{}`)
		if r.code != tc.code || len(r.warnings) != 0 {
			t.Errorf("%s %s: %d, Warning %q, want %d and none", tc.method, tc.path, r.code, r.warnings, tc.code)
		}
	}
	// Served routes keep it, failures included.
	for _, tc := range []struct {
		method, path string
		code         int
	}{
		{"GET", "/api/v1/namespaces/default/endpoints/missing", 404},
		{"PUT", "/api/v1/namespaces/default/endpoints/missing", 400},
		{"DELETE", "/api/v1/namespaces/default/endpoints/missing", 404},
	} {
		r := do(h, tc.method, tc.path, "application/json", `{}`)
		if r.code != tc.code || len(r.warnings) != 1 || r.warnings[0] != endpointsWarning {
			t.Errorf("%s %s: %d, Warning %q, want %d and %q", tc.method, tc.path, r.code, r.warnings, tc.code, endpointsWarning)
		}
	}
}

// removedEndpoints is v1 Endpoints as if it named a removal release.
type removedEndpoints struct{ corev1.Endpoints }

func (*removedEndpoints) APILifecycleRemoved() (major, minor int) { return 1, 40 }

// A kind naming the release it goes away in has it in the warning
// (", unavailable in v1.40+") and in the k8s.io/removed-release audit
// annotation's value ("1.40"), as kube-apiserver's deprecation helpers.
func TestDeprecatedKindRemovedRelease(t *testing.T) {
	gvk := corev1.SchemeGroupVersion.WithKind("Endpoints")
	want := "v1 Endpoints is deprecated in v1.33+, unavailable in v1.40+; use discovery.k8s.io/v1 EndpointSlice"
	if got := deprecationWarning(gvk, &removedEndpoints{}, 1, 37); got != want {
		t.Errorf("warning %q, want %q", got, want)
	}
	if got := deprecatedRemovedRelease(&removedEndpoints{}); got != "1.40" {
		t.Errorf("removed release %q, want 1.40", got)
	}
	if got := deprecatedRemovedRelease(&corev1.Endpoints{}); got != "" {
		t.Errorf("v1 Endpoints' removed release %q, want none", got)
	}
}
