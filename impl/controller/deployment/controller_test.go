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
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/internal/fakeapi"
	"github.com/kubeproof/kubeproof/impl/controller/replicaset"
)

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
	client := fakeapi.NewClientset(d)
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
