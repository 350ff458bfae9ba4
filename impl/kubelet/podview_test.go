package kubelet

import (
	"reflect"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// podView is the API pod with the kubelet's last written status; once the
// source has caught up with that write it is the pod itself, unless another
// component's condition sits after the kubelet's, which the view reorders
// (others first, as the kubelet writes them).
func TestPodViewOfACaughtUpPodIsThePod(t *testing.T) {
	k := &Kubelet{}
	pod := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", ResourceVersion: "7"}, Status: v1.PodStatus{
		Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{
			{Type: v1.DisruptionTarget, Status: v1.ConditionTrue},
			{Type: v1.PodReady, Status: v1.ConditionTrue},
		},
	}}
	written := *pod.Status.DeepCopy()
	rec := &podRecord{lastStatus: &written, lastStatusRV: "7"}
	if view := k.podView(rec, pod); view == pod || !reflect.DeepEqual(view, pod) {
		t.Errorf("before the source caught up: view %p of pod %p (want an equal copy)", view, pod)
	}
	shareLastStatus(rec, pod)
	if view := k.podView(rec, pod); view != pod {
		t.Errorf("after the source caught up the view is a copy")
	}

	other := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "q", ResourceVersion: "9"}, Status: v1.PodStatus{
		Phase: v1.PodRunning,
		Conditions: []v1.PodCondition{
			{Type: v1.PodReady, Status: v1.ConditionTrue},
			{Type: v1.DisruptionTarget, Status: v1.ConditionTrue},
		},
	}}
	rec = &podRecord{lastStatus: &other.Status, lastStatusRV: "9"}
	view := k.podView(rec, other)
	if view == other {
		t.Fatal("another component's condition after the kubelet's: the view is the pod itself")
	}
	if got := view.Status.Conditions; len(got) != 2 || got[0].Type != v1.DisruptionTarget || got[1].Type != v1.PodReady {
		t.Errorf("view conditions %v, want DisruptionTarget then Ready", got)
	}
	if other.Status.Conditions[0].Type != v1.PodReady {
		t.Error("the view changed the source's pod")
	}
}
