package scheduler

import (
	"context"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes"
	toolscache "k8s.io/client-go/tools/cache"
)

// A scheduler given a pod informer of the process (Config.PodInformer)
// schedules from it as from its own: a pod that turns Succeeded frees its
// node (the informer holds terminal pods, the scheduler's handlers pass
// over them), and when Run returns the scheduler's handlers are gone from
// the informer, which keeps running for its other users.
func TestSchedulerOnASharedPodInformer(t *testing.T) {
	c := newFakeCluster()
	createNode(t, c, makeNode("n1", "2", "8Gi", 110, nil))
	hog := makePod("default", "hog", "2", "1Gi")
	hog.Spec.NodeName = "n1"
	hog.Status.Phase = v1.PodRunning
	createPod(t, c, hog)

	informerCtx, stopInformer := context.WithCancel(context.Background())
	defer stopInformer()
	pods := coreinformers.NewPodInformer(c, metav1.NamespaceAll, time.Second, toolscache.Indexers{})
	informerDone := make(chan struct{})
	go func() { defer close(informerDone); pods.RunWithContext(informerCtx) }()
	defer func() { stopInformer(); <-informerDone }()
	waitFor(t, "the shared informer to sync", pods.HasSynced)

	before := runtime.NumGoroutine()
	stop := runOnInformer(t, c, pods)

	createPod(t, c, makePod("default", "p", "1", "1Gi"))
	waitFor(t, "p unschedulable", func() bool { return scheduledCondition(getPod(t, c, "default", "p")) != nil })
	succeeded := getPod(t, c, "default", "hog")
	succeeded.Status.Phase = v1.PodSucceeded
	if _, err := c.CoreV1().Pods("default").UpdateStatus(context.Background(), succeeded, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "p bound once hog has succeeded", func() bool { return getPod(t, c, "default", "p").Spec.NodeName == "n1" })
	if _, ok, _ := pods.GetIndexer().GetByKey("default/hog"); !ok {
		t.Errorf("the shared informer lost the succeeded pod its other users see")
	}

	stop()
	// Each handler of a running informer has two goroutines: they end only
	// if Run took the scheduler's handlers off.
	waitFor(t, "the scheduler's goroutines and pod handlers to go", func() bool { return runtime.NumGoroutine() <= before })
	if !pods.HasSynced() || pods.IsStopped() {
		t.Errorf("the shared informer stopped with the scheduler")
	}
}

// A scheduler stopped before its caches have synced (here its shared pod
// informer is never started, as when the process stops while starting up)
// returns nil: being stopped is not a failure.
func TestSchedulerStoppedBeforeSync(t *testing.T) {
	c := newFakeCluster()
	pods := coreinformers.NewPodInformer(c, metav1.NamespaceAll, time.Second, toolscache.Indexers{})
	stop := runOnInformer(t, c, pods)
	time.Sleep(100 * time.Millisecond) // Run is waiting for the pod informer
	stop()
}

// runOnInformer runs a scheduler on pods; stop cancels its context and
// fails the test unless Run then returns nil.
func runOnInformer(t *testing.T, c kubernetes.Interface, pods toolscache.SharedIndexInformer) (stop func()) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s, err := New(ctx, c, Config{Configuration: testConfig(), Seed: 1, PodInformer: pods})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- s.Run(ctx) }()
	t.Cleanup(cancel)
	return func() {
		t.Helper()
		cancel()
		select {
		case err := <-done:
			if err != nil {
				t.Errorf("Run returned %v after its context ended, want nil", err)
			}
		case <-time.After(30 * time.Second):
			t.Fatal("Run did not return after cancel")
		}
	}
}
