package etcd3_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/compact"
	"github.com/kubeproof/kubeproof/impl/storage/etcd3"
	"github.com/kubeproof/kubeproof/impl/storage/storagetest"
)

// TestWatchAtCompactionBoundary: a watch with a selector from R = C-1, where
// C (an update) is the compaction revision, gets the update without its
// previous value from etcd. It must not be guessed as ADDED; the watch ends
// with an error so the client relists, as kube-apiserver's does.
func TestWatchAtCompactionBoundary(t *testing.T) {
	ctx := context.Background()
	res := storagetest.Pods()
	s, err := etcd3.New(etcd3.Config{Client: etcd.Client(), Resource: res})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	key := res.ResourcePrefix + "/ns/p"
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ns", Labels: map[string]string{"app": "a"}}}
	created := &corev1.Pod{}
	if err := s.Create(ctx, key, pod, created); err != nil {
		t.Fatal(err)
	}
	updated := &corev1.Pod{}
	if err := s.GuaranteedUpdate(ctx, key, updated, false, nil, func(in runtime.Object) (runtime.Object, error) {
		p := in.(*corev1.Pod).DeepCopy()
		p.Annotations = map[string]string{"step": "1"}
		return p, nil
	}); err != nil {
		t.Fatal(err)
	}
	c, _ := strconv.ParseInt(updated.ResourceVersion, 10, 64)
	if err := compact.Compact(ctx, etcd.Client(), c); err != nil {
		t.Fatal(err)
	}

	pred := storage.Everything()
	pred.Label = labels.SelectorFromSet(labels.Set{"app": "a"})
	pred.Field = fields.Everything()
	pred.GetAttrs = storagetest.PodAttrs
	w, err := s.Watch(ctx, key, storage.ListOptions{ResourceVersion: strconv.FormatInt(c-1, 10), Predicate: pred})
	if err != nil {
		return // refusing the watch outright is acceptable too
	}
	defer w.Stop()
	select {
	case e, ok := <-w.ResultChan():
		if !ok {
			return
		}
		if e.Type != watch.Error {
			t.Fatalf("watch from below the compaction revision sent %s for an update whose previous value is gone; want an ERROR", e.Type)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event")
	}
}
