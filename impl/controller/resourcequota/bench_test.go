package resourcequota_test

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/controller/resourcequota"
)

// BenchmarkUsage10000Pods: one recount of a compute quota over a
// namespace of 10,000 pods (what a sync costs besides its two API calls).
func BenchmarkUsage10000Pods(b *testing.B) {
	q := quota(map[string]string{"pods": "20000", "count/pods": "20000", "requests.cpu": "4000", "requests.memory": "4Ti", "limits.cpu": "8000", "limits.memory": "8Ti"})
	pods := make([]runtime.Object, 10000)
	for i := range pods {
		pods[i] = pod(fmt.Sprintf("p%d", i), requests(map[string]string{"cpu": "100m", "memory": "128Mi"}), limits(map[string]string{"cpu": "200m", "memory": "256Mi"}))
	}
	obs := resourcequota.Observed{Objects: map[schema.GroupResource][]runtime.Object{podResource: pods}, Now: now}
	b.ReportAllocs()
	for b.Loop() {
		resourcequota.Usage(q, obs)
	}
}
