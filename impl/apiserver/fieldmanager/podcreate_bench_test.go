package fieldmanager

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkCreatePodFields is the managed-fields work of creating the
// startup benchmark's pod as the API server stores it (testdata
// pod-running.json less status and what the server sets): each pod's
// kube-api-access volume has its own random name, which is part of the
// pod's shape, so no two pods share one.
func BenchmarkCreatePodFields(b *testing.B) {
	m := managerFor(b, corev1.SchemeGroupVersion.WithKind("Pod"), "", "status")
	base := &corev1.Pod{}
	readJSON(b, "pod-running.json", base)
	base.ManagedFields, base.UID, base.ResourceVersion, base.CreationTimestamp = nil, "", "", metav1.Time{}
	base.Status, base.Spec.NodeName = corev1.PodStatus{}, ""
	pods := make([]*corev1.Pod, 4096)
	for i := range pods {
		p := base.DeepCopy()
		vol := fmt.Sprintf("kube-api-access-%05d", i)
		p.Spec.Volumes[0].Name = vol
		p.Spec.Containers[0].VolumeMounts[0].Name = vol
		pods[i] = p
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := m.create.fieldsJSON(pods[i%len(pods)], m.tc); !ok {
			b.Fatal("no fields")
		}
		i++
	}
}

// BenchmarkCreateSentPodFields is the managed-fields work of a create of
// the startup benchmark's pod (bench.BenchPod) as the create handler sees
// it: before defaulting and admission, so without the kube-api-access
// volume the service account plugin adds; every such pod has the same
// shape, and each create takes the form kept for it.
func BenchmarkCreateSentPodFields(b *testing.B) {
	m := managerFor(b, corev1.SchemeGroupVersion.WithKind("Pod"), "", "status")
	pods := make([]*corev1.Pod, 4096)
	for i := range pods {
		pods[i] = &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("startup-%d", i), Namespace: "bench", Labels: map[string]string{"app": "bench", "tier": "web"}},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{
				Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("100m"), corev1.ResourceMemory: resource.MustParse("500Mi"),
				}},
			}}},
		}
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		if _, ok := m.create.fieldsJSON(pods[i%len(pods)], m.tc); !ok {
			b.Fatal("no fields")
		}
		i++
	}
}
