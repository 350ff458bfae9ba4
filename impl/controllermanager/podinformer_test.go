package controllermanager

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	coreinformers "k8s.io/client-go/informers/core/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
)

func TestExternalPodInformerIsSharedNotRunAndCleanedUp(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	client := fake.NewClientset(&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: "ns"}})
	owned := coreinformers.NewPodInformer(client, metav1.NamespaceAll, 20*time.Second, cache.Indexers{})
	// The owner's transform marks pods; the manager's must not replace it.
	if err := owned.SetTransform(func(obj any) (any, error) {
		if p, ok := obj.(*corev1.Pod); ok {
			p.Labels = map[string]string{"owner": "transform"}
		}
		return obj, nil
	}); err != nil {
		t.Fatal(err)
	}

	factory := informers.NewSharedInformerFactoryWithOptions(client, 0, informers.WithTransform(func(obj any) (any, error) {
		t.Error("the manager's transform ran on the external informer's pods")
		return obj, nil
	}))
	remove := useExternalPodInformer(factory, owned, 0)
	got := factory.Core().V1().Pods().Informer()
	done := make(chan struct{})
	go func() { defer close(done); owned.RunWithContext(ctx) }()
	ext := factory.InformerFor(&corev1.Pod{}, nil).(*externalPodInformer)
	if ext.SharedIndexInformer != owned {
		t.Fatal("factory does not hand out the external informer")
	}
	var adds atomic.Int32
	if _, err := got.AddEventHandler(cache.ResourceEventHandlerFuncs{AddFunc: func(any) { adds.Add(1) }}); err != nil {
		t.Fatal(err)
	}
	index := cache.Indexers{"byName": func(obj any) ([]string, error) { return []string{obj.(*corev1.Pod).Name}, nil }}
	if err := got.AddIndexers(index); err != nil {
		t.Fatal(err)
	}
	if err := got.AddIndexers(index); err != nil {
		t.Errorf("adding an index again (a later leader term) failed: %v", err)
	}
	factory.Start(ctx.Done()) // must not run the owned informer a second time
	if !cache.WaitForCacheSync(ctx.Done(), got.HasSynced) {
		t.Fatal("not synced")
	}
	if err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return adds.Load() == 1, nil
	}); err != nil {
		t.Fatalf("handler saw %d adds, want 1", adds.Load())
	}
	objs, _ := got.GetIndexer().ByIndex("byName", "a")
	if len(objs) != 1 || objs[0].(*corev1.Pod).Labels["owner"] != "transform" {
		t.Errorf("index lookup: %v", objs)
	}
	if n := len(ext.regs); n != 1 {
		t.Fatalf("%d registrations recorded", n)
	}
	remove()
	if len(ext.regs) != 0 {
		t.Error("handlers not removed")
	}
	factory.Shutdown() // returns at once: it started nothing
	cancel()
	<-done
}
