package fakeclient

import (
	"context"
	"runtime"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
)

// A watch delivers copies: changing a delivered object changes neither the
// tracker's object nor what a later read returns, including for the objects
// a new watch is handed from the tracker's store.
func TestCopyingWatchesDeliverCopies(t *testing.T) {
	client := CopyingWatches(fake.NewClientset(&v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "stored", Labels: map[string]string{"app": "a"}}}))
	ctx := context.Background()
	w, err := client.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	e := <-w.ResultChan()
	delivered := e.Object.(*v1.Pod)
	delivered.Labels["app"] = "changed"

	got, err := client.CoreV1().Pods("ns").Get(ctx, "stored", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Labels["app"] != "a" {
		t.Errorf("changing the delivered pod changed the stored one: label app=%q", got.Labels["app"])
	}
}

// A watch stopped while events wait that no one reads leaves no goroutine
// behind (watch.Filter's would stay blocked sending the first of them).
func TestCopyingWatchStoppedWithUnreadEventsEnds(t *testing.T) {
	client := CopyingWatches(fake.NewClientset())
	ctx := context.Background()
	before := runtime.NumGoroutine()
	w, err := client.CoreV1().Pods("ns").Watch(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"a", "b", "c"} {
		if _, err := client.CoreV1().Pods("ns").Create(ctx, &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	w.Stop()
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			t.Fatalf("%d goroutines after the watch stopped, %d before it started", runtime.NumGoroutine(), before)
		}
		time.Sleep(10 * time.Millisecond)
	}
}
