package deployment

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"
)

const changeCause = "kubernetes.io/change-cause"

// rolledOutTwice is a Deployment rolled out to v1 (revision 1, change-cause
// "create") and then to v2 (revision 2, change-cause "edit").
func rolledOutTwice(t *testing.T) *world {
	d := newDeployment(2, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	d.Annotations = map[string]string{changeCause: "create"}
	w := newWorld(t, d)
	w.converge(false)
	w.d.Annotations[changeCause] = "edit"
	w.setImage("v2")
	w.converge(true)
	if w.d.Annotations[RevisionAnnotation] != "2" || len(w.rss) != 2 {
		t.Fatalf("setup: revision %q, %d replicasets", w.d.Annotations[RevisionAnnotation], len(w.rss))
	}
	return w
}

func (w *world) byImage(image string) *appsv1.ReplicaSet {
	for _, rs := range w.rss {
		if rs.Spec.Template.Spec.Containers[0].Image == image {
			return rs
		}
	}
	return nil
}

// TestRollbackAnnotation: the deprecated.deployment.rollback.to annotation
// is handled as upstream's rollback (rollback.go): 0 means the last
// revision (the second highest), the target ReplicaSet's template (without
// its pod-template-hash label) and annotations (all but the controller's
// own) are copied to the Deployment, the annotation is removed in the same
// Update, and DeploymentRollback / DeploymentRollbackTemplateUnchanged /
// DeploymentRollbackRevisionNotFound are recorded with upstream's messages.
// A value that is not a number is ignored and left; a paused Deployment is
// not rolled back; a rollback is handled before a scaling event.
func TestRollbackAnnotation(t *testing.T) {
	type want struct {
		image, cause string
		warning      *Event
		done         *Event
	}
	done1 := &Event{corev1.EventTypeNormal, ReasonRollbackDone, `Rolled back deployment "web" to revision 1`}
	for _, tt := range []struct {
		name  string
		to    string
		setup func(w *world)
		want  *want // nil: no rollback handled
	}{
		{name: "to revision 1", to: "1", want: &want{image: "v1", cause: "create", done: done1}},
		{name: "0 is the last revision", to: "0", want: &want{image: "v1", cause: "create", done: done1}},
		{name: "the current template", to: "2", want: &want{image: "v2", cause: "edit",
			warning: &Event{corev1.EventTypeWarning, ReasonRollbackTemplateUnchanged, `The rollback revision contains the same template as current deployment "web"`}}},
		{name: "a revision that does not exist", to: "7", want: &want{image: "v2", cause: "edit",
			warning: &Event{corev1.EventTypeWarning, ReasonRollbackRevisionNotFound, "Unable to find the revision to rollback to."}}},
		{name: "no last revision", to: "0",
			setup: func(w *world) { delete(w.rss, w.byImage("v1").Name) },
			want: &want{image: "v2", cause: "edit",
				warning: &Event{corev1.EventTypeWarning, ReasonRollbackRevisionNotFound, "Unable to find last revision."}}},
		{name: "a replicaset whose revision does not parse is skipped", to: "0",
			setup: func(w *world) { w.byImage("v1").Annotations[RevisionAnnotation] = "one" },
			want: &want{image: "v2", cause: "edit",
				warning: &Event{corev1.EventTypeWarning, ReasonRollbackRevisionNotFound, "Unable to find last revision."}}},
		{name: "before a scaling event", to: "1",
			setup: func(w *world) { w.d.Spec.Replicas = ptr(int32(5)); w.d.Generation++ },
			want:  &want{image: "v1", cause: "create", done: done1}},
		{name: "not a number: ignored", to: "one"},
		{name: "paused: not rolled back", to: "1", setup: func(w *world) { w.d.Spec.Paused = true }},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w := rolledOutTwice(t)
			w.d.Annotations[rollbackToAnnotation] = tt.to
			if tt.setup != nil {
				tt.setup(w)
			}
			before := w.d.DeepCopy()
			plan, err := Decide(Observed{Deployment: w.d, ReplicaSets: w.list(), Now: w.now})
			if err != nil {
				t.Fatal(err)
			}
			if equality.Semantic.DeepEqual(before, w.d) == false {
				t.Fatal("Decide changed its input")
			}
			if tt.want == nil {
				if plan.Rollback != nil {
					t.Fatalf("rollback handled: %+v", plan.Rollback)
				}
				return
			}
			rb := plan.Rollback
			if rb == nil {
				t.Fatal("rollback not handled")
			}
			// A rollback is all this sync does: no scaling, no rollout.
			if len(plan.Actions) != 0 {
				t.Fatalf("actions beside the rollback: %+v", plan.Actions)
			}
			got := rb.Deployment
			if _, ok := got.Annotations[rollbackToAnnotation]; ok {
				t.Fatal("the rollback annotation is not cleared")
			}
			if img := got.Spec.Template.Spec.Containers[0].Image; img != tt.want.image {
				t.Fatalf("template image %q, want %q", img, tt.want.image)
			}
			if _, ok := got.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey]; ok {
				t.Fatalf("template labels %v carry the pod-template-hash", got.Spec.Template.Labels)
			}
			wantAnn := map[string]string{RevisionAnnotation: "2", changeCause: tt.want.cause}
			if !equality.Semantic.DeepEqual(got.Annotations, wantAnn) {
				t.Fatalf("annotations %v, want %v", got.Annotations, wantAnn)
			}
			if got.ResourceVersion != w.d.ResourceVersion || got.UID != w.d.UID || *got.Spec.Replicas != *w.d.Spec.Replicas {
				t.Fatalf("the update is not of the observed deployment: %+v", got.ObjectMeta)
			}
			if !equality.Semantic.DeepEqual(rb.Warning, tt.want.warning) || !equality.Semantic.DeepEqual(rb.Done, tt.want.done) {
				t.Fatalf("warning %+v done %+v, want %+v %+v", rb.Warning, rb.Done, tt.want.warning, tt.want.done)
			}
		})
	}
}

