package endpoints

import (
	"context"
	"sync"
	"testing"

	"github.com/kubeproof/kubeproof/impl/apiserver/codec"
	"github.com/kubeproof/kubeproof/impl/apiserver/resource"
	"github.com/kubeproof/kubeproof/impl/registry"
)

// fuzzDeployments is the deployments resource and the server's codecs,
// built once per fuzz process (servedHandler builds them per call, which
// made every input cost tens of milliseconds).
var fuzzDeployments = sync.OnceValues(func() (*resource.Resource, *codec.Codecs) {
	c, err := codec.New()
	if err != nil {
		panic(err)
	}
	for _, res := range registry.All() {
		if res.Name == "deployments" {
			return res, c
		}
	}
	panic("registry serves no deployments")
})

// fuzzHandler is servedHandler("deployments") on a fresh store with the
// shared codecs.
func fuzzHandler() (*Handler, *memStore) {
	res, c := fuzzDeployments()
	store := newMemStore(res.New)
	return NewHandler(res, store, "/"+res.Name, &Options{Codecs: c}), store
}

// storedState is the store's revision and every stored object's
// validation errors.
func storedState(store *memStore) (int64, []string) {
	res, _ := fuzzDeployments()
	store.mu.Lock()
	defer store.mu.Unlock()
	var invalid []string
	for key, obj := range store.objs {
		if errs := res.Strategy.Validate(context.Background(), obj); len(errs) > 0 {
			invalid = append(invalid, key+": "+errs.ToAggregate().Error())
		}
	}
	return store.rev, invalid
}

// FuzzApply sends arbitrary applied configurations to a stored Deployment
// and to a missing one: every answer is a success or a 4xx Status, never a
// panic or a 5xx; a refused apply writes nothing, and every stored object
// validates (an object validation rejects is never stored).
func FuzzApply(f *testing.F) {
	for _, seed := range []string{
		webConfig("2", "nginx"),
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web","labels":{"a":null}},"spec":{"template":{"spec":{"containers":[{"name":"c"},{"name":"c"}]}}}}`,
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  managedFields: 3\n",
		"apiVersion: apps/v1\nkind: Deployment\nmetadata: 7\n",
		`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":"x","selector":[]}}`,
		`{"apiVersion":"autoscaling/v1","kind":"Scale","metadata":{"name":"web"},"spec":{"replicas":3}}`,
		"null", "[]", "", "{", "- a", "a: &x [*x, *x]",
	} {
		f.Add(seed, false)
		f.Add(seed, true)
	}
	f.Fuzz(func(t *testing.T, body string, scale bool) {
		h, store := fuzzHandler()
		if r := do(h, "PATCH", deps+"/web?fieldManager=alice", applyType, webConfig("2", "nginx")); r.code != 201 {
			t.Fatalf("seeding: %d %s", r.code, r.body)
		}
		paths := []string{deps + "/web?fieldManager=bob", deps + "/missing?fieldManager=bob&force=true"}
		if scale {
			paths = []string{deps + "/web/scale?fieldManager=bob", deps + "/missing/scale?fieldManager=bob"}
		}
		for _, path := range paths {
			before, _ := storedState(store)
			r := do(h, "PATCH", path, applyType, body)
			if r.code >= 500 {
				t.Fatalf("%s: %d %s", path, r.code, r.body)
			}
			after, invalid := storedState(store)
			if r.code >= 400 {
				r.status(t)
				if after != before {
					t.Fatalf("%s: answered %d but wrote (revision %d -> %d)", path, r.code, before, after)
				}
			}
			if len(invalid) > 0 {
				t.Fatalf("%s: answered %d and the store holds invalid objects: %v", path, r.code, invalid)
			}
		}
	})
}
