package flowcontrol

import (
	"errors"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

func TestObjectCounts(t *testing.T) {
	now := time.Unix(1000, 0)
	c := NewObjectCounts(func() time.Time { return now })
	if _, err := c.Get("pods"); !errors.Is(err, ErrCountUnknown) {
		t.Fatalf("no count yet: %v", err)
	}
	pods := storage.Stats{ObjectCount: 42, EstimatedAverageObjectSizeBytes: 3000}
	c.Set("pods", pods)
	c.Set("deployments.apps", storage.Stats{ObjectCount: 7})
	if st, err := c.Get("pods"); st != pods || err != nil {
		t.Fatalf("pods: %+v, %v", st, err)
	}
	// A failed count keeps the last stats, which go stale.
	now = now.Add(2 * time.Minute)
	c.Set("pods", storage.Stats{ObjectCount: -1})
	deployments := storage.Stats{ObjectCount: 8, EstimatedAverageObjectSizeBytes: 12000}
	c.Set("deployments.apps", deployments)
	if st, err := c.Get("pods"); st != pods || err != nil {
		t.Fatalf("pods after a failed count: %+v, %v", st, err)
	}
	now = now.Add(ObjectCountStaleAfter - 2*time.Minute)
	if st, err := c.Get("pods"); st != pods || err != nil {
		t.Fatalf("pods at exactly the stale limit: %+v, %v", st, err)
	}
	now = now.Add(time.Second)
	if st, err := c.Get("pods"); st != pods || !errors.Is(err, ErrCountStale) {
		t.Fatalf("pods past the stale limit: %+v, %v", st, err)
	}
	if st, err := c.Get("deployments.apps"); st != deployments || err != nil {
		t.Fatalf("deployments: %+v, %v", st, err)
	}
	// Pruning drops only the counts not set for an hour.
	now = time.Unix(1000, 0).Add(ObjectCountPruneAfter)
	c.Prune()
	if _, err := c.Get("pods"); !errors.Is(err, ErrCountUnknown) {
		t.Errorf("pods not set for an hour survived the prune: %v", err)
	}
	if _, err := c.Get("deployments.apps"); !errors.Is(err, ErrCountStale) {
		t.Errorf("deployments set 58 minutes ago: %v", err)
	}
}

func TestWatchTracker(t *testing.T) {
	tr := NewWatchTracker()
	watch := func(group, resource, ns, name, fieldSelector string) func() {
		return tr.Register(&request.Info{IsResourceRequest: true, Verb: "watch", APIGroup: group, Resource: resource,
			Namespace: ns, Name: name, FieldSelector: fieldSelector})
	}
	var forget []func()
	for range 3 {
		forget = append(forget, watch("", "configmaps", "", "", "")) // every configmap
	}
	forget = append(forget,
		watch("", "configmaps", "a", "", ""),                                                      // namespace a
		watch("", "configmaps", "a", "", "metadata.name=cm"),                                      // one by field selector
		watch("", "configmaps", "b", "", ""),                                                      // namespace b
		watch("apps", "configmaps", "", "", ""),                                                   // another group's resource
		watch("", "pods", "", "", "spec.nodeName=n1"),                                             // indexed: not counted
		watch("", "pods", "", "", "spec.nodeName="),                                               // unscheduled pods: counted
		watch("", "pods", "", "", "status.phase!=Succeeded"),                                      // every node: counted
		tr.Register(&request.Info{IsResourceRequest: true, Verb: "list", Resource: "configmaps"}), // not a watch
	)
	write := func(verb, group, resource, ns, name string) int {
		return tr.Interested(&request.Info{IsResourceRequest: true, Verb: verb, APIGroup: group, Resource: resource, Namespace: ns, Name: name})
	}
	for _, tc := range []struct {
		verb, group, resource, ns, name string
		want                            int
	}{
		{"create", "", "configmaps", "a", "", 4},   // all + namespace a (a create names nothing)
		{"update", "", "configmaps", "a", "cm", 5}, // all + namespace a + cm by name
		{"delete", "", "configmaps", "b", "cm", 4},
		{"patch", "", "configmaps", "c", "x", 3},
		{"create", "apps", "configmaps", "a", "", 1},
		{"update", "", "pods", "a", "p", 2},
		{"get", "", "configmaps", "a", "cm", 0}, // reads notify nobody
		{"list", "", "configmaps", "", "", 0},
	} {
		if got := write(tc.verb, tc.group, tc.resource, tc.ns, tc.name); got != tc.want {
			t.Errorf("%s %s/%s %s/%s: %d interested watches, want %d", tc.verb, tc.group, tc.resource, tc.ns, tc.name, got, tc.want)
		}
	}
	for _, f := range forget {
		f()
		f() // a second call changes nothing
	}
	if got := write("update", "", "configmaps", "a", "cm"); got != 0 {
		t.Errorf("after every watch ended: %d interested", got)
	}
	if len(tr.count) != 0 {
		t.Errorf("entries left: %v", tr.count)
	}
}