// TestRollbackRollsOut: after the rollback's Update, the next syncs roll the
// Deployment out to the old ReplicaSet, which takes the next revision and
// keeps its old one in revision-history, as upstream.
func TestRollbackRollsOut(t *testing.T) {
	w := rolledOutTwice(t)
	w.d.Annotations[rollbackToAnnotation] = "0"
	w.syncDeployment()
	if _, ok := w.d.Annotations[rollbackToAnnotation]; ok || w.d.Spec.Template.Spec.Containers[0].Image != "v1" {
		t.Fatalf("after the rollback sync: annotations %v, image %s", w.d.Annotations, w.d.Spec.Template.Spec.Containers[0].Image)
	}
	w.converge(true)
	if len(w.rss) != 2 {
		t.Fatalf("%d replicasets, want 2 (the old one reused)", len(w.rss))
	}
	v1 := w.byImage("v1")
	if v1.Annotations[RevisionAnnotation] != "3" || v1.Annotations[RevisionHistoryAnnotation] != "1" || v1.Annotations[changeCause] != "create" || replicas(v1) != 2 {
		t.Fatalf("rolled-back replicaset: annotations %v, replicas %d", v1.Annotations, replicas(v1))
	}
	if w.d.Annotations[RevisionAnnotation] != "3" || w.d.Annotations[changeCause] != "create" {
		t.Fatalf("deployment annotations %v", w.d.Annotations)
	}
}

// TestRollbackThroughTheAPI: the controller loop writes the rollback back
// through the API (template, annotation gone) and records DeploymentRollback.
func TestRollbackThroughTheAPI(t *testing.T) {
	w := rolledOutTwice(t)
	w.d.Annotations[rollbackToAnnotation] = "1"
	w.d.ResourceVersion = "1"
	objs := []runtime.Object{w.d.DeepCopy()}
	for _, rs := range w.list() {
		objs = append(objs, rs.DeepCopy())
	}
	client := newClientset(objs...)
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	dc := New(client, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), recorder, clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = dc.Run(ctx, 1) }()
	defer func() { cancel(); wg.Wait(); factory.Shutdown() }()

	waitFor(t, "the rollback written", func() bool {
		got, err := client.AppsV1().Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
		_, pending := got.Annotations[rollbackToAnnotation]
		return err == nil && !pending && got.Spec.Template.Spec.Containers[0].Image == "v1" && got.Annotations[changeCause] == "create"
	})
	deadline := time.After(20 * time.Second)
	for {
		select {
		case e := <-recorder.Events:
			if strings.HasPrefix(e, "Normal "+ReasonRollbackDone+` Rolled back deployment "web" to revision 1`) {
				return
			}
		case <-deadline:
			t.Fatal("no DeploymentRollback event")
		}
	}
}

// TestPausedWithRollbackKeepsHistory: a paused Deployment cleans up old
// ReplicaSets beyond revisionHistoryLimit only while no rollback is pending
// (a rollback annotation that parses), as upstream's sync: the revision to
// roll back to must not be deleted before the Deployment is resumed.
func TestPausedWithRollbackKeepsHistory(t *testing.T) {
	for _, tt := range []struct {
		to          string
		wantDeleted bool
	}{{"", true}, {"1", false}, {"0", false}, {"one", true}} {
		t.Run("rollback.to="+tt.to, func(t *testing.T) {
			w := rolledOutTwice(t)
			w.d.Spec.Paused = true
			w.d.Spec.RevisionHistoryLimit = ptr(int32(0))
			if tt.to != "" {
				w.d.Annotations[rollbackToAnnotation] = tt.to
			}
			plan, err := Decide(Observed{Deployment: w.d, ReplicaSets: w.list(), Now: w.now})
			if err != nil {
				t.Fatal(err)
			}
			deleted := false
			for _, a := range plan.Actions {
				if a.Kind == DeleteReplicaSet {
					deleted = true
				}
			}
			if deleted != tt.wantDeleted || plan.Rollback != nil {
				t.Fatalf("old replicaset deleted: %v, want %v (rollback %+v)", deleted, tt.wantDeleted, plan.Rollback)
			}
		})
	}
}
