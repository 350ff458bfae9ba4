package cluster

import (
	"fmt"
	"sync"

	"k8s.io/client-go/kubernetes"
	coordinationv1 "k8s.io/client-go/kubernetes/typed/coordination/v1"
	corev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// nodeClientset is a simulated node's kubernetes.Interface: the two API
// groups a kubelet talks to (core and coordination, for its pods, node,
// events and lease) built at once, every other group on first use, all of
// them on the one HTTP client and rate limiter kubernetes.NewForConfig
// would share among its groups. A full clientset is ~50 typed clients,
// each with its own REST client, URL and content negotiation: ~420 heap
// objects per node, 0.4 M at 1,000 nodes, marked in every GC cycle.
type nodeClientset struct {
	core  *corev1.CoreV1Client
	coord *coordinationv1.CoordinationV1Client
	full  func() *kubernetes.Clientset
}

// newNodeClientset builds a node's clientset from cfg as
// kubernetes.NewForConfig would (default user agent, a token bucket of
// cfg.QPS and cfg.Burst unless cfg has a rate limiter).
func newNodeClientset(cfg *rest.Config) (*nodeClientset, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	httpClient, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, fmt.Errorf("building the HTTP client: %w", err)
	}
	core, err := corev1.NewForConfigAndClient(&c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the core/v1 client: %w", err)
	}
	coord, err := coordinationv1.NewForConfigAndClient(&c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("building the coordination/v1 client: %w", err)
	}
	return &nodeClientset{core: core, coord: coord, full: sync.OnceValue(func() *kubernetes.Clientset {
		cs, err := kubernetes.NewForConfigAndClient(&c, httpClient)
		if err != nil {
			// The config built the core and coordination clients: every
			// group's construction checks the same things of it.
			panic(fmt.Sprintf("building a node's clientset from a config that built its core client: %v", err))
		}
		return cs
	})}, nil
}

func (c *nodeClientset) CoreV1() corev1.CoreV1Interface { return c.core }
func (c *nodeClientset) CoordinationV1() coordinationv1.CoordinationV1Interface {
	return c.coord
}
