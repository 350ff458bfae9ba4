package kubelet

import (
	"fmt"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkStartPod is a new pod's first sync on a node: sandbox, the
// container started with its environment, the Running status written
// (through a plain fake clientset, whose own copies are included; the
// default field-managed one would be most of the figures). Every pod of
// the startup benchmarks goes through it once; its garbage is the
// kubelet's share of a pod's start.
func BenchmarkStartPod(b *testing.B) {
	h := newHarness(b, nil)
	h.client = newBenchClient()
	h.k = h.newKubelet(nil)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		b.StopTimer()
		p := h.create(h.pod(fmt.Sprintf("p%d", i), func(p *v1.Pod) {
			p.Spec.Containers[0].Env = []v1.EnvVar{{Name: "POD_IP", ValueFrom: &v1.EnvVarSource{FieldRef: &v1.ObjectFieldSelector{FieldPath: "status.podIP"}}}}
		}))
		i++
		b.StartTimer()
		if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		if got := h.get(p); got.Status.Phase != v1.PodRunning {
			b.Fatalf("pod %s: phase %s after its first sync", p.Name, got.Status.Phase)
		}
		// Gone from the API and cleaned up: the sandbox's IP is free again.
		if err := h.client.CoreV1().Pods(p.Namespace).Delete(h.ctx, p.Name, metav1.DeleteOptions{}); err != nil {
			b.Fatal(err)
		}
		h.k.HandlePodDeleted(p)
		if _, err := h.k.syncPod(h.ctx, p.UID); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
}
