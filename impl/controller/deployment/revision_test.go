package deployment

import (
	"fmt"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestRevisionThatDoesNotParse: a revision annotation that is not a number
// is never an error of the sync; as upstream, such a ReplicaSet is skipped
// when the highest (and the last) revision is computed, so the new
// ReplicaSet gets the highest parseable one + 1; a new ReplicaSet whose own
// revision does not parse is left alone altogether (SetNewReplicaSetAnnotations
// reports no change: neither its revision nor the Deployment's annotations
// are written to it) and the Deployment takes its revision as it is; and
// cleanup orders such ReplicaSets by age (ReplicaSetsByRevision).
func TestRevisionThatDoesNotParse(t *testing.T) {
	t.Run("the new replicaset's revision", func(t *testing.T) {
		w := newWorld(t, newDeployment(2, "v1", intstr.FromInt32(1), intstr.FromInt32(0)))
		w.converge(false)
		rs := w.byImage("v1")
		rs.Annotations[RevisionAnnotation] = "one"
		w.d.Annotations["team"] = "a"
		w.d.Generation++
		plan, err := Decide(Observed{Deployment: w.d, ReplicaSets: w.list(), Now: w.now})
		if err != nil {
			t.Fatal(err)
		}
		for _, a := range plan.Actions {
			if a.ReplicaSet.Name == rs.Name {
				t.Fatalf("%s of the replicaset whose revision does not parse: annotations %v", a.Kind, a.ReplicaSet.Annotations)
			}
		}
		if plan.Revision != "one" {
			t.Fatalf("deployment revision %q, want the replicaset's %q", plan.Revision, "one")
		}
	})

	t.Run("old replicasets' revisions", func(t *testing.T) {
		w := newWorld(t, newDeployment(2, "v1", intstr.FromInt32(1), intstr.FromInt32(0)))
		w.converge(false)
		w.setImage("v2")
		w.converge(true)
		w.byImage("v2").Annotations[RevisionAnnotation] = "two"
		w.setImage("v3")
		plan := w.syncDeployment()
		if len(plan.Actions) == 0 || plan.Actions[0].Kind != CreateReplicaSet {
			t.Fatalf("actions %+v, want a create first", plan.Actions)
		}
		if got := plan.Actions[0].ReplicaSet.Annotations[RevisionAnnotation]; got != "2" {
			t.Fatalf("new replicaset's revision %q, want 2 (revision 1 + 1; %q skipped)", got, "two")
		}
	})

	t.Run("cleanup by age", func(t *testing.T) {
		d := newDeployment(2, "v3", intstr.FromInt32(1), intstr.FromInt32(0))
		d.Spec.Paused = true
		d.Spec.RevisionHistoryLimit = ptr(int32(1))
		mk := func(name, image, revision string, replicas int32, age time.Duration) *appsv1.ReplicaSet {
			tmpl := *d.Spec.Template.DeepCopy()
			tmpl.Spec.Containers[0].Image = image
			tmpl.Labels = map[string]string{"app": "web", appsv1.DefaultDeploymentUniqueLabelKey: name}
			return &appsv1.ReplicaSet{
				ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", UID: types.UID(name), Labels: tmpl.Labels,
					OwnerReferences: []metav1.OwnerReference{ControllerRef(d)}, CreationTimestamp: metav1.NewTime(t0.Add(-age)),
					Annotations: map[string]string{RevisionAnnotation: revision, DesiredReplicasAnnotation: "2", MaxReplicasAnnotation: "3"}},
				Spec:   appsv1.ReplicaSetSpec{Replicas: ptr(replicas), Selector: &metav1.LabelSelector{MatchLabels: tmpl.Labels}, Template: tmpl},
				Status: appsv1.ReplicaSetStatus{Replicas: replicas, AvailableReplicas: replicas},
			}
		}
		// By revision "bad" (were it 0) would go first; by age, r5 does.
		rss := []*appsv1.ReplicaSet{mk("r5", "v1", "5", 0, 3*time.Hour), mk("bad", "v2", "bad", 0, 2*time.Hour), mk("r6", "v3", "6", 2, time.Hour)}
		plan, err := Decide(Observed{Deployment: d, ReplicaSets: rss, Now: t0})
		if err != nil {
			t.Fatal(err)
		}
		var deleted []string
		for _, a := range plan.Actions {
			if a.Kind == DeleteReplicaSet {
				deleted = append(deleted, a.ReplicaSet.Name)
			}
		}
		if fmt.Sprint(deleted) != "[r5]" {
			t.Fatalf("deleted %v, want [r5]", deleted)
		}
	})
}

// TestRevisionHistoryAsUpstream: a ReplicaSet raised to a new revision
// records the revision it had in revision-history exactly as upstream's
// SetNewReplicaSetAnnotations: whenever the revision annotation was present
// (even empty), and a history whose first entry is empty is started afresh.
func TestRevisionHistoryAsUpstream(t *testing.T) {
	d := newDeployment(1, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	for _, tt := range []struct {
		name                  string
		annotations           map[string]string
		wantRev, wantHistory  string
		wantHistoryAnnotation bool
	}{
		{"no revision before", map[string]string{}, "5", "", false},
		{"revision 2 before", map[string]string{RevisionAnnotation: "2"}, "5", "2", true},
		{"appended", map[string]string{RevisionAnnotation: "2", RevisionHistoryAnnotation: "1"}, "5", "1,2", true},
		{"an empty revision before", map[string]string{RevisionAnnotation: "", RevisionHistoryAnnotation: "3,4"}, "5", "3,4,", true},
		{"a history starting empty", map[string]string{RevisionAnnotation: "2", RevisionHistoryAnnotation: ",4"}, "5", "2", true},
		{"not lowered", map[string]string{RevisionAnnotation: "7", RevisionHistoryAnnotation: "1"}, "7", "1", true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Annotations: tt.annotations}}
			setNewReplicaSetAnnotations(d, rs, 5, true)
			history, ok := rs.Annotations[RevisionHistoryAnnotation]
			if rs.Annotations[RevisionAnnotation] != tt.wantRev || history != tt.wantHistory || ok != tt.wantHistoryAnnotation {
				t.Fatalf("revision %q history %q (present %v), want %q %q (%v)", rs.Annotations[RevisionAnnotation], history, ok, tt.wantRev, tt.wantHistory, tt.wantHistoryAnnotation)
			}
		})
	}
}
