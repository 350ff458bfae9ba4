package kubelet_test

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestImageUpdateObservedGeneration: in a `kubeproof up` cluster, a pod
// whose container image is changed in place (the API server bumps
// metadata.generation) ends with status.observedGeneration and its
// kubelet-owned conditions' observedGeneration equal to the new
// generation, as upstream's kubelet with PodObservedGenerationTracking.
func TestImageUpdateObservedGeneration(t *testing.T) {
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
	created, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: "default"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "nginx:1.27"}}}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// waitFor polls until the pod reports generation gen as observed.
	waitFor := func(gen int64) *corev1.Pod {
		t.Helper()
		var p *corev1.Pod
		deadline := time.Now().Add(time.Minute)
		for {
			p, err = pods.Get(ctx, created.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if p.Status.Phase == corev1.PodRunning && p.Status.ObservedGeneration == gen && readyObserved(p, gen) {
				return p
			}
			if time.Now().After(deadline) {
				t.Fatalf("generation %d: pod not reported Running and Ready with observedGeneration %d: %+v", p.Generation, gen, p.Status)
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	p := waitFor(1)
	p.Spec.Containers[0].Image = "nginx:1.28"
	updated, err := pods.Update(ctx, p, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if updated.Generation != 2 {
		t.Fatalf("generation after the image change %d, want 2", updated.Generation)
	}
	p = waitFor(2)
	for _, ct := range []corev1.PodConditionType{"PodReadyToStartContainers", corev1.PodInitialized, corev1.ContainersReady, corev1.PodScheduled} {
		for _, cd := range p.Status.Conditions {
			if cd.Type == ct && cd.ObservedGeneration != 2 {
				t.Errorf("%s observedGeneration %d, want 2", ct, cd.ObservedGeneration)
			}
		}
	}
}

// readyObserved reports whether p's Ready condition is True with observedGeneration gen.
func readyObserved(p *corev1.Pod, gen int64) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return c.Status == corev1.ConditionTrue && c.ObservedGeneration == gen
		}
	}
	return false
}
