package deployment

import (
	"context"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8sruntime "k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/internal/fakeapi"
	"github.com/kubeproof/kubeproof/impl/controller/replicaset"
)

// newClientset is fakeapi's clientset with the Deployment status
// subresource closer to the registry's (which keeps only spec and labels):
// a status update writes the annotations too, where the controller keeps
// the revision, as upstream's.
func newClientset(objs ...k8sruntime.Object) *fake.Clientset {
	c := fakeapi.NewClientset(objs...)
	c.PrependReactor("update", "deployments", func(action k8stesting.Action) (bool, k8sruntime.Object, error) {
		update, ok := action.(k8stesting.UpdateAction)
		if !ok || action.GetSubresource() != "status" {
			return false, nil, nil
		}
		incoming, ok := update.GetObject().(*appsv1.Deployment)
		if !ok {
			return false, nil, nil
		}
		obj, err := c.Tracker().Get(action.GetResource(), action.GetNamespace(), incoming.Name)
		if err != nil {
			return true, nil, err
		}
		out := obj.(*appsv1.Deployment).DeepCopy()
		out.Annotations, out.Status = incoming.Annotations, incoming.Status
		if err := c.Tracker().Update(action.GetResource(), out, action.GetNamespace()); err != nil {
			return true, nil, err
		}
		return true, out, nil
	})
	return c
}

func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

func TestLoopCreatesReplicaSetAndPods(t *testing.T) {
	before := runtime.NumGoroutine()
	d := newDeployment(3, "nginx", intstr.FromString("25%"), intstr.FromString("25%"))
	client := newClientset(d)
	factory := informers.NewSharedInformerFactory(client, 0)
	recorder := record.NewFakeRecorder(100)
	dc := New(client, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), recorder, clock.RealClock{})
	rsc := replicaset.New(client, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), record.NewFakeRecorder(100), clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = dc.Run(ctx, 1) }()
	go func() { defer wg.Done(); _ = rsc.Run(ctx, 1) }()

	hash := ComputeHash(&d.Spec.Template, nil)
	var rs *appsv1.ReplicaSet
	waitFor(t, "replicaset web-"+hash, func() bool {
		got, err := client.AppsV1().ReplicaSets("ns").Get(ctx, "web-"+hash, metav1.GetOptions{})
		rs = got
		return err == nil
	})
	if *rs.Spec.Replicas != 3 || rs.Spec.Template.Labels[appsv1.DefaultDeploymentUniqueLabelKey] != hash ||
		rs.Spec.Selector.MatchLabels[appsv1.DefaultDeploymentUniqueLabelKey] != hash || rs.Annotations[RevisionAnnotation] != "1" {
		t.Fatalf("replicaset %+v", rs)
	}
	if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID {
		t.Fatal("replicaset lacks the deployment's controller ref")
	}
	waitFor(t, "3 pods", func() bool {
		pods, _ := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
		return len(pods.Items) == 3
	})
	waitFor(t, "deployment revision and status", func() bool {
		got, _ := client.AppsV1().Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
		return got.Annotations[RevisionAnnotation] == "1" && got.Status.ObservedGeneration == 1 && got.Status.Replicas == 3
	})
	cancel()
	wg.Wait()
	factory.Shutdown()
	close(recorder.Events)
	found := false
	for e := range recorder.Events {
		if strings.Contains(e, "ScalingReplicaSet Scaled up replica set web-"+hash+" from 0 to 3") {
			found = true
		}
	}
	if !found {
		t.Error("no ScalingReplicaSet event")
	}
	waitFor(t, "goroutines to exit", func() bool { return runtime.NumGoroutine() <= before+2 })
}
