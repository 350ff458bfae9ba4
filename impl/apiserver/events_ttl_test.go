package apiserver_test

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// Events go EventTTL after their last write (kube-apiserver's
// --event-ttl), whichever API wrote them, and watchers see them DELETED;
// other objects stay.
func TestEventsGoAfterEventTTL(t *testing.T) {
	e := newEnv(t, func(cfg *apiserver.Config) { cfg.EventTTL = 2 * time.Second })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	ns := "ttl"
	if _, err := e.cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	ref := corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "p", APIVersion: "v1"}
	core, err := e.cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{ObjectMeta: metav1.ObjectMeta{Name: "core"},
		InvolvedObject: ref, Reason: "Started", Message: "Started container c", Type: corev1.EventTypeNormal,
		Source: corev1.EventSource{Component: "kubelet"}, Count: 1}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	w, err := e.cs.CoreV1().Events(ns).Watch(ctx, metav1.ListOptions{ResourceVersion: core.ResourceVersion})
	if err != nil {
		t.Fatal(err)
	}
	defer w.Stop()
	if _, err := e.cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{ObjectMeta: metav1.ObjectMeta{Name: "new"},
		EventTime: metav1.NowMicro(), Regarding: ref, Reason: "Scheduled", Note: "Successfully assigned ttl/p to n1",
		Type: corev1.EventTypeNormal, Action: "Binding", ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-x"},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "stays"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	deleted := map[string]bool{}
	for len(deleted) < 2 {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				t.Fatalf("watch ended; deleted so far %v", deleted)
			}
			if ev.Type == watch.Deleted {
				deleted[ev.Object.(*corev1.Event).Name] = true
			}
		case <-ctx.Done():
			t.Fatalf("events deleted after a minute: %v, want core and new", deleted)
		}
	}
	if !deleted["core"] || !deleted["new"] {
		t.Errorf("deleted %v, want core and new", deleted)
	}
	if _, err := e.cs.EventsV1().Events(ns).Get(ctx, "new", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("events.k8s.io event after its TTL: %v, want NotFound", err)
	}
	if _, err := e.cs.CoreV1().ConfigMaps(ns).Get(ctx, "stays", metav1.GetOptions{}); err != nil {
		t.Errorf("the configmap went too: %v", err)
	}
}
