package scheduler

import (
	"context"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestResizedDownPodFreesRoomForAWaitingPod: a bound pod resized down in
// place counts at what its node still has until the node reports the
// smaller resources, and then the room it gave back lets a waiting pod
// in at once (the AssignedPod/UpdatePodScaleDown event NodeResourcesFit
// registers for), as kube-scheduler.
func TestResizedDownPodFreesRoomForAWaitingPod(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "2", "8Gi", 110, nil))
	hog := makePod("default", "hog", "2", "1Gi")
	hog.Spec.NodeName = "n1"
	hog.Status.Phase = v1.PodRunning
	hog.Status.ContainerStatuses = []v1.ContainerStatus{{Name: "c", State: v1.ContainerState{Running: &v1.ContainerStateRunning{}},
		AllocatedResources: hog.Spec.Containers[0].Resources.Requests.DeepCopy(),
		Resources:          &v1.ResourceRequirements{Requests: hog.Spec.Containers[0].Resources.Requests.DeepCopy()}}}
	createPod(t, c, hog)
	startScheduler(t, c, testConfig())
	createPod(t, c, makePod("default", "p", "1", "1Gi"))
	waitFor(t, "p unschedulable", func() bool { return scheduledCondition(getPod(t, c, "default", "p")) != nil })

	// pods/resize: the spec goes down to 1 cpu; the node has not applied it.
	update := func(f func(p *v1.Pod)) {
		t.Helper()
		h := getPod(t, c, "default", "hog")
		f(h)
		if _, err := c.CoreV1().Pods("default").Update(context.Background(), h, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	update(func(h *v1.Pod) { h.Spec.Containers[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("1") })
	// The node applies it: allocated and actual go down.
	update(func(h *v1.Pod) {
		h.Status.ContainerStatuses[0].AllocatedResources[v1.ResourceCPU] = resource.MustParse("1")
		h.Status.ContainerStatuses[0].Resources.Requests[v1.ResourceCPU] = resource.MustParse("1")
	})
	waitFor(t, "p bound once hog's resize is applied", func() bool { return getPod(t, c, "default", "p").Spec.NodeName == "n1" })
}
