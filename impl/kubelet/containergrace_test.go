package kubelet

import (
	"maps"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// TestContainerConfigGraceAnnotations: a container carries its pod's
// deletion and termination grace periods as annotations when they are
// set, as upstream's newContainerAnnotations, so that the container GC
// can kill it with them without its pod (restoreKillSpecs).
func TestContainerConfigGraceAnnotations(t *testing.T) {
	for _, tc := range []struct {
		name     string
		deletion *int64
		term     *int64
		want     map[string]string
	}{
		{name: "termination", term: ptr.To[int64](30), want: map[string]string{runtime.AnnotationPodTerminationGracePeriod: "30"}},
		{name: "both", deletion: ptr.To[int64](0), term: ptr.To[int64](30),
			want: map[string]string{runtime.AnnotationPodDeletionGracePeriod: "0", runtime.AnnotationPodTerminationGracePeriod: "30"}},
		{name: "none", want: map[string]string{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pod := &v1.Pod{Spec: v1.PodSpec{TerminationGracePeriodSeconds: tc.term, Containers: []v1.Container{{Name: "c"}}}}
			pod.DeletionGracePeriodSeconds = tc.deletion
			got := containerConfig(pod, &pod.Spec.Containers[0], false, 0, nil, nil, cgroupParams{}).GetAnnotations()
			got = maps.Clone(got)
			for _, other := range []string{"io.kubernetes.container.restartCount", runtime.AnnotationContainerTerminationMessagePath, runtime.AnnotationContainerTerminationMessagePolicy} {
				delete(got, other) // TestContainerConfigKeepsKillSpecs
			}
			if !maps.Equal(got, tc.want) {
				t.Errorf("annotations %v, want %v", got, tc.want)
			}
		})
	}
}
