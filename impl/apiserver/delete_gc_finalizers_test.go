package apiserver_test

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// TestDeleteDroppingOrphanFinalizerWritesNothingFirst: a delete that only
// takes the garbage collector's orphan finalizer off an object without
// graceful deletion (a Background delete of a ConfigMap an Orphan delete
// left behind) removes the object in one write, as kube-apiserver's
// generic store does: its updateForGracefulDeletionAndFinalizers answers
// errDeleteNow before writing the finalizer change, and the storage
// delete removes the object as stored, its orphan finalizer still on it.
// A watcher sees the DELETED event only, its object the stored one.
func TestDeleteDroppingOrphanFinalizerWritesNothingFirst(t *testing.T) {
	e := newEnv(t, nil)
	c := ctx(t)
	cms := e.cs.CoreV1().ConfigMaps("default")
	if _, err := cms.Create(c, configMap("", "o", nil), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	orphan, background := metav1.DeletePropagationOrphan, metav1.DeletePropagationBackground
	if err := cms.Delete(c, "o", metav1.DeleteOptions{PropagationPolicy: &orphan}); err != nil {
		t.Fatal(err)
	}
	marked, err := cms.Get(c, "o", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := cms.Watch(c, metav1.ListOptions{ResourceVersion: marked.ResourceVersion, FieldSelector: "metadata.name=o"})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	// The resourceVersion precondition holds only if nothing was written
	// before the storage delete checks it.
	rv := marked.ResourceVersion
	if err := cms.Delete(c, "o", metav1.DeleteOptions{PropagationPolicy: &background,
		Preconditions: &metav1.Preconditions{ResourceVersion: &rv}}); err != nil {
		t.Fatalf("background delete of the marked object: %v", err)
	}
	if _, err := cms.Get(c, "o", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("after the background delete: %v, want NotFound", err)
	}
	select {
	case ev := <-w.ResultChan():
		cm, _ := ev.Object.(*corev1.ConfigMap)
		if ev.Type != watch.Deleted || cm == nil {
			t.Fatalf("first event after the background delete: %s %+v, want DELETED", ev.Type, ev.Object)
		}
		if len(cm.Finalizers) != 1 || cm.Finalizers[0] != metav1.FinalizerOrphanDependents || cm.DeletionTimestamp == nil {
			t.Fatalf("DELETED object: finalizers %v, deletionTimestamp %v; want the stored object (orphan finalizer, marked)", cm.Finalizers, cm.DeletionTimestamp)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no event after the background delete")
	}
}
