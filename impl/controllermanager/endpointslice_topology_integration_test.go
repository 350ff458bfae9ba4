package controllermanager_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kubeproof/kubeproof/impl/controllermanager"
)

// TestEndpointSliceTopologyHintsUnderRBAC: with Ready nodes in three
// zones, a service with service.kubernetes.io/topology-mode: Auto gets
// same-zone hints on its slice and a TopologyAwareHintsEnabled event,
// written by the EndpointSlice controller under its own service account;
// when one zone loses its endpoints the hints go and a
// TopologyAwareHintsDisabled warning is recorded.
func TestEndpointSliceTopologyHintsUnderRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	admin, root, cmCfg := rbacClients(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	pods := admin.CoreV1().Pods("default")

	for _, zone := range []string{"a", "b", "c"} {
		n, err := admin.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "node-" + zone,
			Labels: map[string]string{corev1.LabelTopologyZone: "zone-" + zone}}}, metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue}}
		if _, err := admin.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	for i, name := range []string{"a1", "a2", "b1", "b2", "c1", "c2"} {
		p, err := pods.Create(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{"app": "web"}},
			Spec: corev1.PodSpec{NodeName: "node-" + name[:1], Containers: []corev1.Container{{Name: "c", Image: "nginx"}}}},
			metav1.CreateOptions{})
		if err != nil {
			t.Fatal(err)
		}
		ip := fmt.Sprintf("10.1.0.%d", i+1)
		p.Status = corev1.PodStatus{Phase: corev1.PodRunning, PodIP: ip, PodIPs: []corev1.PodIP{{IP: ip}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}}
		if _, err := pods.UpdateStatus(ctx, p, metav1.UpdateOptions{}); err != nil {
			t.Fatalf("setting status of %s: %v", name, err)
		}
	}
	if _, err := admin.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "web",
		Annotations: map[string]string{corev1.AnnotationTopologyMode: "Auto"}},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"},
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080)}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	cfg := controllermanager.DefaultConfig()
	cfg.LeaderElect = false
	cfg.UseServiceAccountCredentials = true
	cfg.Controllers = []string{controllermanager.EndpointSlice}
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

	// hintsAre renders the slices' endpoints as ip:hinted zone.
	hintsAre := func(want ...string) func() (bool, error) {
		return func() (bool, error) {
			l, err := admin.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=web"})
			if err != nil {
				return false, err
			}
			var got []string
			for _, s := range l.Items {
				for _, e := range s.Endpoints {
					h := "-"
					if e.Hints != nil && len(e.Hints.ForZones) == 1 {
						h = e.Hints.ForZones[0].Name
					}
					got = append(got, e.Addresses[0]+":"+h)
				}
			}
			slices.Sort(got)
			return slices.Equal(got, want), nil
		}
	}
	eventOf := func(reason, message string) func() (bool, error) {
		return func() (bool, error) {
			l, err := admin.CoreV1().Events("default").List(ctx, metav1.ListOptions{})
			if err != nil {
				return false, err
			}
			return slices.ContainsFunc(l.Items, func(e corev1.Event) bool {
				return e.InvolvedObject.Kind == "Service" && e.InvolvedObject.Name == "web" && e.Reason == reason &&
					strings.Contains(e.Message, message) && e.Source.Component == "endpoint-slice-controller"
			}), nil
		}
	}
	eventually(t, "same-zone hints", hintsAre("10.1.0.1:zone-a", "10.1.0.2:zone-a", "10.1.0.3:zone-b", "10.1.0.4:zone-b",
		"10.1.0.5:zone-c", "10.1.0.6:zone-c"))
	eventually(t, "the enabled event", eventOf("TopologyAwareHintsEnabled", "addressType: IPv4"))

	for _, name := range []string{"c1", "c2"} {
		if err := pods.Delete(ctx, name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}); err != nil {
			t.Fatal(err)
		}
	}
	eventually(t, "no hints", hintsAre("10.1.0.1:-", "10.1.0.2:-", "10.1.0.3:-", "10.1.0.4:-"))
	eventually(t, "the disabled warning", eventOf("TopologyAwareHintsDisabled", "(4 endpoints, 3 zones)"))
}
