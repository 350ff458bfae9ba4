package cluster

import (
	"context"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestDualStackCluster runs the whole pipeline dual-stack: nodes with an
// IPv4 and an IPv6 pod CIDR run pods with an address of each family, and
// a PreferDualStack service gets an IPv4 and an IPv6 ClusterIP, Endpoints
// of its primary (IPv4) family and EndpointSlices of both.
func TestDualStackCluster(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	c, cs, stop := startForTest(t, Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", WatchCache: true, UnsafeNoFsync: true,
		ControllerManager: true, Scheduler: true, Nodes: 1, DualStackNodes: true,
		Services: ServiceOptions{ClusterIPRange: "10.96.0.0/16,fd00:10:96::/112", NodePortRange: "30000-32767"}})
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
	prefer := corev1.IPFamilyPolicyPreferDualStack
	svc, err := cs.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: labels, IPFamilyPolicy: &prefer, Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromString("http")}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(svc.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}) || len(svc.Spec.ClusterIPs) != 2 {
		t.Fatalf("service %v %v", svc.Spec.IPFamilies, svc.Spec.ClusterIPs)
	}

	var v4, v6, inEndpoints []string
	slicesBy := map[discoveryv1.AddressType][]string{}
	for {
		v4, v6, inEndpoints = nil, nil, nil
		clear(slicesBy)
		pods, err := cs.CoreV1().Pods("default").List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			if len(p.Status.PodIPs) == 2 && p.Status.PodIP == p.Status.PodIPs[0].IP {
				v4, v6 = append(v4, p.Status.PodIPs[0].IP), append(v6, p.Status.PodIPs[1].IP)
			}
		}
		if ep, err := endpoints.Get(ctx, "web", metav1.GetOptions{}); err == nil {
			for _, s := range ep.Subsets {
				for _, a := range s.Addresses {
					inEndpoints = append(inEndpoints, a.IP)
				}
			}
		}
		l, err := cs.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
		if err != nil {
			t.Fatal(err)
		}
		for _, s := range l.Items {
			for _, e := range s.Endpoints {
				if e.Conditions.Ready != nil && *e.Conditions.Ready {
					slicesBy[s.AddressType] = append(slicesBy[s.AddressType], e.Addresses...)
				}
			}
		}
		for _, l := range [][]string{v4, v6, inEndpoints, slicesBy[discoveryv1.AddressTypeIPv4], slicesBy[discoveryv1.AddressTypeIPv6]} {
			slices.Sort(l)
		}
		if len(v4) == 2 && slices.Equal(inEndpoints, v4) && slices.Equal(slicesBy[discoveryv1.AddressTypeIPv4], v4) && slices.Equal(slicesBy[discoveryv1.AddressTypeIPv6], v6) {
			break
		}
		if ctx.Err() != nil {
			t.Fatalf("pods IPv4 %v IPv6 %v; Endpoints %v; EndpointSlices %v", v4, v6, inEndpoints, slicesBy)
		}
		time.Sleep(100 * time.Millisecond)
	}
	node, err := cs.CoreV1().Nodes().Get(ctx, "node-1", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"10.244.0.0/24", "fd00:10:244::/64"}; !slices.Equal(node.Spec.PodCIDRs, want) || node.Spec.PodCIDR != want[0] {
		t.Fatalf("node podCIDRs %v (podCIDR %s), want %v", node.Spec.PodCIDRs, node.Spec.PodCIDR, want)
	}
}
