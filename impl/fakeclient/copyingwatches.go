// Package fakeclient holds test support for client-go's fake clientset
// shared by the components' tests.
package fakeclient

import (
	"sync"

	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// CopyingWatches makes client's watches deliver copies of the tracker's
// objects. client-go's fake tracker hands a new watch the objects it
// already stores themselves (not copies: those created between an
// informer's list and its watch, or every stored object for a watch
// without a resourceVersion), while the kubelet's pod source and the
// scheduler's informer transforms change the objects they receive in place
// (trimming and interning, as they may with the freshly decoded objects of
// a real client): without copies the race detector sees a transform write
// the tracker's object while the test, or a reactor, reads it through the
// fake client.
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
		return true, newCopyingWatch(w), nil
	})
	return client
}

// copyingWatch passes on a watch's events with copies of their objects.
// Unlike watch.Filter, its goroutine also ends when Stop is called while it
// holds an event no one will receive any more (an informer stops reading
// before it stops the watch): a goroutine left behind would fail the tests
// that check every goroutine of a stopped component ended.
type copyingWatch struct {
	in       watch.Interface
	out      chan watch.Event
	stopped  chan struct{}
	stopOnce sync.Once
}

func newCopyingWatch(in watch.Interface) *copyingWatch {
	w := &copyingWatch{in: in, out: make(chan watch.Event), stopped: make(chan struct{})}
	go w.pass()
	return w
}

func (w *copyingWatch) ResultChan() <-chan watch.Event { return w.out }

func (w *copyingWatch) Stop() {
	w.stopOnce.Do(func() {
		close(w.stopped)
		w.in.Stop()
	})
}

// pass sends on each event of the underlying watch, its object copied,
// until that watch ends or Stop is called.
func (w *copyingWatch) pass() {
	defer close(w.out)
	for e := range w.in.ResultChan() {
		if e.Object != nil {
			e.Object = e.Object.DeepCopyObject()
		}
		select {
		case w.out <- e:
		case <-w.stopped:
			return
		}
	}
}
