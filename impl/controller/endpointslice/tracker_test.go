package endpointslice

import (
	"testing"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTracker(t *testing.T) {
	slice := func(name string, gen int64) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: name, Generation: gen}}
	}
	tr := NewTracker()
	tr.Wrote("ns/web", slice("web-a", 2))
	if !tr.Expected("ns/web", slice("web-a", 2)) || tr.Expected("ns/web", slice("web-a", 3)) || tr.Expected("ns/db", slice("web-a", 2)) {
		t.Error("Expected: only the written generation of the key's slice is the controller's own")
	}
	// The cache has not seen the write (absent, or an older generation).
	if !tr.Stale("ns/web", nil) || !tr.Stale("ns/web", []*discoveryv1.EndpointSlice{slice("web-a", 1)}) {
		t.Error("a cache without the write is not stale")
	}
	if tr.Stale("ns/web", []*discoveryv1.EndpointSlice{slice("web-a", 2)}) || tr.Stale("ns/web", []*discoveryv1.EndpointSlice{slice("web-a", 3)}) {
		t.Error("a cache with the write (or a newer one) is stale")
	}
	// A deletion: stale while listed; its event is the controller's own.
	tr.Deleted("ns/web", slice("web-a", 2))
	if !tr.Stale("ns/web", []*discoveryv1.EndpointSlice{slice("web-a", 2)}) || tr.Stale("ns/web", nil) {
		t.Error("deleted slice: stale while listed, not once gone")
	}
	tr.Deleted("ns/web", slice("web-b", 1))
	if !tr.Gone("ns/web", slice("web-b", 1)) || tr.Gone("ns/web", slice("web-b", 1)) {
		t.Error("Gone: true once for the controller's own deletion")
	}
	// A slice deleted by someone else is forgotten: no stale state forever.
	tr.Wrote("ns/web", slice("web-c", 1))
	if tr.Gone("ns/web", slice("web-c", 1)) || tr.Stale("ns/web", nil) {
		t.Error("a slice deleted by someone else left the tracker stale")
	}
	tr.Wrote("ns/web", slice("web-d", 1))
	tr.Forget("ns/web")
	if tr.Stale("ns/web", nil) {
		t.Error("Forget kept state")
	}
}
