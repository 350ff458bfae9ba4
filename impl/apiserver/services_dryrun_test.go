package apiserver_test

import (
	"context"
	"net/netip"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// A dry-run create, update or apply of a service answers with the
// ClusterIP and NodePorts the write would take (kubectl create service
// --dry-run=server -o yaml shows them), refuses taken values as the write
// would, and takes nothing: a real create then gets the values shown.
func TestServiceDryRunShowsAllocations(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) {
		c.ServiceClusterIPRange = "10.0.0.0/28"
		c.ServiceNodePortRange = "30000-30009"
	})
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	dry := metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}
	cidr := netip.MustParsePrefix("10.0.0.0/28")

	shown, err := svcs.Create(ctx, newService("x", corev1.ServiceTypeNodePort, "", 0), dry)
	if err != nil {
		t.Fatal(err)
	}
	ip, err := netip.ParseAddr(shown.Spec.ClusterIP)
	if err != nil || !cidr.Contains(ip) || ip == netip.MustParseAddr("10.0.0.1") {
		t.Fatalf("dry run clusterIP %q: want a free address of %s (10.0.0.1 is the kubernetes service's)", shown.Spec.ClusterIP, cidr)
	}
	port := shown.Spec.Ports[0].NodePort
	if port < 30000 || port > 30009 {
		t.Fatalf("dry run nodePort %d", port)
	}
	if _, err := svcs.Get(ctx, "x", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry run stored the service: %v", err)
	}
	// Taken values are refused as a real create refuses them.
	_, err = svcs.Create(ctx, newService("y", corev1.ServiceTypeClusterIP, "10.0.0.1", 0), dry)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Fatalf("dry run with the kubernetes service's IP: %v, want 422 provided IP is already allocated", err)
	}
	// Nothing was reserved: the real create can have what was shown.
	real, err := svcs.Create(ctx, newService("x", corev1.ServiceTypeNodePort, shown.Spec.ClusterIP, port), metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("real create of the values a dry run showed: %v", err)
	}
	_, err = svcs.Create(ctx, newService("z", corev1.ServiceTypeNodePort, "", port), dry)
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided port is already allocated") {
		t.Fatalf("dry run with a taken node port: %v", err)
	}

	// A dry-run type change NodePort -> ClusterIP shows the port dropped
	// and keeps it held; ClusterIP -> NodePort shows a new one.
	upd := real.DeepCopy()
	upd.Spec.Type = corev1.ServiceTypeClusterIP
	upd.Spec.ExternalTrafficPolicy = ""
	upd.Spec.Ports[0].NodePort = 0
	got, err := svcs.Update(ctx, upd, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.Ports[0].NodePort != 0 || got.Spec.Type != corev1.ServiceTypeClusterIP {
		t.Fatalf("dry-run NodePort -> ClusterIP: %+v", got.Spec)
	}
	if _, err := svcs.Create(ctx, newService("z", corev1.ServiceTypeNodePort, "", port), metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("the node port was released by a dry-run update: %v", err)
	}
	cip, err := svcs.Create(ctx, newService("c", corev1.ServiceTypeClusterIP, "", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	upd = cip.DeepCopy()
	upd.Spec.Type = corev1.ServiceTypeNodePort
	got, err = svcs.Update(ctx, upd, metav1.UpdateOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if p := got.Spec.Ports[0].NodePort; p < 30000 || p > 30009 || p == port {
		t.Fatalf("dry-run ClusterIP -> NodePort showed node port %d (taken: %d)", p, port)
	}
	if stored, err := svcs.Get(ctx, "c", metav1.GetOptions{}); err != nil || stored.Spec.Type != corev1.ServiceTypeClusterIP || stored.Spec.Ports[0].NodePort != 0 {
		t.Fatalf("dry-run update changed the stored service: %v %+v", err, stored)
	}

	// A dry-run apply of a new service (the create path of an apply).
	ac := corev1ac.Service("applied", "default").WithSpec(corev1ac.ServiceSpec().
		WithType(corev1.ServiceTypeNodePort).WithSelector(map[string]string{"app": "applied"}).
		WithPorts(corev1ac.ServicePort().WithPort(80)))
	applied, err := svcs.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: "test", DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		t.Fatal(err)
	}
	if applied.Spec.ClusterIP == "" || applied.Spec.Ports[0].NodePort == 0 || len(applied.ManagedFields) == 0 {
		t.Fatalf("dry-run apply: %+v (managed fields %d)", applied.Spec, len(applied.ManagedFields))
	}
}
