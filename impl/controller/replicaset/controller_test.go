package replicaset

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/internal/fakeapi"
)

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLoopScalesUpAndDown(t *testing.T) {
	before := runtime.NumGoroutine()
	rs := newRS("web", 3)
	orphan := newPod("orphan", labelled("app", "web"))
	client := fakeapi.NewClientset(rs, orphan)
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	c := New(client, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), recorder, clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx, 2) }()

	ownedPods := func() []corev1.Pod {
		list, _ := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
		var out []corev1.Pod
		for _, p := range list.Items {
			if ref := metav1.GetControllerOf(&p); ref != nil && ref.UID == rs.UID {
				out = append(out, p)
			}
		}
		return out
	}
	waitFor(t, "3 owned pods (orphan adopted + 2 created)", func() bool { return len(ownedPods()) == 3 })
	for _, p := range ownedPods() {
		if p.Name != "orphan" && !strings.HasPrefix(p.Name, "web-") {
			t.Errorf("created pod %q lacks the generateName prefix web-", p.Name)
		}
		ref := metav1.GetControllerOf(&p)
		if ref.BlockOwnerDeletion == nil || !*ref.BlockOwnerDeletion {
			t.Errorf("pod %s: controller ref without blockOwnerDeletion", p.Name)
		}
	}
	waitFor(t, "status replicas 3", func() bool {
		got, _ := client.AppsV1().ReplicaSets("ns").Get(ctx, "web", metav1.GetOptions{})
		return got.Status.Replicas == 3 && got.Status.ObservedGeneration == rs.Generation
	})

	scaled, _ := client.AppsV1().ReplicaSets("ns").Get(ctx, "web", metav1.GetOptions{})
	scaled.Spec.Replicas = ptr(int32(1))
	if _, err := client.AppsV1().ReplicaSets("ns").Update(ctx, scaled, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "1 owned pod", func() bool { return len(ownedPods()) == 1 })
	// Give the controller a chance to misbehave, then check it did not over-create.
	waitFor(t, "status replicas 1", func() bool {
		got, _ := client.AppsV1().ReplicaSets("ns").Get(ctx, "web", metav1.GetOptions{})
		return got.Status.Replicas == 1
	})
	if n := len(ownedPods()); n != 1 {
		t.Fatalf("%d pods after scale-down, want 1", n)
	}
	cancel()
	wg.Wait()
	factory.Shutdown()

	var creates, deletes int
	close(recorder.Events)
	var all []string
	for e := range recorder.Events {
		all = append(all, e)
		switch {
		case strings.Contains(e, EventSuccessfulCreate+" Created pod: web-"):
			creates++
		case strings.Contains(e, EventSuccessfulDelete+" Deleted pod: "):
			deletes++
		}
	}
	if creates != 2 || deletes != 2 {
		for _, e := range all {
			t.Log(e)
		}
		t.Errorf("events: %d creates, %d deletes; want 2 and 2", creates, deletes)
	}
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before+2 })
}
