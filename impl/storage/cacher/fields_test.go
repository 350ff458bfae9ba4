package cacher

import (
	"testing"

	"k8s.io/apimachinery/pkg/fields"
)

// TestFieldListSelectsAsTheSet: every selector selects a field list
// exactly when it selects the set the list was made from.
func TestFieldListSelectsAsTheSet(t *testing.T) {
	sets := []fields.Set{
		nil,
		{},
		{"metadata.name": "web-0", "metadata.namespace": "default"},
		{"metadata.name": "web-1", "metadata.namespace": "default", "spec.nodeName": "node-1", "status.phase": "Running", "status.podIP": ""},
		{"metadata.name": "web-2", "metadata.namespace": "kube-system", "spec.nodeName": "", "status.phase": "Pending"},
	}
	selectors := []string{
		"", "metadata.name=web-0", "metadata.name!=web-0", "spec.nodeName=node-1", "spec.nodeName=",
		"spec.nodeName!=", "status.phase!=Running,metadata.namespace=default", "status.podIP=", "no.such.field=x", "no.such.field!=x",
	}
	for _, set := range sets {
		list := newFieldList(set)
		for k, v := range set {
			if !list.Has(k) || list.Get(k) != v {
				t.Errorf("%v: field %s = %q, %v in the list", set, k, list.Get(k), list.Has(k))
			}
		}
		if list.Has("no.such.field") || list.Get("no.such.field") != "" {
			t.Errorf("%v: the list has a field the set has not", set)
		}
		for _, s := range selectors {
			sel, err := fields.ParseSelector(s)
			if err != nil {
				t.Fatal(err)
			}
			if got, want := sel.Matches(list), sel.Matches(set); got != want {
				t.Errorf("%q on %v: list %v, set %v", s, set, got, want)
			}
		}
	}
}
