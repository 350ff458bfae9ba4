package cluster

import (
	"context"
	"net"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
)

// TestServiceOptionsReachTheAPIServer: --service-cluster-ip-range,
// --service-node-port-range and --advertise-address decide the kubernetes
// service's ClusterIP, what node ports are allowed and its endpoints.
func TestServiceOptionsReachTheAPIServer(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, err := Start(ctx, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		Services: ServiceOptions{ClusterIPRange: "10.0.0.0/24", NodePortRange: "31000-31010", AdvertiseAddress: net.ParseIP("192.0.2.77")}})
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := c.Stop(); err != nil {
			t.Error(err)
		}
	}()
	cs := kubernetes.NewForConfigOrDie(c.AdminConfig)
	var svcIP string
	deadline := time.Now().Add(30 * time.Second)
	for {
		svc, err := cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err == nil {
			svcIP = svc.Spec.ClusterIP
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("kubernetes service: %v", err)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if svcIP != "10.0.0.1" {
		t.Fatalf("kubernetes service ClusterIP %s, want 10.0.0.1 (first of --service-cluster-ip-range)", svcIP)
	}
	ep, err := quietEndpoints(t, c, "default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0 || ep.Subsets[0].Addresses[0].IP != "192.0.2.77" {
		t.Fatalf("kubernetes endpoints %+v, want the advertised address 192.0.2.77", ep.Subsets)
	}
}

// TestServiceEndpointsFollowADeploymentsPods runs the whole pipeline
// (controller manager, scheduler, simulated nodes): a Service selecting a
// Deployment's pods gets Endpoints and EndpointSlices with the running
// pods' IPs on its target port, and a deleted pod's IP leaves them (its
// replacement's joins).
func TestServiceEndpointsFollowADeploymentsPods(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, cs, stop := startForTest(t, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		ControllerManager: true, Scheduler: true, Nodes: 2})
	endpoints := quietEndpoints(t, c, "default")
	defer func() {
		if err := stop(); err != nil {
			t.Error(err)
		}
	}()
	labels := map[string]string{"app": "web"}
	replicas := int32(2)
	if _, err := cs.AppsV1().Deployments("default").Create(ctx, &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{Replicas: &replicas, Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
				Containers: []corev1.Container{{Name: "c", Image: "nginx", Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080}}}}}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}},
		metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// runningIPs are the IPs of the Deployment's ready pods, sorted.
	runningIPs := func() []string {
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		var ips []string
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || p.Status.PodIP == "" {
				continue
			}
			for _, cond := range p.Status.Conditions {
				if cond.Type == corev1.PodReady && cond.Status == corev1.ConditionTrue {
					ips = append(ips, p.Status.PodIP)
				}
			}
		}
		slices.Sort(ips)
		return ips
	}
	endpointIPs := func() []string {
		ep, err := endpoints.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return nil
		}
		var ips []string
		for _, s := range ep.Subsets {
			if len(s.Ports) != 1 || s.Ports[0].Port != 8080 {
				return nil
			}
			for _, a := range s.Addresses {
				ips = append(ips, a.IP)
			}
		}
		return ips
	}
	// sliceIPs are the ready addresses of the service's EndpointSlices on
	// the target port, sorted.
	sliceIPs := func() []string {
		l, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			return nil
		}
		var ips []string
		for _, s := range l.Items {
			if len(s.Ports) != 1 || s.Ports[0].Port == nil || *s.Ports[0].Port != 8080 {
				return nil
			}
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					ips = append(ips, e.Addresses...)
				}
			}
		}
		slices.Sort(ips)
		return ips
	}
	waitEndpoints := func(what string, ok func(want, got []string) bool) []string {
		t.Helper()
		for {
			want, got, inSlices := runningIPs(), endpointIPs(), sliceIPs()
			if len(want) == 2 && ok(want, got) && ok(want, inSlices) {
				return got
			}
			if ctx.Err() != nil {
				t.Fatalf("%s: Endpoints %v, EndpointSlices %v, ready pods %v", what, got, inSlices, want)
			}
			time.Sleep(100 * time.Millisecond)
		}
	}
	first := waitEndpoints("Endpoints of the two running pods", slices.Equal)

	pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web", FieldSelector: "status.podIP=" + first[0]})
	if err != nil || len(pods.Items) != 1 {
		t.Fatalf("the pod of %s: %v %v", first[0], pods, err)
	}
	if err := cs.CoreV1().Pods("default").Delete(ctx, pods.Items[0].Name, metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	waitEndpoints("the deleted pod's IP leaves the Endpoints", func(want, got []string) bool {
		return slices.Equal(want, got) && !slices.Contains(got, first[0])
	})
}
