// Package fakeapi makes client-go's fake clientset behave like an API server
// in the few ways controller loop tests depend on: generateName produces a
// unique name, every created object gets a uid and a creationTimestamp, and
// a status update changes only status.
package fakeapi

import (
	"fmt"
	"sync/atomic"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// NewClientset returns a fake clientset seeded with objs whose creates fill
// in name (from generateName), uid and creationTimestamp.
func NewClientset(objs ...runtime.Object) *fake.Clientset {
	c := fake.NewClientset(objs...)
	var n atomic.Int64
	c.PrependReactor("create", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		create, ok := action.(k8stesting.CreateAction)
		if !ok || action.GetSubresource() != "" {
			return false, nil, nil
		}
		m, err := meta.Accessor(create.GetObject())
		if err != nil {
			return false, nil, nil
		}
		i := n.Add(1)
		if m.GetName() == "" && m.GetGenerateName() != "" {
			m.SetName(fmt.Sprintf("%s%05d", m.GetGenerateName(), i))
		}
		if m.GetUID() == "" {
			m.SetUID(types.UID(fmt.Sprintf("uid-%d", i)))
		}
		if ts := m.GetCreationTimestamp(); ts.IsZero() {
			m.SetCreationTimestamp(metav1.Now())
		}
		return false, nil, nil
	})
	// A status update changes only status, as the status subresource does;
	// without this a controller's status write from a stale copy would
	// silently revert a concurrent spec change.
	c.PrependReactor("update", "*", func(action k8stesting.Action) (bool, runtime.Object, error) {
		update, ok := action.(k8stesting.UpdateAction)
		if !ok || action.GetSubresource() != "status" {
			return false, nil, nil
		}
		m, err := meta.Accessor(update.GetObject())
		if err != nil {
			return false, nil, nil
		}
		gvr, ns := action.GetResource(), action.GetNamespace()
		existing, err := c.Tracker().Get(gvr, ns, m.GetName())
		if err != nil {
			return true, nil, err
		}
		incoming, err := runtime.DefaultUnstructuredConverter.ToUnstructured(update.GetObject())
		if err != nil {
			return true, nil, err
		}
		merged, err := runtime.DefaultUnstructuredConverter.ToUnstructured(existing)
		if err != nil {
			return true, nil, err
		}
		merged["status"] = incoming["status"]
		out := existing.DeepCopyObject()
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(merged, out); err != nil {
			return true, nil, err
		}
		if err := c.Tracker().Update(gvr, out, ns); err != nil {
			return true, nil, err
		}
		return true, out, nil
	})
	return c
}
