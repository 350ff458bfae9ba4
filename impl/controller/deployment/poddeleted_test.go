package deployment

import (
	"context"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/kubeproof/kubeproof/impl/controller/replicaset"
)

// TestPodDeletionWakesOnlyAnEmptiedRecreate: a pod deletion syncs the
// Deployment behind the pod's ReplicaSet only when it is a Recreate one and
// none of its pods is left (those the selector matches controlled by one of
// its ReplicaSets), as upstream's deletePod; a rolling update hears of pods
// through its ReplicaSets' status.
func TestPodDeletionWakesOnlyAnEmptiedRecreate(t *testing.T) {
	rsOf := func(d *appsv1.Deployment) *appsv1.ReplicaSet {
		return &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Name: "web-old", Namespace: "ns", UID: "rs-uid",
			Labels: map[string]string{"app": "web"}, OwnerReferences: []metav1.OwnerReference{ControllerRef(d)}}}
	}
	pod := func(name string, labels map[string]string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "web-old", UID: "rs-uid", Controller: ptr(true)}}}}
	}
	web := map[string]string{"app": "web"}
	for _, tt := range []struct {
		name     string
		strategy appsv1.DeploymentStrategyType
		left     []*corev1.Pod
		want     int
	}{
		{"rolling update", appsv1.RollingUpdateDeploymentStrategyType, nil, 0},
		{"recreate with a pod left", appsv1.RecreateDeploymentStrategyType, []*corev1.Pod{pod("b", web)}, 0},
		{"recreate with no pod left", appsv1.RecreateDeploymentStrategyType, nil, 1},
		{"recreate with only a pod out of the selector left", appsv1.RecreateDeploymentStrategyType, []*corev1.Pod{pod("b", map[string]string{"app": "debug"})}, 1},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment(2, "v2", intstr.FromInt32(1), intstr.FromInt32(0))
			d.Spec.Strategy = appsv1.DeploymentStrategy{Type: tt.strategy}
			factory := informers.NewSharedInformerFactory(fake.NewClientset(), 0)
			c := New(fake.NewClientset(), factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), record.NewFakeRecorder(10), clock.RealClock{})
			defer c.queue.ShutDown()
			add := func(inf cache.SharedIndexInformer, obj any) {
				if err := inf.GetIndexer().Add(obj); err != nil {
					t.Fatal(err)
				}
			}
			add(factory.Apps().V1().Deployments().Informer(), d)
			add(factory.Apps().V1().ReplicaSets().Informer(), rsOf(d))
			for _, p := range tt.left {
				add(factory.Core().V1().Pods().Informer(), p)
			}
			c.podDeleted(pod("a", web))
			if got := c.queue.Len(); got != tt.want {
				t.Fatalf("%d deployments queued, want %d", got, tt.want)
			}
		})
	}
}

// TestLoopRecreateCompletes: with the ReplicaSet controller running, a
// Recreate rollout scales the old pods away and, woken by the last one's
// deletion, creates the new ReplicaSet's.
func TestLoopRecreateCompletes(t *testing.T) {
	d := newDeployment(2, "v1", intstr.FromInt32(1), intstr.FromInt32(0))
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	client := newClientset(d)
	factory := informers.NewSharedInformerFactory(client, 0)
	dc := New(client, factory.Apps().V1().Deployments(), factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), record.NewFakeRecorder(100), clock.RealClock{})
	rsc := replicaset.New(client, factory.Apps().V1().ReplicaSets(), factory.Core().V1().Pods(), record.NewFakeRecorder(100), clock.RealClock{})
	ctx, cancel := context.WithCancel(context.Background())
	factory.Start(ctx.Done())
	var wg sync.WaitGroup
	wg.Add(2)
	go func() { defer wg.Done(); _ = dc.Run(ctx, 1) }()
	go func() { defer wg.Done(); _ = rsc.Run(ctx, 1) }()
	defer func() { cancel(); wg.Wait(); factory.Shutdown() }()

	images := func() map[string]int {
		pods, _ := client.CoreV1().Pods("ns").List(ctx, metav1.ListOptions{})
		n := map[string]int{}
		for _, p := range pods.Items {
			n[p.Spec.Containers[0].Image]++
		}
		return n
	}
	waitFor(t, "2 v1 pods", func() bool { n := images(); return n["v1"] == 2 && len(n) == 1 })
	cur, err := client.AppsV1().Deployments("ns").Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cur.Spec.Template.Spec.Containers[0].Image = "v2"
	cur.Generation++
	if _, err := client.AppsV1().Deployments("ns").Update(ctx, cur, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "2 v2 pods and no v1 pod", func() bool { n := images(); return n["v2"] == 2 && len(n) == 1 })
}
