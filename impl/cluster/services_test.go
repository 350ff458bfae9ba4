package cluster

import (
	"context"
	"net"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	ep, err := cs.CoreV1().Endpoints("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ep.Subsets) == 0 || len(ep.Subsets[0].Addresses) == 0 || ep.Subsets[0].Addresses[0].IP != "192.0.2.77" {
		t.Fatalf("kubernetes endpoints %+v, want the advertised address 192.0.2.77", ep.Subsets)
	}
}
