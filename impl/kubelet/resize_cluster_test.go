package kubelet_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestResizeThroughTheAPI: in a `kubeproof up` cluster, a running pod's
// containers report their resources (without them the API server refuses
// a resize, as kube-apiserver's version-skew guard does); a pods/resize
// update is applied in place by the simulated node's kubelet (the
// container's status resources and allocatedResources follow, no restart,
// no resize condition left), and a resize beyond the node's allocatable is
// refused by the API server (PodResizeValidator) and changes nothing. The
// kubelet's Infeasible answer is TestResizeInfeasibleAndDeferred's.
func TestResizeThroughTheAPI(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := cluster.Start(ctx, cluster.Config{DataDir: filepath.Join(t.TempDir(), "cluster"), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		ControllerManager: true, Scheduler: true, Nodes: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = c.Stop() }()
	admin, err := kubernetes.NewForConfig(c.AdminConfig)
	if err != nil {
		t.Fatal(err)
	}
	pods := admin.CoreV1().Pods("default")
	res := func(cpu string) corev1.ResourceRequirements {
		return corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu), corev1.ResourceMemory: resource.MustParse("64Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
		}
	}
	created, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27", Resources: res("100m")}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// waitFor polls until ok holds of the pod.
	waitFor := func(what string, ok func(*corev1.Pod) bool) *corev1.Pod {
		t.Helper()
		deadline := time.Now().Add(time.Minute)
		for {
			p, err := pods.Get(ctx, created.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if ok(p) {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: not reached: %+v", what, p.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	cpuOf := func(l corev1.ResourceList) string {
		q, ok := l[corev1.ResourceCPU]
		if !ok {
			return ""
		}
		return q.String()
	}
	hasCondition := func(p *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
		for i := range p.Status.Conditions {
			if p.Status.Conditions[i].Type == t {
				return &p.Status.Conditions[i]
			}
		}
		return nil
	}
	p := waitFor("running with resources reported", func(p *corev1.Pod) bool {
		return p.Status.Phase == corev1.PodRunning && len(p.Status.ContainerStatuses) == 1 && p.Status.ContainerStatuses[0].Resources != nil
	})
	if cs := p.Status.ContainerStatuses[0]; cpuOf(cs.AllocatedResources) != "100m" || cpuOf(cs.Resources.Requests) != "100m" {
		t.Fatalf("before the resize: allocatedResources %v, resources %+v", cs.AllocatedResources, cs.Resources)
	}

	p.Spec.Containers[0].Resources = res("300m")
	resized, err := pods.UpdateResize(ctx, created.Name, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatalf("UpdateResize: %v", err)
	}
	p = waitFor("resized in place", func(p *corev1.Pod) bool {
		cs := p.Status.ContainerStatuses[0]
		return cs.Resources != nil && cpuOf(cs.Resources.Requests) == "300m" && cpuOf(cs.AllocatedResources) == "300m" &&
			hasCondition(p, corev1.PodResizeInProgress) == nil && hasCondition(p, corev1.PodResizePending) == nil &&
			p.Status.ObservedGeneration == resized.Generation
	})
	if cs := p.Status.ContainerStatuses[0]; cs.RestartCount != 0 || cs.State.Running == nil {
		t.Errorf("the container was restarted: %+v", cs)
	}

	// Beyond the node's allocatable: refused at the API by the
	// PodResizeValidator admission plugin (on by default since upstream
	// PR 136043), not left to the kubelet to mark Infeasible.
	p.Spec.Containers[0].Resources = res("1000")
	_, err = pods.UpdateResize(ctx, created.Name, p, metav1.UpdateOptions{})
	var se *apierrors.StatusError
	if !errors.As(err, &se) || se.ErrStatus.Code != 403 || !strings.Contains(err.Error(), "node didn't have enough allocatable resources: cpu, requested: 1000000, allocatable: ") {
		t.Fatalf("resize beyond allocatable: %v, want 403 NodeCapacity", err)
	}
	if p, err = pods.Get(ctx, created.Name, metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}
	if p.Generation != resized.Generation || cpuOf(p.Spec.Containers[0].Resources.Requests) != "300m" {
		t.Errorf("a refused resize changed the pod: generation %d (want %d), requests %v", p.Generation, resized.Generation, p.Spec.Containers[0].Resources.Requests)
	}
}
