package kubelet

import (
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kubeproof/kubeproof/impl/intern"
)

func TestSourceTransformDropsOnlyManagedFields(t *testing.T) {
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Annotations: map[string]string{"a": "b"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}},
		Spec: v1.PodSpec{Containers: []v1.Container{{Name: "c", Env: []v1.EnvVar{{Name: "X"}}}}}}
	out, _ := sourceTransform(intern.New())(p)
	got := out.(*v1.Pod)
	if got.ManagedFields != nil || got.Annotations["a"] != "b" || len(got.Spec.Containers[0].Env) != 1 {
		t.Errorf("trimmed wrongly: %+v", got)
	}
}

func TestShareLastStatusOnceTheSourceHasTheWrittenVersion(t *testing.T) {
	written := v1.PodStatus{Phase: v1.PodRunning, Conditions: []v1.PodCondition{{Type: v1.PodReady}},
		ContainerStatuses: []v1.ContainerStatus{{Name: "c"}}}
	rec := &podRecord{lastStatus: &written, lastStatusRV: "5"}
	older := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "4"}, Status: *written.DeepCopy()}
	shareLastStatus(rec, older)
	if rec.lastStatus != &written {
		t.Fatal("shared with an older version of the pod")
	}
	src := &v1.Pod{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5"}, Status: *written.DeepCopy()}
	shareLastStatus(rec, src)
	if !sameStatusLists(rec.lastStatus, &src.Status) {
		t.Fatal("lastStatus does not share the source pod's lists")
	}
	if rec.lastStatus.Phase != v1.PodRunning {
		t.Errorf("status content changed: %+v", rec.lastStatus)
	}
	shared := rec.lastStatus
	shareLastStatus(rec, src)
	if rec.lastStatus != shared {
		t.Error("sharing again allocated a new status")
	}
}
