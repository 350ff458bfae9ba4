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

	"github.com/kubeproof/kubeproof/impl/controller/endpointslicemirroring"
	"github.com/kubeproof/kubeproof/impl/controllermanager"
)

// TestEndpointSliceMirroringUnderRBAC runs the EndpointSliceMirroring
// controller as its own service account under RBAC
// (system:controller:endpointslicemirroring-controller): the Endpoints a
// user writes for a service without a selector are mirrored into a slice
// owned by them, follow their changes, and the slice goes once the
// Endpoints are labelled skip-mirror; the API server's `kubernetes`
// Endpoints (skip-mirror) are never mirrored.
func TestEndpointSliceMirroringUnderRBAC(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	admin, root, cmCfg := rbacClients(t)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	if _, err := admin.CoreV1().Services("default").Create(ctx, &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "db"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Name: "sql", Port: 5432}}}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	endpoints := admin.CoreV1().Endpoints("default")
	ep, err := endpoints.Create(ctx, &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: map[string]string{"app": "db"}},
		Subsets: []corev1.EndpointSubset{{Addresses: []corev1.EndpointAddress{{IP: "192.168.0.1"}},
			NotReadyAddresses: []corev1.EndpointAddress{{IP: "192.168.0.2"}}, Ports: []corev1.EndpointPort{{Name: "sql", Port: 5432}}}}},
		metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	cfg := controllermanager.DefaultConfig()
	cfg.LeaderElect = false
	cfg.UseServiceAccountCredentials = true
	cfg.Controllers = []string{controllermanager.EndpointSliceMirroring}
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

	mirrored := func(name string) ([]discoveryv1.EndpointSlice, error) {
		l, err := admin.DiscoveryV1().EndpointSlices("default").List(ctx, metav1.ListOptions{LabelSelector: discoveryv1.LabelServiceName + "=" + name +
			"," + discoveryv1.LabelManagedBy + "=" + endpointslicemirroring.ControllerName})
		if err != nil {
			return nil, err
		}
		return l.Items, nil
	}
	mirrorIs := func(want ...string) func() (bool, error) {
		return func() (bool, error) {
			ss, err := mirrored("db")
			if err != nil || len(ss) != 1 {
				return len(want) == 0 && err == nil && len(ss) == 0, err
			}
			var got []string
			for _, e := range ss[0].Endpoints {
				got = append(got, fmt.Sprintf("%s/%t", e.Addresses[0], *e.Conditions.Ready))
			}
			slices.Sort(got)
			return slices.Equal(got, want), nil
		}
	}
	eventually(t, "the Endpoints mirrored", mirrorIs("192.168.0.1/true", "192.168.0.2/false"))
	ss, err := mirrored("db")
	if err != nil {
		t.Fatal(err)
	}
	if ref := metav1.GetControllerOf(&ss[0]); ref == nil || ref.Kind != "Endpoints" || ref.UID != ep.UID || ss[0].Labels["app"] != "db" ||
		*ss[0].Ports[0].Port != 5432 || *ss[0].Ports[0].Name != "sql" || *ss[0].Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("mirrored slice %+v", ss[0])
	}

	ep.Subsets[0].NotReadyAddresses = nil
	ep.Subsets[0].Addresses = append(ep.Subsets[0].Addresses, corev1.EndpointAddress{IP: "192.168.0.3"})
	if ep, err = endpoints.Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the slice follows the Endpoints", mirrorIs("192.168.0.1/true", "192.168.0.3/true"))

	if k, err := mirrored("kubernetes"); err != nil || len(k) != 0 {
		t.Fatalf("the kubernetes Endpoints were mirrored: %v %v", k, err)
	}

	ep.Labels[discoveryv1.LabelSkipMirror] = "true"
	if _, err = endpoints.Update(ctx, ep, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "skip-mirror removes the slice", mirrorIs())
}
