package openapi

import (
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/registry"
)

// TestRegistryResources builds the documents of the resources the API
// server really serves and checks every one is explainable and advertises
// fieldValidation on PATCH.
func TestRegistryResources(t *testing.T) {
	resources := registry.All()
	h, err := NewHandler(resources)
	if err != nil {
		t.Fatal(err)
	}
	server := httptest.NewServer(h)
	defer server.Close()
	disco, err := discovery.NewDiscoveryClientForConfig(&rest.Config{Host: server.URL})
	if err != nil {
		t.Fatal(err)
	}
	defer disco.RESTClient().(*rest.RESTClient).Client.CloseIdleConnections()
	docs, err := buildDocuments(resources)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resources {
		out := explain(t, disco, r.GroupVersionResource())
		if !strings.Contains(out, "KIND:       "+r.Kind) || !strings.Contains(out, "metadata\t<ObjectMeta>") {
			t.Errorf("explain %s:\n%s", r.GroupVersionResource(), out)
		}
		item := "/" + groupVersionPath(r.GroupVersion) + "/" + r.Name + "/{name}"
		if r.Namespaced {
			item = "/" + groupVersionPath(r.GroupVersion) + "/namespaces/{namespace}/" + r.Name + "/{name}"
		}
		p, ok := docs.swagger.Paths.Paths[item]
		if ok && !slices.Contains(r.Verbs, "patch") {
			// A read-only resource (componentstatuses): no PATCH.
			if p.Patch != nil || p.Get == nil {
				t.Errorf("%s: read-only, but GET %v, PATCH %v at %s", r.GroupVersionResource(), p.Get != nil, p.Patch != nil, item)
			}
			continue
		}
		if !ok || p.Patch == nil {
			t.Errorf("%s: no PATCH at %s", r.GroupVersionResource(), item)
			continue
		}
		found := false
		for _, param := range p.Patch.Parameters {
			found = found || param.Name == "fieldValidation"
		}
		if !found {
			t.Errorf("%s: PATCH lacks fieldValidation", r.GroupVersionResource())
		}
	}
}
