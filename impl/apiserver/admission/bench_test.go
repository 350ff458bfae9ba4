package admission_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkPodCreate creates pods through a real API server on embedded
// etcd, with the default admission plugins (+NodeRestriction) and
// without any but NamespaceLifecycle: the difference is what admission
// costs a create.
func BenchmarkPodCreate(b *testing.B) {
	for _, withPlugins := range []bool{false, true} {
		b.Run(fmt.Sprintf("plugins=%v", withPlugins), func(b *testing.B) {
			cs, _, _ := startServerWith(b, withPlugins)
			ctx := context.Background()
			if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench"}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			if _, err := cs.CoreV1().ServiceAccounts("bench").Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default"}}, metav1.CreateOptions{}); err != nil {
				b.Fatal(err)
			}
			var n atomic.Int64
			b.SetParallelism(8)
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%d", n.Add(1))},
						Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "busybox"}}}}
					if _, err := cs.CoreV1().Pods("bench").Create(ctx, pod, metav1.CreateOptions{}); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
