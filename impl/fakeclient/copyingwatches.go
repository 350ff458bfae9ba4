// Package kubelettest holds test support shared by the kubelet's packages'
// tests.
package kubelettest

import (
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// CopyingWatches makes client's watches deliver copies of the tracker's
// objects. client-go's fake tracker hands a new watch the objects it
// already stores themselves (not copies), and a kubelet's pod source
// transform changes the objects it receives in place (interning, as it may
// with the freshly decoded objects of a real client): without copies the
// race detector sees the transform write the tracker's object while the
// test reads it through the fake client.
func CopyingWatches(client *fake.Clientset) *fake.Clientset {
	client.PrependWatchReactor("*", func(action k8stesting.Action) (bool, watch.Interface, error) {
		wa, ok := action.(k8stesting.WatchActionImpl)
		if !ok {
			return false, nil, nil
		}
		w, err := client.Tracker().Watch(action.GetResource(), action.GetNamespace(), wa.ListOptions)
		if err != nil {
			return true, nil, err
		}
		return true, watch.Filter(w, func(e watch.Event) (watch.Event, bool) {
			if e.Object != nil {
				e.Object = e.Object.DeepCopyObject()
			}
			return e, true
		}), nil
	})
	return client
}
