package registry

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The per-request cost of the registry on the create path (defaults,
// prepare, validate, selectable fields), which the API server's create
// throughput target includes.
func BenchmarkCreatePath(b *testing.B) {
	ctx := context.Background()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cm", Namespace: "default", Labels: map[string]string{"app": "bench"}},
		Data: map[string]string{"payload": string(make([]byte, 1024))}}
	pod := newPod("web")
	pod.Labels = map[string]string{"app": "web"}
	for _, tc := range []struct {
		name     string
		resource string
		obj      runtimeObject
	}{{"configmap", "configmaps", cm}, {"pod", "pods", pod}} {
		r := testResourcesByName(b, tc.resource)
		b.Run(tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				obj := tc.obj.DeepCopyObject()
				r.Strategy.Default(obj)
				r.Strategy.PrepareForCreate(ctx, obj)
				if errs := r.Strategy.Validate(ctx, obj); len(errs) > 0 {
					b.Fatal(errs)
				}
				if _, _, err := r.Strategy.GetAttrs(obj); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func testResourcesByName(tb testing.TB, name string) resourceWithStrategy {
	for _, r := range testResources() {
		if r.GroupVersion.Group == "" && r.Name == name {
			return r
		}
	}
	tb.Fatalf("no core resource %s", name)
	return nil
}
