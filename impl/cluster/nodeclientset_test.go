package cluster

import (
	"testing"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
)

// TestNodeClientset: a node's core and coordination clients exist without
// the full clientset; any other group builds it once, with its own API
// path, and every group shares one rate limiter (as kubernetes.NewForConfig's
// groups do).
func TestNodeClientset(t *testing.T) {
	cfg := &rest.Config{Host: "https://127.0.0.1:6443", BearerToken: "t"}
	componentConfig(cfg, "node-1", 50, 100)
	cs, err := newNodeClientset(cfg)
	if err != nil {
		t.Fatal(err)
	}
	built := 0
	full := cs.full
	cs.full = func() *kubernetes.Clientset { built++; return full() }
	core := cs.CoreV1().RESTClient().(*rest.RESTClient)
	lease := cs.CoordinationV1().RESTClient().(*rest.RESTClient)
	if built != 0 {
		t.Fatalf("the core and coordination clients built the full clientset")
	}
	apps := cs.AppsV1().RESTClient().(*rest.RESTClient)
	cs.StorageV1()
	if built != 2 {
		t.Fatalf("other groups asked for the full clientset %d times, want 2", built)
	}
	if full() != full() {
		t.Fatalf("the full clientset is built more than once")
	}
	for _, tc := range []struct {
		c    *rest.RESTClient
		path string
	}{{core, "/api/v1"}, {lease, "/apis/coordination.k8s.io/v1"}, {apps, "/apis/apps/v1"}} {
		if got := tc.c.Get().URL().Path; got != tc.path {
			t.Errorf("client path %q, want %q", got, tc.path)
		}
		if tc.c.GetRateLimiter() != core.GetRateLimiter() || tc.c.GetRateLimiter() == nil {
			t.Errorf("client %s has a rate limiter of its own", tc.path)
		}
	}
	if got := core.Get().URL().Host; got != "127.0.0.1:6443" {
		t.Errorf("host %q", got)
	}
}
