package registry

import (
	"context"
	"math/rand"
	"reflect"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
)

// structField returns obj's top-level struct field by name (Spec, Status),
// or an invalid value.
func structField(obj runtime.Object, name string) reflect.Value {
	return reflect.ValueOf(obj).Elem().FieldByName(name)
}

// For random pairs of objects of every kind with a status subresource:
// the main endpoint keeps the stored status, the status endpoint keeps the
// stored spec, and the main endpoint bumps generation exactly when the
// spec changed (for kinds with generation semantics).
func TestUpdateEndpointsSeparateSpecAndStatus(t *testing.T) {
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(2), scheme.Codecs).NilChance(0.3).NumElements(0, 2)
	ctx := context.Background()
	generational := map[string]bool{"pods": true, "deployments": true, "replicasets": true}
	for _, r := range testResources() {
		if r.Status == nil {
			continue
		}
		t.Run(r.Name, func(t *testing.T) {
			for i := 0; i < 40; i++ {
				old, obj := r.New(), r.New()
				f.Fill(old)
				f.Fill(obj)
				if i%2 == 0 {
					// Half the time only the status differs.
					obj = old.DeepCopyObject()
					f.Fill(structField(obj, "Status").Addr().Interface())
				}
				om, _ := meta.Accessor(old)
				om.SetGeneration(5)

				main := obj.DeepCopyObject()
				r.Strategy.PrepareForUpdate(ctx, main, old)
				if !apiequality.Semantic.DeepEqual(structField(main, "Status").Interface(), structField(old, "Status").Interface()) {
					t.Fatalf("main endpoint changed status")
				}
				if generational[r.Name] {
					mm, _ := meta.Accessor(main)
					specChanged := !apiequality.Semantic.DeepEqual(structField(main, "Spec").Interface(), structField(old, "Spec").Interface())
					if r.Name == "deployments" {
						specChanged = specChanged || !apiequality.Semantic.DeepEqual(mm.GetAnnotations(), om.GetAnnotations())
					}
					want := int64(5)
					if specChanged {
						want = 6
					}
					if mm.GetGeneration() != want {
						t.Fatalf("generation %d, want %d (spec changed: %v)", mm.GetGeneration(), want, specChanged)
					}
				}

				status := obj.DeepCopyObject()
				r.Status.PrepareForUpdate(ctx, status, old)
				if !apiequality.Semantic.DeepEqual(structField(status, "Spec").Interface(), structField(old, "Spec").Interface()) {
					t.Fatalf("status endpoint changed spec")
				}
			}
		})
	}
}
