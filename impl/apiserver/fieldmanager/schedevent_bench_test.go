package fieldmanager

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BenchmarkCreateSchedulerEventFields is the managed-fields work of
// creating the scheduler's Scheduled event (events.k8s.io/v1, eventTime
// set, as client-go's events recorder writes it), which takes the direct
// road's shape.
func BenchmarkCreateSchedulerEventFields(b *testing.B) {
	m := managerFor(b, eventsv1.SchemeGroupVersion.WithKind("Event"), "")
	ev := &eventsv1.Event{
		ObjectMeta:          metav1.ObjectMeta{Name: "startup-1.187a1b2c3d4e5f60", Namespace: "default"},
		EventTime:           metav1.NewMicroTime(time.Date(2026, 11, 23, 5, 30, 1, 123456000, time.UTC)),
		ReportingController: "default-scheduler",
		ReportingInstance:   "default-scheduler-kubeproof",
		Action:              "Binding",
		Reason:              "Scheduled",
		Regarding:           corev1.ObjectReference{Kind: "Pod", Namespace: "default", Name: "startup-1", UID: "6be60d04-67ba-4f31-b42e-ca5e4bcb1719", APIVersion: "v1", ResourceVersion: "112"},
		Note:                "Successfully assigned default/startup-1 to node-17",
		Type:                "Normal",
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, ok := m.create.fieldsJSON(ev, m.tc); !ok {
			b.Fatal("no fields")
		}
	}
}
