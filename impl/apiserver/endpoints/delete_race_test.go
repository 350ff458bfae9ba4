package endpoints

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/apiserver/request"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// removedAfterMark is a store whose object another delete removes right
// after this one marked it: Get answers the ConfigMap, GuaranteedUpdate
// writes what tryUpdate returns (at resourceVersion 6), and Delete finds
// nothing.
type removedAfterMark struct {
	storage.Interface
	cm      *corev1.ConfigMap
	updates int
}

func (s *removedAfterMark) Get(_ context.Context, _ string, _ storage.GetOptions, out runtime.Object) error {
	*out.(*corev1.ConfigMap) = *s.cm.DeepCopy()
	return nil
}

func (s *removedAfterMark) GuaranteedUpdate(_ context.Context, key string, dest runtime.Object, _ bool, pre *storage.Preconditions, try storage.UpdateFunc) error {
	cur := s.cm.DeepCopy()
	if err := pre.Check(key, cur); err != nil {
		return err
	}
	obj, err := try(cur)
	if err != nil {
		return err
	}
	s.updates++
	cm := obj.(*corev1.ConfigMap).DeepCopy()
	cm.ResourceVersion = "6"
	*dest.(*corev1.ConfigMap) = *cm
	return nil
}

func (s *removedAfterMark) Delete(_ context.Context, key string, _ runtime.Object, _ *storage.Preconditions, _ storage.ValidateObjectFunc) error {
	return storage.NewError(storage.ErrCodeKeyNotFound, key, 0, "", nil)
}

// zeroGrace deletes gracefully with no grace period, as the pod strategy
// does an unscheduled pod.
type zeroGrace struct{}

func (zeroGrace) GracePeriod(runtime.Object, *metav1.DeleteOptions) int64 { return 0 }

// A delete that marked the object for removal with no grace period and
// then finds it gone (another delete removed it in between) succeeds with
// the object as it marked it, as kube-apiserver's generic store tolerates
// that NotFound (updateForGracefulDeletionAndFinalizers' ignoreNotFound,
// kubernetes#19403) instead of answering 404.
func TestDeleteMarkedThenRemovedByAnother(t *testing.T) {
	s := &removedAfterMark{cm: &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "u", ResourceVersion: "5"}}}
	h := configMapHandler(t, s)
	h.res.GracefulDelete = zeroGrace{}
	info := &request.Info{Verb: "delete", Resource: "configmaps", Namespace: "ns", Name: "c"}
	out, deleted, err := h.DeleteObject(context.Background(), info, "/configmaps/ns/c", &metav1.DeleteOptions{})
	if err != nil || !deleted {
		t.Fatalf("DELETE: deleted %v, %v; want the object, deleted", deleted, err)
	}
	m := out.(*corev1.ConfigMap)
	if s.updates != 1 || m.DeletionTimestamp == nil || m.DeletionGracePeriodSeconds == nil || *m.DeletionGracePeriodSeconds != 0 || m.ResourceVersion != "6" {
		t.Fatalf("answered %+v after %d updates, want the object as marked (grace 0, resourceVersion 6)", m.ObjectMeta, s.updates)
	}
}
