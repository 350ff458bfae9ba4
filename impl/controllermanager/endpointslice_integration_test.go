package controllermanager_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/impl/controller/endpointslice"
	"github.com/kubeproof/kubeproof/impl/controllermanager"
)

// TestEndpointSliceControllerUnderRBAC runs the EndpointSlice controller
// and the garbage collector, each as its own service account under RBAC
// (system:controller:endpointslice-controller,
// system:controller:generic-garbage-collector): a service with a selector
// gets one slice owned by it with its pods' endpoints (conditions, named
// target port, node and zone, the last-change-trigger-time annotation);
// deciding again over the stored objects writes nothing; a deleted pod
// leaves the slice; a service without a selector gets none; a deleted
// service's slice is deleted by the garbage collector through its owner
// reference.
func TestEndpointSliceControllerUnderRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	admin, root, cmCfg := rbacClients(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := admin.CoreV1().Pods("default")
	services := admin.CoreV1().Services("default")
	endpointSlices := admin.DiscoveryV1().EndpointSlices("default")

	if _, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1",
		Labels: map[string]string{corev1.LabelTopologyZone: "zone-a"}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	createPod := func(name, ip string, ready bool) {
		p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: "n1", Containers: []corev1.Container{{Name: "c", Image: "nginx",
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: status}}}
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("setting status of %s: %v", name, err)
		}
	}
	createPod("a", "10.1.0.1", true)
	createPod("b", "10.1.0.2", true)
	createPod("c", "10.1.0.3", false)
	if _, err := services.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web", Labels: map[string]string{"tier": "front"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := services.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "manual"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := controllermanager.DefaultConfig()
	cfg.LeaderElect = false
	cfg.UseServiceAccountCredentials = true
	cfg.Controllers = []string{controllermanager.EndpointSlice, controllermanager.GarbageCollector}
	var wg sync.WaitGroup
	cmErr := make(chan error, 1)
	wg.Add(1)
	go func() { defer wg.Done(); cmErr <- controllermanager.Run(ctx, root, cmCfg, cfg) }()
	defer func() {
		cancel()
		wg.Wait()
		if err := <-cmErr; err != nil {
			t.Errorf("controller manager: %v", err)
		}
	}()

	slicesOf := func(svc string) ([]discoveryv1.EndpointSlice, error) {
		l, err := endpointSlices.List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + svc})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	// endpointsAre renders the one slice's endpoints as ip/ready.
	endpointsAre := func(want ...string) func() (bool, error) {
		return func() (bool, error) {
			ss, err := slicesOf("web")
			if err != nil || len(ss) != 1 {
				return false, err
			}
			var got []string
			for _, e := range ss[0].Endpoints {
				got = append(got, fmt.Sprintf("%s/%t", e.Addresses[0], *e.Conditions.Ready))
			}
			slices.Sort(got)
			return slices.Equal(got, want), nil
		}
	}
	eventually(t, "a slice of the pods", endpointsAre("10.1.0.1/true", "10.1.0.2/true", "10.1.0.3/false"))
	ss, err := slicesOf("web")
	if err != nil {
		t.Fatal(err)
	}
	s := ss[0]
	ref := metav1.GetControllerOf(&s)
	if ref == nil || ref.Kind != "Service" || ref.Name != "web" || !*ref.BlockOwnerDeletion ||
		s.Labels[discoveryv1.LabelManagedBy] != endpointslice.ControllerName || s.Labels["tier"] != "front" ||
		len(s.Ports) != 1 || *s.Ports[0].Port != 8080 || *s.Ports[0].Name != "http" ||
		*s.Endpoints[0].Zone != "zone-a" || *s.Endpoints[0].NodeName != "n1" || s.Annotations[corev1.EndpointsLastChangeTriggerTime] == "" {
		t.Fatalf("slice %+v", s)
	}

	// Deciding over the objects as the API server returns them (its
	// defaults) writes nothing: an unchanged state never rewrites.
	svc, err := services.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podList, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var podPtrs []*corev1.Pod
	for i := range podList.Items {
		podPtrs = append(podPtrs, &podList.Items[i])
	}
	nodes := func(string) (string, bool) { return "zone-a", true }
	if plan := endpointslice.Reconcile(endpointslice.Input{Service: svc, Pods: podPtrs, Slices: []*discoveryv1.EndpointSlice{&s}, Nodes: nodes}); !plan.Empty() {
		t.Fatalf("the stored slice differs from the decided one: %+v", plan)
	}

	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted pod leaves the slice", endpointsAre("10.1.0.2/true", "10.1.0.3/false"))

	if manual, err := slicesOf("manual"); err != nil || len(manual) != 0 {
		t.Fatalf("a service without a selector got slices: %v %v", manual, err)
	}

	if err := services.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted service's slice deleted by the garbage collector", func() (bool, error) {
		ss, err := slicesOf("web")
		return err == nil && len(ss) == 0, err
	})
}
