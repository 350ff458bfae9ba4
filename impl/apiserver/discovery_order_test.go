package apiserver_test

import (
	"encoding/json"
	"slices"
	"testing"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
)

// TestDiscoveryListsResourcesSorted: each group version's discovery lists
// its resources and subresources sorted by name, as kube-apiserver's API
// installer registers a group version's storage paths in sorted order, so
// core/v1 begins with the legacy bindings resource, then
// componentstatuses, and a resource's subresources follow it; the
// aggregated discovery's resources are in the same order.
func TestDiscoveryListsResourcesSorted(t *testing.T) {
	e := newEnv(t, nil)
	_, lists, err := e.cs.Discovery().ServerGroupsAndResources()
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range lists {
		var names []string
		for _, r := range l.APIResources {
			names = append(names, r.Name)
		}
		if !slices.IsSorted(names) {
			t.Errorf("%s lists %v, not sorted", l.GroupVersion, names)
		}
		if l.GroupVersion == "v1" && (len(names) < 2 || names[0] != "bindings" || names[1] != "componentstatuses") {
			t.Errorf("v1 lists %v, want bindings and componentstatuses first", names)
		}
	}
	for _, path := range []string{"/api", "/apis"} {
		r := e.do("GET", path, nil, "Accept", "application/json;g=apidiscovery.k8s.io;v=v2;as=APIGroupDiscoveryList")
		var agg apidiscoveryv2.APIGroupDiscoveryList
		if err := json.Unmarshal(r.body, &agg); err != nil || r.code != 200 {
			t.Fatalf("GET %s aggregated: %d %v: %s", path, r.code, err, r.body)
		}
		for _, g := range agg.Items {
			for _, v := range g.Versions {
				var names []string
				for _, rd := range v.Resources {
					names = append(names, rd.Resource)
				}
				if !slices.IsSorted(names) {
					t.Errorf("aggregated %s/%s lists %v, not sorted", g.Name, v.Version, names)
				}
			}
		}
	}
}
