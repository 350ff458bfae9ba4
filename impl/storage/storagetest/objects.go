// Package storagetest is the behavioural suite every storage.Interface
// implementation must pass (direct etcd3 and the watch cache), written once
// and run against each on an embedded etcd.
package storagetest

import (
	"fmt"
	"strconv"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/storage"
)

var resourceSeq atomic.Int64

// ConfigMaps returns the resource config of configmaps under a resource
// prefix no other test uses.
func ConfigMaps() storage.ResourceConfig {
	n := resourceSeq.Add(1)
	return storage.ResourceConfig{
		GroupResource:  schema.GroupResource{Resource: "configmaps"},
		StorageVersion: corev1.SchemeGroupVersion,
		ResourcePrefix: fmt.Sprintf("/configmaps%d", n),
		NewFunc:        func() runtime.Object { return &corev1.ConfigMap{} },
		NewListFunc:    func() runtime.Object { return &corev1.ConfigMapList{} },
		GetAttrs:       storage.DefaultAttrs,
		Namespaced:     true,
	}
}

// Pods returns the resource config of pods (selectable by spec.nodeName)
// under a resource prefix no other test uses.
func Pods() storage.ResourceConfig {
	n := resourceSeq.Add(1)
	return storage.ResourceConfig{
		GroupResource:  schema.GroupResource{Resource: "pods"},
		StorageVersion: corev1.SchemeGroupVersion,
		ResourcePrefix: fmt.Sprintf("/pods%d", n),
		NewFunc:        func() runtime.Object { return &corev1.Pod{} },
		NewListFunc:    func() runtime.Object { return &corev1.PodList{} },
		GetAttrs:       PodAttrs,
		Namespaced:     true,
	}
}

// PodAttrs selects pods by labels, metadata and spec.nodeName.
func PodAttrs(obj runtime.Object) (labels.Set, fields.Set, error) {
	pod, ok := obj.(*corev1.Pod)
	if !ok {
		return nil, nil, fmt.Errorf("not a pod: %T", obj)
	}
	f := storage.ObjectMetaFields(pod.Namespace, pod.Name)
	f["spec.nodeName"] = pod.Spec.NodeName
	return labels.Set(pod.Labels), f, nil
}

func newCM(ns, name string, lbls map[string]string, data string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls, UID: types.UID(ns + "-" + name)},
		Data:       map[string]string{"v": data},
	}
}

func newPod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(ns + "-" + name)},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "c", Image: "busybox"}},
		},
	}
}

func rvOf(obj runtime.Object) int64 {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	n, err := strconv.ParseInt(m.GetResourceVersion(), 10, 64)
	if err != nil {
		panic(fmt.Sprintf("resourceVersion %q: %v", m.GetResourceVersion(), err))
	}
	return n
}

func nameOf(obj runtime.Object) string {
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	return m.GetName()
}
