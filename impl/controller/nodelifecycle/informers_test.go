package nodelifecycle

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// startInformers starts factory's informers on client and returns once
// each has synced its cache and opened its watch. WaitForCacheSync alone
// returns after the informers' lists: the fake clientset replays to a watch
// opened late the objects added or changed since the list, but not the
// ones deleted meanwhile, so a delete made right after WaitForCacheSync,
// before the reflector's Watch call, never reaches the cache (the
// "n2 gone from the cache" timeout of TestRegisteredAndRemovingNodeEvents;
// kubernetes#131320 is the same race). The watches are the clientset's
// own, opened by a reactor that counts them.
func startInformers(t *testing.T, ctx context.Context, client *fake.Clientset, factory informers.SharedInformerFactory) {
	t.Helper()
	var open atomic.Int32
	client.PrependWatchReactor("*", func(a k8stesting.Action) (bool, watch.Interface, error) {
		var opts metav1.ListOptions
		if w, ok := a.(k8stesting.WatchActionImpl); ok {
			opts = w.ListOptions
		}
		w, err := client.Tracker().Watch(a.GetResource(), a.GetNamespace(), opts)
		if err != nil {
			return true, nil, err
		}
		open.Add(1)
		return true, w, nil
	})
	factory.Start(ctx.Done())
	synced := factory.WaitForCacheSync(ctx.Done())
	for typ, ok := range synced {
		if !ok {
			t.Fatalf("informer of %v did not sync", typ)
		}
	}
	deadline := time.Now().Add(20 * time.Second)
	for int(open.Load()) < len(synced) {
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d informers' watches open", open.Load(), len(synced))
		}
		time.Sleep(time.Millisecond)
	}
}
