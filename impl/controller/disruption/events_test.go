package disruption_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/record"

	"github.com/kubeproof/kubeproof/impl/controller/disruption"
)

func eventsOf(d disruption.Decision) []string {
	var out []string
	for _, e := range d.Events {
		on := "pdb"
		if e.Pod != nil {
			on = e.Pod.Name
		}
		out = append(out, fmt.Sprintf("%s %s %s: %s", on, e.Type, e.Reason, e.Message))
	}
	return out
}

func TestDecideEvents(t *testing.T) {
	rss := map[string]*appsv1.ReplicaSet{loneRS.Name: loneRS}
	overdue := budget(func(p *policyv1.PodDisruptionBudget) {
		p.Spec.MinAvailable = ptr(intstr.FromInt32(1))
		p.Status.DisruptedPods = map[string]metav1.Time{"a": metav1.NewTime(now.Add(-3 * time.Minute)), "b": metav1.NewTime(now.Add(-time.Minute))}
	})
	for _, tc := range []struct {
		name string
		pdb  *policyv1.PodDisruptionBudget
		pods []*corev1.Pod
		want []string
	}{
		{"no pods", budget(minAvailable(intstr.FromInt32(1))), nil,
			[]string{"pdb Normal NoPods: No matching pods found"}},
		{"managed pods: no event", budget(maxUnavailable(intstr.FromInt32(1))), []*corev1.Pod{pod("a", ready, ownedBy(loneRS))}, nil},
		{"unknown controller", budget(maxUnavailable(intstr.FromInt32(1))), []*corev1.Pod{pod("a", ready, ownedBy(strangerRS))},
			[]string{`pdb Warning CalculateExpectedPodCountFailed: Failed to calculate the number of expected pods: found no controllers for pod "a": ReplicaSet gone not found`}},
		{"unmanaged pods with a scale-relative budget", budget(minAvailable(intstr.FromString("50%"))),
			[]*corev1.Pod{pod("a", ready, ownedBy(loneRS)), pod("bare", ready)},
			[]string{"pdb Warning UnmanagedPods: Pods selected by this PodDisruptionBudget (selector: &LabelSelector{MatchLabels:map[string]string{app: web,},MatchExpressions:[]LabelSelectorRequirement{},}) " +
				`were found to be unmanaged. As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. To account for these pods please set ".spec.minAvailable" field of the PDB to an integer value.`}},
		{"unmanaged pods with an integer minAvailable: no event", budget(minAvailable(intstr.FromInt32(1))), []*corev1.Pod{pod("bare", ready)}, nil},
		{"eviction not followed by the delete", overdue, []*corev1.Pod{pod("a", ready), pod("b", ready)},
			[]string{"a Warning NotDeleted: Pod was expected by PDB ns/b to be deleted but it wasn't"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := disruption.Decide(disruption.Observed{PDB: tc.pdb, Pods: tc.pods, Now: now, ReplicaSets: rss})
			if got := eventsOf(d); strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("events\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(tc.want, "\n"))
			}
		})
	}
}

// The loop records the decided events through its recorder.
func TestLoopRecordsEvents(t *testing.T) {
	cs := fake.NewClientset(budget(minAvailable(intstr.FromInt32(1))))
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(cs, 0)
	recorder := record.NewFakeRecorder(10)
	c, err := disruption.New(cs, factory, disruption.WithRecorder(recorder))
	if err != nil {
		t.Fatal(err)
	}
	factory.Start(ctx.Done())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx, 1) }()
	defer func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
		factory.Shutdown()
	}()
	select {
	case ev := <-recorder.Events:
		if ev != "Normal NoPods No matching pods found" {
			t.Fatalf("event %q", ev)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("no event recorded")
	}
}
