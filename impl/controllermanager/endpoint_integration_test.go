package controllermanager_test

import (
	"context"
	"slices"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	endpointsctl "github.com/kubeproof/kubeproof/impl/controller/endpoints"
	"github.com/kubeproof/kubeproof/impl/controllermanager"
)

// TestEndpointControllerUnderRBAC runs the endpoints controller alone, as
// its own service account (system:controller:endpoint-controller) under
// RBAC: a service with a selector gets Endpoints with its ready pods'
// IPs (a not-ready pod among notReadyAddresses, a named target port
// resolved through the pod's container ports); a deleted pod leaves
// them; a service without a selector keeps the Endpoints its user wrote;
// a deleted service's Endpoints are deleted.
func TestEndpointControllerUnderRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	admin, root, cmCfg := rbacClients(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := admin.CoreV1().Pods("default")
	services := admin.CoreV1().Services("default")
	endpoints := admin.CoreV1().Endpoints("default")

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
	if _, err := services.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := services.Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "manual"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	manual := &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "manual"}, Subsets: []corev1.EndpointSubset{{
		Addresses: []corev1.EndpointAddress{{IP: "192.168.0.9"}}, Ports: []corev1.EndpointPort{{Port: 80}}}}}
	if _, err := endpoints.Create(ctx, manual, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := controllermanager.DefaultConfig()
	cfg.LeaderElect = false
	cfg.UseServiceAccountCredentials = true
	cfg.Controllers = []string{controllermanager.Endpoint}
	// Pod changes wait this long (--endpoint-updates-batch-period).
	cfg.EndpointUpdatesBatchPeriod = 200 * time.Millisecond
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

	ips := func(as []corev1.EndpointAddress) []string {
		var out []string
		for _, a := range as {
			out = append(out, a.IP)
		}
		return out
	}
	hasEndpoints := func(ready, notReady []string) func() (bool, error) {
		return func() (bool, error) {
			ep, err := endpoints.Get(ctx, "web", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return false, nil
			}
			if err != nil || len(ep.Subsets) != 1 {
				return false, err
			}
			s := ep.Subsets[0]
			return slices.Equal(ips(s.Addresses), ready) && slices.Equal(ips(s.NotReadyAddresses), notReady) &&
				len(s.Ports) == 1 && s.Ports[0].Port == 8080 && s.Ports[0].Name == "http", nil
		}
	}
	eventually(t, "Endpoints of the pods", hasEndpoints([]string{"10.1.0.1", "10.1.0.2"}, []string{"10.1.0.3"}))

	// The decision over the objects as the API server returns them (its
	// defaulting and normalization) is to write nothing: an unchanged
	// state never rewrites. (The API server skips an identical update,
	// so a rewrite would not show in resourceVersions.)
	svc, err := services.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	podList, err := pods.List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	stored, err := endpoints.Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var podPtrs []*corev1.Pod
	for i := range podList.Items {
		podPtrs = append(podPtrs, &podList.Items[i])
	}
	if plan := endpointsctl.Decide(svc, podPtrs, stored); plan.Action != endpointsctl.None {
		t.Fatalf("the stored Endpoints differ from the decided ones: %v\nstored %+v\ndecided %+v", plan.Action, stored, plan.Endpoints)
	}
	// Written by the service's first sync: the trigger time is its creation.
	if got, want := stored.Annotations[corev1.EndpointsLastChangeTriggerTime], svc.CreationTimestamp.UTC().Format(time.RFC3339Nano); got != want {
		t.Fatalf("last-change-trigger-time %q, want the service's creation %q", got, want)
	}

	if err := pods.Delete(ctx, "a", metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted pod leaves the Endpoints", hasEndpoints([]string{"10.1.0.2"}, []string{"10.1.0.3"}))

	if got, err := endpoints.Get(ctx, "manual", metav1.GetOptions{}); err != nil || ips(got.Subsets[0].Addresses)[0] != "192.168.0.9" {
		t.Fatalf("Endpoints of a service without a selector changed: %v %v", got, err)
	}

	if err := services.Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the deleted service's Endpoints deleted", func() (bool, error) {
		_, err := endpoints.Get(ctx, "web", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return true, nil
		}
		return false, err
	})
}
