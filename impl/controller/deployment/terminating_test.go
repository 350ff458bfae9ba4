package deployment

import (
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestStatusTerminatingReplicas: status.terminatingReplicas is the sum of
// the ReplicaSets' terminatingReplicas, as upstream's calculateStatus with
// DeploymentReplicaSetTerminatingReplicas (beta, on by default since 1.35;
// GetTerminatingReplicaCountForReplicaSets): a ReplicaSet its controller has
// not synced yet (observedGeneration 0, no count) adds nothing, and one synced
// without a count makes the total unknown (nil).
func TestStatusTerminatingReplicas(t *testing.T) {
	d := newDeployment(3, "nginx:1", intstr.FromInt32(1), intstr.FromInt32(0))
	w := newWorld(t, d)
	w.converge(false)
	var cur *appsv1.ReplicaSet
	for _, rs := range w.rss {
		cur = rs
	}
	old := cur.DeepCopy()
	old.Name, old.UID = "web-old", "old-uid"
	old.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: "old"}
	old.Spec.Template.Spec.Containers[0].Image = "nginx:0"
	old.Spec.Replicas = ptr(int32(0))
	old.Annotations = map[string]string{RevisionAnnotation: "0"}
	old.CreationTimestamp = metav1.NewTime(t0.Add(-1))

	tests := []struct {
		name          string
		cur, old      *int32
		oldGeneration int64
		want          *int32
	}{
		{"sum over the replicasets", ptr(int32(1)), ptr(int32(2)), 1, ptr(int32(3))},
		{"none terminating is 0, not omitted", ptr(int32(0)), ptr(int32(0)), 1, ptr(int32(0))},
		{"an unsynced replicaset adds nothing", ptr(int32(2)), nil, 0, ptr(int32(2))},
		{"a synced replicaset without a count makes it unknown", ptr(int32(2)), nil, 1, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, o := cur.DeepCopy(), old.DeepCopy()
			c.Status.TerminatingReplicas = tt.cur
			o.Status.TerminatingReplicas = tt.old
			o.Generation, o.Status.ObservedGeneration = tt.oldGeneration, tt.oldGeneration
			plan, err := Decide(Observed{Deployment: w.d, ReplicaSets: []*appsv1.ReplicaSet{c, o}, Now: w.now})
			if err != nil {
				t.Fatal(err)
			}
			st := w.d.Status
			if plan.Status != nil {
				st = *plan.Status
			}
			got := st.TerminatingReplicas
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Fatalf("terminatingReplicas = %v, want %v", deref(got), deref(tt.want))
			}
		})
	}
}

func deref(p *int32) any {
	if p == nil {
		return "nil"
	}
	return *p
}
