package fieldmanager

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
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
