package deployment_test

import (
	"context"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/cluster/clustertest"
	"github.com/kubeproof/kubeproof/impl/controller/deployment"
)

func eventually(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		ok, err := cond()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s (last error: %v)", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// startController starts a cluster and the Deployment controller alone
// (no ReplicaSet controller: no pods), with its events stored through the
// API as kube-controller-manager's are.
func startController(t *testing.T) (context.Context, kubernetes.Interface) {
	t.Helper()
	_, cs := clustertest.Start(t, clustertest.Options{})
	ctx, cancel := context.WithCancel(context.Background())
	factory := informers.NewSharedInformerFactory(cs, 0)
	b := record.NewBroadcaster(record.WithContext(ctx))
	b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
	recorder := b.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "deployment-controller"})
	dc := deployment.New(cs, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), recorder, clock.RealClock{})
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); _ = dc.Run(ctx, 1) }()
	t.Cleanup(func() { cancel(); wg.Wait(); factory.Shutdown(); b.Shutdown() })
	return ctx, cs
}

func newWeb(image string) *appsv1.Deployment {
	replicas := int32(2)
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web", Annotations: map[string]string{"kubernetes.io/change-cause": "create"}},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "web", Image: image}}},
			},
		},
	}
}

// TestRevisionKeepsTheGeneration: the controller writes the Deployment's
// revision annotation with its status, through the status subresource, as
// upstream (getNewReplicaSet's UpdateStatus), so only the user's changes
// move metadata.generation: a new Deployment stays at generation 1, an image
// change takes it to 2, and each is observed.
func TestRevisionKeepsTheGeneration(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	ctx, cs := startController(t)
	deps := cs.AppsV1().Deployments("default")
	if _, err := deps.Create(ctx, newWeb("nginx:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	observed := func(revision string) func() (bool, error) {
		return func() (bool, error) {
			got, err := deps.Get(ctx, "web", metav1.GetOptions{})
			return err == nil && got.Annotations[deployment.RevisionAnnotation] == revision && got.Status.ObservedGeneration == got.Generation, err
		}
	}
	eventually(t, "revision 1 observed", observed("1"))
	if got, _ := deps.Get(ctx, "web", metav1.GetOptions{}); got.Generation != 1 {
		t.Fatalf("generation %d after the controller set revision 1, want 1", got.Generation)
	}
	patch := `{"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}`
	if _, err := deps.Patch(ctx, "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "revision 2 observed", observed("2"))
	if got, _ := deps.Get(ctx, "web", metav1.GetOptions{}); got.Generation != 2 {
		t.Fatalf("generation %d after one image change, want 2", got.Generation)
	}
}

// TestRollbackAnnotationAgainstTheAPIServer: a user sets
// deprecated.deployment.rollback.to through the API server; the controller
// writes the previous revision's template and change-cause back with the
// annotation gone, records a DeploymentRollback Event, and the next syncs
// reuse the old ReplicaSet under revision 3 (no ReplicaSet controller runs:
// revisions move as soon as the templates do).
func TestRollbackAnnotationAgainstTheAPIServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	ctx, cs := startController(t)
	deps := cs.AppsV1().Deployments("default")
	if _, err := deps.Create(ctx, newWeb("nginx:1"), metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	revision := func(want string) func() (bool, error) {
		return func() (bool, error) {
			got, err := deps.Get(ctx, "web", metav1.GetOptions{})
			return err == nil && got.Annotations[deployment.RevisionAnnotation] == want, err
		}
	}
	eventually(t, "revision 1", revision("1"))
	patch := func(p string) {
		t.Helper()
		if _, err := deps.Patch(ctx, "web", types.StrategicMergePatchType, []byte(p), metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	patch(`{"metadata":{"annotations":{"kubernetes.io/change-cause":"edit"}},"spec":{"template":{"spec":{"containers":[{"name":"web","image":"nginx:2"}]}}}}`)
	eventually(t, "revision 2", revision("2"))

	patch(`{"metadata":{"annotations":{"deprecated.deployment.rollback.to":"0"}}}`)
	eventually(t, "the rollback written back", func() (bool, error) {
		got, err := deps.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		_, pending := got.Annotations["deprecated.deployment.rollback.to"]
		return !pending && got.Spec.Template.Spec.Containers[0].Image == "nginx:1" && got.Annotations["kubernetes.io/change-cause"] == "create", nil
	})
	eventually(t, "revision 3", revision("3"))
	rss, err := cs.AppsV1().ReplicaSets("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
	if err != nil || len(rss.Items) != 2 {
		t.Fatalf("%d replicasets (%v), want 2: the old one reused", len(rss.Items), err)
	}
	for _, rs := range rss.Items {
		if rs.Spec.Template.Spec.Containers[0].Image == "nginx:1" &&
			(rs.Annotations[deployment.RevisionAnnotation] != "3" || rs.Annotations[deployment.RevisionHistoryAnnotation] != "1") {
			t.Fatalf("rolled-back replicaset annotations %v", rs.Annotations)
		}
	}
	eventually(t, "a DeploymentRollback event", func() (bool, error) {
		evs, err := cs.CoreV1().Events("default").List(ctx, metav1.ListOptions{FieldSelector: "involvedObject.name=web,reason=DeploymentRollback"})
		if err != nil {
			return false, err
		}
		for _, e := range evs.Items {
			if e.Type == corev1.EventTypeNormal && e.Message == `Rolled back deployment "web" to revision 1` {
				return true, nil
			}
		}
		return false, nil
	})
}
