package clientgo

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
)

// TestEventsOneStoreTwoAPIs: core/v1 and events.k8s.io/v1 Events are one set
// of stored objects, as in Kubernetes. An event recorded through either API
// is read, listed (with each API's field selectors) and watched through the
// other, so `kubectl describe` shows what the scheduler recorded through
// events.k8s.io.
func TestEventsOneStoreTwoAPIs(t *testing.T) {
	for _, mode := range []struct {
		name       string
		watchCache bool
	}{{"watchcache", true}, {"etcd", false}} {
		t.Run(mode.name, func(t *testing.T) {
			t.Parallel()
			c, _ := clustertest.Start(t, clustertest.Options{NoWatchCache: !mode.watchCache})
			cs := fastClient(t, c)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			ns := "default"

			coreWatch, err := cs.CoreV1().Events(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web-1"})
			if err != nil {
				t.Fatal(err)
			}
			defer coreWatch.Stop()

			// Recorded the new way (as the scheduler does)...
			now := metav1.NewMicroTime(time.Now())
			created, err := cs.EventsV1().Events(ns).Create(ctx, &eventsv1.Event{
				ObjectMeta: metav1.ObjectMeta{Name: "web-1.scheduled"},
				EventTime:  now, ReportingController: "default-scheduler", ReportingInstance: "default-scheduler-1",
				Action: "Binding", Reason: "Scheduled", Note: "Successfully assigned default/web-1 to node-1", Type: corev1.EventTypeNormal,
				Regarding: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-1", APIVersion: "v1"},
			}, metav1.CreateOptions{})
			if err != nil {
				t.Fatal(err)
			}

			// ...read the old way, with the same object identity.
			core, err := cs.CoreV1().Events(ns).Get(ctx, "web-1.scheduled", metav1.GetOptions{})
			if err != nil {
				t.Fatalf("core/v1 does not see the events.k8s.io event: %v", err)
			}
			if core.UID != created.UID || core.ResourceVersion != created.ResourceVersion ||
				core.Message != created.Note || core.InvolvedObject.Name != "web-1" || core.ReportingController != "default-scheduler" {
				t.Fatalf("core view differs: %+v", core)
			}
			select {
			case e := <-coreWatch.ResultChan():
				ev, ok := e.Object.(*corev1.Event)
				if e.Type != watch.Added || !ok || ev.Name != "web-1.scheduled" {
					t.Fatalf("core watch got %s %T", e.Type, e.Object)
				}
			case <-ctx.Done():
				t.Fatal("core watch saw nothing")
			}

			// Recorded the old way (as client-go's record package does)...
			if _, err := cs.CoreV1().Events(ns).Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{Name: "web-2.created"},
				InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: "web-2"},
				Reason:         "Created", Message: "Created container c", Type: corev1.EventTypeNormal,
				Source: corev1.EventSource{Component: "kubelet"}, Count: 1,
				FirstTimestamp: metav1.Now(), LastTimestamp: metav1.Now(),
			}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			// ...listed the new way, with the new API's field names.
			list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "regarding.name=web-2"})
			if err != nil {
				t.Fatal(err)
			}
			if len(list.Items) != 1 || list.Items[0].Note != "Created container c" || list.Items[0].DeprecatedSource.Component != "kubelet" {
				t.Fatalf("events.k8s.io list by regarding.name = %+v", list.Items)
			}
			all, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if len(all.Items) != 2 || all.ResourceVersion == "" {
				t.Fatalf("events.k8s.io sees %d events, want 2", len(all.Items))
			}
			byController, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{FieldSelector: "reportingController=default-scheduler"})
			if err != nil {
				t.Fatal(err)
			}
			if len(byController.Items) != 1 || byController.Items[0].Name != "web-1.scheduled" {
				t.Fatalf("list by reportingController = %+v", byController.Items)
			}

			// A delete through one API removes it from both.
			if err := cs.EventsV1().Events(ns).Delete(ctx, "web-2.created", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if _, err := cs.CoreV1().Events(ns).Get(ctx, "web-2.created", metav1.GetOptions{}); err == nil {
				t.Fatal("event deleted through events.k8s.io still visible through core/v1")
			}
		})
	}
}
