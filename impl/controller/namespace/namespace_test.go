package namespace

import (
	"context"
	goruntime "runtime"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	dynamicfake "k8s.io/client-go/dynamic/fake"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

func terminating(name string, finalizers ...corev1.FinalizerName) *corev1.Namespace {
	now := metav1.Now()
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name, DeletionTimestamp: &now}, Spec: corev1.NamespaceSpec{Finalizers: finalizers}}
}

func TestDecide(t *testing.T) {
	live := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{FinalizerKubernetes}}}
	tests := []struct {
		name      string
		ns        *corev1.Namespace
		remaining int
		want      Step
	}{
		{"live namespace", live, 3, Nothing},
		{"already finalized", terminating("a"), 3, Nothing},
		{"not listed yet", terminating("a", FinalizerKubernetes), -1, DeleteContent},
		{"content remaining", terminating("a", FinalizerKubernetes), 2, DeleteContent},
		{"empty: finalize", terminating("a", FinalizerKubernetes), 0, Finalize},
	}
	for _, tt := range tests {
		if got := Decide(tt.ns, tt.remaining); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestLoopEmptiesThenFinalizes(t *testing.T) {
	before := goruntime.NumGoroutine()
	ns := terminating("doomed", FinalizerKubernetes)
	client := fake.NewClientset(ns)
	client.Resources = []*metav1.APIResourceList{{
		GroupVersion: "v1",
		APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true, Kind: "Pod", Verbs: []string{"list", "delete", "deletecollection"}},
			{Name: "configmaps", Namespaced: true, Kind: "ConfigMap", Verbs: []string{"list", "delete"}},
			{Name: "nodes", Namespaced: false, Kind: "Node", Verbs: []string{"list", "delete"}},
		},
	}}
	finalized := make(chan []corev1.FinalizerName, 1)
	client.PrependReactor("create", "namespaces", func(a k8stesting.Action) (bool, runtime.Object, error) {
		if a.GetSubresource() != "finalize" {
			return false, nil, nil
		}
		obj := a.(k8stesting.CreateAction).GetObject().(*corev1.Namespace)
		select { // the fake keeps the finalizer, so later syncs finalize again
		case finalized <- obj.Spec.Finalizers:
		default:
		}
		return true, obj, nil
	})
	scheme := runtime.NewScheme()
	_ = corev1.AddToScheme(scheme)
	podsGVR := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	cmGVR := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	dyn := dynamicfake.NewSimpleDynamicClientWithCustomListKinds(scheme,
		map[schema.GroupVersionResource]string{podsGVR: "PodList", cmGVR: "ConfigMapList"},
		&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "doomed", Name: "p"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "doomed", Name: "c"}},
		&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "other", Name: "keep"}},
	)
	// Hold the pod back once, as a pod in graceful termination would be.
	var once sync.Once
	dyn.PrependReactor("delete-collection", "pods", func(a k8stesting.Action) (bool, runtime.Object, error) {
		handled := false
		once.Do(func() { handled = true })
		if handled {
			return true, nil, nil
		}
		return true, nil, dyn.Tracker().Delete(podsGVR, "doomed", "p")
	})
	factory := informers.NewSharedInformerFactory(client, 0)
	c := New(client, dyn, client.Discovery(), factory.Core().V1().Namespaces())
	c.RecheckAfter = 10 * time.Millisecond
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = c.Run(ctx, 1) }()

	select {
	case fins := <-finalized:
		if len(fins) != 0 {
			t.Fatalf("finalize kept %v", fins)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("namespace never finalized")
	}
	got, err := client.CoreV1().Namespaces().Get(ctx, "doomed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var remaining *corev1.NamespaceCondition
	for i := range got.Status.Conditions {
		if got.Status.Conditions[i].Type == corev1.NamespaceContentRemaining {
			remaining = &got.Status.Conditions[i]
		}
	}
	if remaining == nil || remaining.Status != corev1.ConditionFalse || remaining.Reason != "ContentRemoved" {
		t.Fatalf("NamespaceContentRemaining condition %+v", remaining)
	}
	for _, gvr := range []schema.GroupVersionResource{podsGVR, cmGVR} {
		list, err := dyn.Resource(gvr).Namespace("doomed").List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) != 0 {
			t.Fatalf("%s left in the namespace: %v %v", gvr.Resource, list, err)
		}
	}
	if _, err := dyn.Resource(cmGVR).Namespace("other").Get(ctx, "keep", metav1.GetOptions{}); apierrors.IsNotFound(err) {
		t.Fatal("deleted an object in another namespace")
	}
	cancel()
	wg.Wait()
	factory.Shutdown()
	deadline := time.Now().Add(10 * time.Second)
	for goruntime.NumGoroutine() > before+2 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if goruntime.NumGoroutine() > before+2 {
		t.Fatal("goroutines leaked")
	}
}

func TestConditions(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	c := Conditions(nil, Content{Total: 3, Remaining: map[string]int{"pods": 2, "configmaps": 1}, Finalizers: map[string]int{"example.com/hold": 1}}, now)
	if len(c) != 4 {
		t.Fatalf("conditions %+v", c)
	}
	if c[2].Type != corev1.NamespaceContentRemaining || c[2].Status != corev1.ConditionTrue ||
		c[2].Message != "Some resources are remaining: configmaps has 1 resource instances, pods has 2 resource instances" {
		t.Fatalf("content remaining %+v", c[2])
	}
	if c[3].Reason != "SomeFinalizersRemain" || c[0].Reason != "ResourcesDiscovered" || c[1].Reason != "ContentDeleted" {
		t.Fatalf("conditions %+v", c)
	}
	if again := Conditions(c, Content{Total: 3, Remaining: map[string]int{"pods": 2, "configmaps": 1}, Finalizers: map[string]int{"example.com/hold": 1}}, now.Add(time.Minute)); again != nil {
		t.Fatal("unchanged content must not rewrite conditions")
	}
	done := Conditions(c, Content{Remaining: map[string]int{}, Finalizers: map[string]int{}}, now.Add(time.Minute))
	if done[2].Status != corev1.ConditionFalse || done[2].Reason != "ContentRemoved" || !done[2].LastTransitionTime.Time.Equal(now.Add(time.Minute)) {
		t.Fatalf("after removal %+v", done[2])
	}
}
