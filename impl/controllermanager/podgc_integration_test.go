package controllermanager_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	clocktesting "k8s.io/utils/clock/testing"

	"github.com/kubeproof/kubeproof/impl/controllermanager"
)

// TestPodGarbageCollectorUnderRBAC runs the pod garbage collector alone,
// as its own service account (system:controller:pod-garbage-collector)
// under RBAC, with a fake clock: a running pod bound to a node that does
// not exist is turned Failed with DisruptionTarget (DeletionByPodGC) and
// then deleted once its 40 s quarantine is over (LIVE-4); of four
// succeeded pods with --terminated-pod-gc-threshold=2, the two oldest are
// deleted; the pods of a live node that are not over the threshold stay.
func TestPodGarbageCollectorUnderRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	admin, root, cmCfg := rbacClients(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := admin.CoreV1().Pods("default")

	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createWithPhase := func(name, node string, phase corev1.PodPhase) {
		p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		p.Status.Phase = phase
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("setting phase of %s: %v", name, err)
		}
	}
	createWithPhase("orphan", "gone", corev1.PodRunning)
	createWithPhase("running", "n1", corev1.PodRunning)
	// creationTimestamp has second precision: ties go by name, so the
	// names order these oldest first.
	for i := 1; i <= 4; i++ {
		createWithPhase(fmt.Sprintf("done-%d", i), "n1", corev1.PodSucceeded)
	}
	w, err := pods.Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=orphan"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()

	clk := clocktesting.NewFakeClock(time.Now())
	cfg := controllermanager.DefaultConfig()
	cfg.LeaderElect = false
	cfg.UseServiceAccountCredentials = true
	cfg.Controllers = []string{controllermanager.PodGC}
	cfg.TerminatedPodGCThreshold = 2
	cfg.Clock = clk
	var wg sync.WaitGroup
	cmErr := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); cmErr <- controllermanager.Run(ctx, root, cmCfg, cfg) }()
	defer func() {
		cancel()
		wg.Wait()
		if err := <-cmErr; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	}()

	exists := func(name string) bool {
		_, err := pods.Get(ctx, name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}
	eventually(t, "the two oldest terminated pods deleted", func() (bool, error) {
		return !exists("done-1") && !exists("done-2"), nil
	})
	if !exists("orphan") {
		t.Fatal("orphan deleted before its node's quarantine was over")
	}
	eventually(t, "the orphan deleted after the quarantine", func() (bool, error) {
		clk.Step(5 * time.Second)
		return !exists("orphan"), nil
	})
	for _, name := range []string{"done-3", "done-4", "running"} {
		if !exists(name) {
			t.Errorf("pod %s deleted", name)
		}
	}

	// The watch saw the orphan turn Failed with DisruptionTarget before
	// it was deleted.
	var marked bool
	for ev := range w.ResultChan() {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("watch event %v", ev)
		}
		if ev.Type == watch.Deleted {
			break
		}
		for _, c := range pod.Status.Conditions {
			if c.Type == corev1.DisruptionTarget && c.Status == corev1.ConditionTrue && c.Reason == "DeletionByPodGC" &&
				c.Message == "PodGC: node no longer exists" && pod.Status.Phase == corev1.PodFailed {
				marked = true
			}
		}
	}
	if !marked {
		t.Fatal("orphan deleted without first being marked Failed with DisruptionTarget/DeletionByPodGC")
	}
}
