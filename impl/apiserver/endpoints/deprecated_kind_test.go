package endpoints

import (
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/registry"
)

// endpointsWarning is kube-apiserver's warning for a kind k8s.io/api marks
// deprecated (v1 Endpoints since 1.33, EndpointSlice its replacement).
const endpointsWarning = `299 - "v1 Endpoints is deprecated in v1.33+; use discovery.k8s.io/v1 EndpointSlice"`

// Every request to core/v1 Endpoints gets the deprecation warning, reads
// and failed requests too, as kube-apiserver adds it to each of the
// resource's routes; a kind that is not deprecated gets none.
func TestDeprecatedKindWarning(t *testing.T) {
	h, _ := servedHandler(t, "endpoints")
	create := do(h, "POST", "/api/v1/namespaces/default/endpoints", "application/json",
		`{"apiVersion":"v1","kind":"Endpoints","metadata":{"name":"a","namespace":"default"}}`)
	if create.code != 201 || create.warning != endpointsWarning {
		t.Errorf("create: %d, Warning %q, want 201 and %q (%s)", create.code, create.warning, endpointsWarning, create.body)
	}
	for _, path := range []string{"/api/v1/namespaces/default/endpoints/a", "/api/v1/namespaces/default/endpoints/missing"} {
		r := do(h, "GET", path, "", "")
		if r.warning != endpointsWarning {
			t.Errorf("GET %s: %d, Warning %q, want %q", path, r.code, r.warning, endpointsWarning)
		}
	}
	del := do(h, "DELETE", "/api/v1/namespaces/default/endpoints/a", "", "")
	if del.code != 200 || del.warning != endpointsWarning {
		t.Errorf("delete: %d, Warning %q, want 200 and %q", del.code, del.warning, endpointsWarning)
	}

	cm, _ := servedHandler(t, "configmaps")
	r := do(cm, "GET", "/api/v1/namespaces/default/configmaps/missing", "", "")
	if r.warning != "" {
		t.Errorf("configmaps GET: Warning %q, want none", r.warning)
	}
}

// A server reporting a version before the deprecation does not warn, as
// kube-apiserver compares the kind's deprecation release with its own.
func TestDeprecatedKindWarningFollowsServedVersion(t *testing.T) {
	c, err := codec.New()
	if err != nil {
		t.Fatal(err)
	}
	for _, res := range registry.All() {
		if res.Name != "endpoints" {
			continue
		}
		for _, tc := range []struct {
			major, minor int
			want         string
		}{{1, 32, ""}, {1, 33, endpointsWarning}, {1, 37, endpointsWarning}} {
			h := NewHandler(res, newMemStore(res.New), "/endpoints", &Options{Codecs: c, ServedVersion: [2]int{tc.major, tc.minor}})
			r := do(h, "GET", "/api/v1/namespaces/default/endpoints/missing", "", "")
			if r.warning != tc.want {
				t.Errorf("served v%d.%d: Warning %q, want %q", tc.major, tc.minor, r.warning, tc.want)
			}
		}
		return
	}
	t.Fatal("no endpoints resource")
}
