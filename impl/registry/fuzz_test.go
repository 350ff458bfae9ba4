package registry

import (
	"context"
	"fmt"
	"math/rand"
	"testing"

	"k8s.io/apimachinery/pkg/api/apitesting/fuzzer"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metafuzzer "k8s.io/apimachinery/pkg/apis/meta/fuzzer"
	"k8s.io/client-go/kubernetes/scheme"
)

// For random objects of every kind: defaulting is idempotent, and no
// strategy function panics or fails to render a table row per object.
func TestStrategiesOnRandomObjects(t *testing.T) {
	const perKind = 40
	f := fuzzer.FuzzerFor(metafuzzer.Funcs, rand.NewSource(1), scheme.Codecs).NilChance(0.3).NumElements(0, 2)
	ctx := context.Background()
	for _, r := range testResources() {
		t.Run(r.GroupVersion.String()+"/"+r.Name, func(t *testing.T) {
			for i := 0; i < perKind; i++ {
				obj := r.New()
				f.Fill(obj)
				r.Strategy.Default(obj)
				again := obj.DeepCopyObject()
				r.Strategy.Default(again)
				if !apiequality.Semantic.DeepEqual(obj, again) {
					t.Fatalf("Default is not idempotent:\n%s", fmt.Sprint(obj))
				}
				old := obj.DeepCopyObject()
				f.Fill(old)
				r.Strategy.Default(old)
				_ = r.Strategy.Validate(ctx, obj)
				r.Strategy.PrepareForUpdate(ctx, obj, old)
				_ = r.Strategy.ValidateUpdate(ctx, obj, old)
				if r.Status != nil {
					r.Status.PrepareForUpdate(ctx, obj, old)
					_ = r.Status.ValidateUpdate(ctx, obj, old)
				}
				r.Strategy.PrepareForCreate(ctx, obj)
				if _, _, err := r.Strategy.GetAttrs(obj); err != nil {
					t.Fatalf("GetAttrs: %v", err)
				}
				table, err := r.Strategy.ConvertToTable(ctx, obj, nil)
				if err != nil || len(table.Rows) != 1 || len(table.Rows[0].Cells) != len(table.ColumnDefinitions) {
					t.Fatalf("ConvertToTable: %v %+v", err, table)
				}
				if r.Scale != nil {
					m, _ := meta.Accessor(obj)
					if s, err := r.Scale.Scale(obj); err == nil && s.Name != m.GetName() {
						t.Fatalf("scale name %q, object %q", s.Name, m.GetName())
					}
				}
				if r.GracefulDelete != nil {
					if g := r.GracefulDelete.GracePeriod(obj, nil); g < 0 {
						t.Fatalf("grace period %d", g)
					}
				}
			}
		})
	}
}
