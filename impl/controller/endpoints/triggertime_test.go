package endpoints

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 24, 6, 0, 0, 0, time.UTC)

func at(sec int) time.Time { return t0.Add(time.Duration(sec) * time.Second) }

// readySince makes the pod's Ready condition last change at sec.
func readySince(sec int) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = metav1.NewTime(at(sec)) }
}

func createdAt(sec int) func(*corev1.Service) {
	return func(s *corev1.Service) { s.CreationTimestamp = metav1.NewTime(at(sec)) }
}

// TestTriggerTimes walks one service through syncs: the first annotates
// the service's creation; later ones the earliest pod or service change
// newer than the previous sync saw, or nothing.
func TestTriggerTimes(t *testing.T) {
	tr := NewTriggerTimes()
	svc := service(createdAt(0))
	steps := []struct {
		name string
		svc  *corev1.Service
		pods []*corev1.Pod
		want time.Time
	}{
		{"first sync: the service's creation, whatever the pods", svc,
			[]*corev1.Pod{pod("a", "10.1.0.1", readySince(5))}, at(0)},
		{"nothing newer: no trigger", svc,
			[]*corev1.Pod{pod("a", "10.1.0.1", readySince(5))}, time.Time{}},
		{"a pod became ready", svc,
			[]*corev1.Pod{pod("a", "10.1.0.1", readySince(5)), pod("b", "10.1.0.2", readySince(9))}, at(9)},
		{"two pods changed: the earlier", svc,
			[]*corev1.Pod{pod("a", "10.1.0.1", readySince(12)), pod("b", "10.1.0.2", readySince(11))}, at(11)},
		{"a pod left: no trigger of its own", svc,
			[]*corev1.Pod{pod("a", "10.1.0.1", readySince(12))}, time.Time{}},
		{"a pod without a Ready condition has none", svc,
			[]*corev1.Pod{pod("a", "10.1.0.1", readySince(12)), pod("c", "", func(p *corev1.Pod) { p.Status.Conditions = nil })}, time.Time{}},
		{"a pod back with its old time is newer than its absence", svc,
			[]*corev1.Pod{pod("a", "10.1.0.1", readySince(12)), pod("b", "10.1.0.2", readySince(11))}, at(11)},
		{"a service recreated under the name (not forgotten)", service(createdAt(20)),
			[]*corev1.Pod{pod("a", "10.1.0.1", readySince(12)), pod("b", "10.1.0.2", readySince(11))}, at(20)},
		{"a headless service is tracked the same", service(createdAt(20), func(s *corev1.Service) { s.Spec.ClusterIP = corev1.ClusterIPNone }),
			[]*corev1.Pod{pod("a", "10.1.0.1", readySince(30)), pod("b", "10.1.0.2", readySince(11))}, at(30)},
	}
	for _, s := range steps {
		if got := tr.Observe(s.svc, s.pods); !got.Equal(s.want) {
			t.Fatalf("%s: trigger time %v, want %v", s.name, got, s.want)
		}
	}
	// A forgotten (deleted) service starts again from its creation.
	tr.Forget("ns", "web")
	if got := tr.Observe(svc, []*corev1.Pod{pod("a", "10.1.0.1", readySince(30))}); !got.Equal(at(0)) {
		t.Fatalf("after Forget: %v, want the creation time", got)
	}
	// Services are tracked apart.
	other := service(createdAt(3), func(s *corev1.Service) { s.Name = "other" })
	if got := tr.Observe(other, nil); !got.Equal(at(3)) {
		t.Fatalf("another service's first sync: %v", got)
	}
}

func TestPlanWithTriggerTime(t *testing.T) {
	stamp := at(7).Add(123 * time.Millisecond).In(time.FixedZone("x", 3600))
	p := Decide(service(), []*corev1.Pod{pod("a", "10.1.0.1")}, nil).WithTriggerTime(stamp)
	if p.Action != Create || p.Endpoints.Annotations[LastChangeTriggerTimeAnnotation] != "2026-11-24T06:00:07.123Z" {
		t.Fatalf("create: %v %v", p.Action, p.Endpoints.Annotations)
	}
	// Without a trigger an update drops the annotation it had.
	cur := p.Endpoints.DeepCopy()
	cur.Annotations["keep"] = "x"
	p = Decide(service(), []*corev1.Pod{pod("a", "10.1.0.1"), pod("b", "10.1.0.2")}, cur).WithTriggerTime(time.Time{})
	if _, ok := p.Endpoints.Annotations[LastChangeTriggerTimeAnnotation]; p.Action != Update || ok || p.Endpoints.Annotations["keep"] != "x" {
		t.Fatalf("update without trigger: %v %v", p.Action, p.Endpoints.Annotations)
	}
	if _, ok := cur.Annotations[LastChangeTriggerTimeAnnotation]; !ok {
		t.Fatal("WithTriggerTime changed the current object")
	}
	// The annotation alone never causes a write.
	if p := Decide(service(), []*corev1.Pod{pod("a", "10.1.0.1")}, cur).WithTriggerTime(at(99)); p.Action != None {
		t.Fatalf("an unchanged state with a new trigger time: %v", p.Action)
	}
}
