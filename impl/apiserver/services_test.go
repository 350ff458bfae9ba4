package apiserver_test

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	corev1ac "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/client-go/kubernetes"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

func newService(name string, typ corev1.ServiceType, clusterIP string, nodePort int32) *corev1.Service {
	return &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: corev1.ServiceSpec{
			Type: typ, ClusterIP: clusterIP, Selector: map[string]string{"app": name},
			Ports: []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080), NodePort: nodePort}},
		},
	}
}

func TestKubernetesServiceAtStart(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) { c.ServiceClusterIPRange = "10.0.0.0/24" })
	ctx := context.Background()
	svc, err := e.cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if svc.Spec.ClusterIP != "10.0.0.1" || len(svc.Spec.Ports) != 1 || svc.Spec.Ports[0].Port != 443 ||
		svc.Spec.Ports[0].Name != "https" || svc.Labels["component"] != "apiserver" {
		t.Fatalf("kubernetes service = %+v", svc.Spec)
	}
	port := svc.Spec.Ports[0].TargetPort.IntValue()
	if !strings.HasSuffix(e.url, fmt.Sprintf(":%d", port)) {
		t.Errorf("targetPort %d is not the server's port (%s)", port, e.url)
	}
	// The address is taken: asking for it is refused as kube-apiserver does.
	_, err = e.cs.CoreV1().Services("default").Create(ctx, newService("again", corev1.ServiceTypeClusterIP, "10.0.0.1", 0), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Fatalf("create with the kubernetes service's IP: %v, want 422 provided IP is already allocated", err)
	}
}

func TestServiceAllocation(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) {
		c.ServiceClusterIPRange = "10.0.0.0/28"
		c.ServiceNodePortRange = "30000-30009"
	})
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")

	a, err := svcs.Create(ctx, newService("a", corev1.ServiceTypeClusterIP, "", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cidr := netip.MustParsePrefix("10.0.0.0/28")
	ip, err := netip.ParseAddr(a.Spec.ClusterIP)
	if err != nil || !cidr.Contains(ip) || a.Spec.ClusterIPs[0] != a.Spec.ClusterIP {
		t.Fatalf("allocated %q / %v, want an address of %s", a.Spec.ClusterIP, a.Spec.ClusterIPs, cidr)
	}
	if *a.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || a.Spec.IPFamilies[0] != corev1.IPv4Protocol ||
		a.Spec.SessionAffinity != corev1.ServiceAffinityNone || a.Spec.Ports[0].Protocol != corev1.ProtocolTCP {
		t.Fatalf("defaults missing: %+v", a.Spec)
	}

	// Out of range and taken addresses are 422s.
	_, err = svcs.Create(ctx, newService("far", corev1.ServiceTypeClusterIP, "10.1.0.5", 0), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "not in the valid range") {
		t.Fatalf("out of range: %v", err)
	}
	_, err = svcs.Create(ctx, newService("dup", corev1.ServiceTypeClusterIP, a.Spec.ClusterIP, 0), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Fatalf("taken: %v", err)
	}

	// NodePorts: requested and dynamic, taken ones refused.
	np, err := svcs.Create(ctx, newService("np", corev1.ServiceTypeNodePort, "", 30003), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if np.Spec.Ports[0].NodePort != 30003 || np.Spec.ExternalTrafficPolicy != corev1.ServiceExternalTrafficPolicyCluster {
		t.Fatalf("nodePort service = %+v", np.Spec)
	}
	_, err = svcs.Create(ctx, newService("np2", corev1.ServiceTypeNodePort, "", 30003), metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided port is already allocated") {
		t.Fatalf("taken node port: %v", err)
	}
	lb, err := svcs.Create(ctx, newService("lb", corev1.ServiceTypeLoadBalancer, "", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if p := lb.Spec.Ports[0].NodePort; p < 30000 || p > 30009 {
		t.Fatalf("LoadBalancer got node port %d", p)
	}
	if len(lb.Status.LoadBalancer.Ingress) != 0 {
		t.Fatal("LoadBalancer got an external address; none is assigned")
	}

	// An update that leaves the allocated values out keeps them.
	upd := np.DeepCopy()
	upd.Spec.ClusterIP, upd.Spec.ClusterIPs = "", nil
	upd.Spec.Ports[0].NodePort = 0
	got, err := svcs.Update(ctx, upd, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got.Spec.ClusterIP != np.Spec.ClusterIP || got.Spec.Ports[0].NodePort != 30003 {
		t.Fatalf("update lost allocations: %+v", got.Spec)
	}
	// So does one that changes the port's number: NodePorts follow port
	// names, as kube-apiserver's.
	upd = got.DeepCopy()
	upd.Spec.Ports[0].Port, upd.Spec.Ports[0].NodePort = 81, 0
	if got, err = svcs.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if got.Spec.Ports[0].NodePort != 30003 {
		t.Fatalf("a renumbered port got NodePort %d, want 30003 kept", got.Spec.Ports[0].NodePort)
	}
	// Changing the ClusterIP is refused.
	upd = got.DeepCopy()
	other := "10.0.0.14"
	if got.Spec.ClusterIP == other {
		other = "10.0.0.13"
	}
	upd.Spec.ClusterIP, upd.Spec.ClusterIPs = other, []string{other}
	if _, err := svcs.Update(ctx, upd, metav1.UpdateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("changing clusterIP: %v, want 422", err)
	}
	// Turning it into a ClusterIP service gives the node port back.
	upd = got.DeepCopy()
	upd.Spec.Type = corev1.ServiceTypeClusterIP
	upd.Spec.ExternalTrafficPolicy = ""
	upd.Spec.Ports[0].NodePort = 0
	if _, err := svcs.Update(ctx, upd, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, newService("np3", corev1.ServiceTypeNodePort, "", 30003), metav1.CreateOptions{}); err != nil {
		t.Fatalf("node port released by the type change is not free: %v", err)
	}

	// Delete gives the address back.
	if err := svcs.Delete(ctx, "a", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, newService("a2", corev1.ServiceTypeClusterIP, a.Spec.ClusterIP, 0), metav1.CreateOptions{}); err != nil {
		t.Fatalf("address of a deleted service is not free: %v", err)
	}

	// Server-side apply creates through the update path: it allocates
	// too, and a second apply without the allocated values keeps them.
	ac := corev1ac.Service("applied", "default").WithSpec(corev1ac.ServiceSpec().
		WithType(corev1.ServiceTypeNodePort).WithSelector(map[string]string{"app": "applied"}).
		WithPorts(corev1ac.ServicePort().WithPort(80)))
	applied, err := svcs.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if applied.Spec.ClusterIP == "" || applied.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("applied service got no allocations: %+v", applied.Spec)
	}
	again, err := svcs.Apply(ctx, ac, metav1.ApplyOptions{FieldManager: "test"})
	if err != nil {
		t.Fatal(err)
	}
	if again.Spec.ClusterIP != applied.Spec.ClusterIP || again.Spec.Ports[0].NodePort != applied.Spec.Ports[0].NodePort {
		t.Fatalf("second apply changed allocations: %+v -> %+v", applied.Spec, again.Spec)
	}

	// Headless and ExternalName services take no address.
	h, err := svcs.Create(ctx, newService("headless", corev1.ServiceTypeClusterIP, "None", 0), metav1.CreateOptions{})
	if err != nil || h.Spec.ClusterIP != "None" {
		t.Fatalf("headless: %v %+v", err, h)
	}
	ext := &corev1.Service{ObjectMeta: metav1.ObjectMeta{Name: "ext"},
		Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com"}}
	x, err := svcs.Create(ctx, ext, metav1.CreateOptions{})
	if err != nil || x.Spec.ClusterIP != "" {
		t.Fatalf("ExternalName: %v %+v", err, x)
	}
}

// Concurrent creates on a small range hand out distinct addresses until
// the range is full, then answer kube-apiserver's 500 ("failed to allocate
// a serviceIP: range is full"): a full range is not the request's fault.
func TestServiceAllocationConcurrent(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) { c.ServiceClusterIPRange = "10.0.0.0/27" }) // 30 usable, 1 taken
	ctx := context.Background()
	var mu sync.Mutex
	ips := map[string]string{}
	full := 0
	var wg sync.WaitGroup
	for i := range 40 {
		wg.Go(func() {
			s, err := e.cs.CoreV1().Services("default").Create(ctx, newService(fmt.Sprintf("s%d", i), corev1.ServiceTypeClusterIP, "", 0), metav1.CreateOptions{})
			mu.Lock()
			defer mu.Unlock()
			switch {
			case err == nil:
				if other, dup := ips[s.Spec.ClusterIP]; dup {
					t.Errorf("%s given to %s and %s", s.Spec.ClusterIP, other, s.Name)
				}
				ips[s.Spec.ClusterIP] = s.Name
			case apierrors.IsInternalError(err) && strings.Contains(err.Error(), "failed to allocate a serviceIP: range is full"):
				full++
			default:
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if len(ips) != 29 || full != 11 {
		t.Fatalf("%d created, %d refused; want 29 and 11", len(ips), full)
	}
}

// The kubernetes endpoints list the API servers alive that share the
// store, at their advertised addresses, on the API server's port
// (kube-apiserver's lease endpoint reconciler): a server that starts is
// added; one that stops gracefully is removed at once; one that dies
// (stops without removing itself) is removed once its lease expires. A
// deleted kubernetes Service is created again.
//
// The servers whose departure is checked at once do not reconcile
// meanwhile (an hour's interval): a reconcile that listed the leases just
// before a removal may list the removed server again until its next one,
// as kube-apiserver's may.
func TestKubernetesEndpointsFollowTheAPIServers(t *testing.T) {
	shared := storagebackend.NewFactory(storagebackend.Config{
		Client: etcdServer.Client(),
		Prefix: fmt.Sprintf("/test%d-%d", time.Now().UnixNano(), prefixSeq.Add(1)),
	})
	t.Cleanup(shared.Close)
	const interval, ttl = 200 * time.Millisecond, 2 * time.Second
	short := func(c *apiserver.Config) { c.EndpointReconcileInterval, c.EndpointLeaseTTL = interval, ttl }
	quiet := func(c *apiserver.Config) { c.EndpointReconcileInterval, c.EndpointLeaseTTL = time.Hour, time.Hour }
	e1 := newEnv(t, func(c *apiserver.Config) {
		quiet(c)
		c.StorageFactory, c.AdvertiseAddress = shared, net.ParseIP("192.0.2.10")
	})
	_, portText, _ := net.SplitHostPort(strings.TrimPrefix(e1.url, "https://"))
	ctx := context.Background()
	endpointsOnly := func() string {
		t.Helper()
		ep, err := quietEndpoints(t, e1).Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var ips []string
		for _, ss := range ep.Subsets {
			for _, a := range ss.Addresses {
				ips = append(ips, a.IP)
			}
			if len(ss.Ports) != 1 || fmt.Sprint(ss.Ports[0].Port) != portText || ss.Ports[0].Name != "https" {
				t.Fatalf("endpoints ports %+v, want https %s", ss.Ports, portText)
			}
		}
		if ep.Labels["endpointslice.kubernetes.io/skip-mirror"] != "true" {
			t.Fatalf("endpoints labels %v, want skip-mirror", ep.Labels)
		}
		return strings.Join(ips, " ")
	}
	// The EndpointSlice (written after the Endpoints) lists the same
	// addresses, ready, labelled for the service only.
	slice := func() string {
		t.Helper()
		sl, err := e1.cs.DiscoveryV1().EndpointSlices("default").Get(ctx, "kubernetes", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if fmt.Sprint(sl.Labels) != "map[kubernetes.io/service-name:kubernetes]" || sl.AddressType != discoveryv1.AddressTypeIPv4 ||
			len(sl.Ports) != 1 || fmt.Sprint(*sl.Ports[0].Port) != portText || *sl.Ports[0].Name != "https" {
			t.Fatalf("kubernetes endpointslice %+v", sl)
		}
		var ips []string
		for _, ep := range sl.Endpoints {
			if ep.Conditions.Ready == nil || !*ep.Conditions.Ready {
				t.Fatalf("endpointslice endpoint %+v not ready", ep)
			}
			ips = append(ips, ep.Addresses...)
		}
		return strings.Join(ips, " ")
	}
	endpoints := func() string {
		t.Helper()
		// The slice follows the Endpoints within the same reconcile: the
		// two agree once its second write is done (how soon depends on
		// the machine's load, so this waits for agreement, not a time).
		deadline := time.Now().Add(5 * time.Second)
		for {
			ep, sl := endpointsOnly(), slice()
			if sl == ep {
				return ep
			}
			if time.Now().After(deadline) {
				t.Fatalf("kubernetes endpointslice lists %q, the endpoints %q", sl, ep)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	waitFor := func(want string, within time.Duration) {
		t.Helper()
		deadline := time.Now().Add(within)
		for {
			got := endpoints()
			if got == want {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("kubernetes endpoints %q after %v, want %q", got, within, want)
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	if got := endpoints(); got != "192.0.2.10" {
		t.Fatalf("kubernetes endpoints once the first server serves: %q, want 192.0.2.10", got)
	}

	// More servers on the same port (other loopback addresses); they
	// find the service the first one created.
	start := func(loopback, advertise string, configure func(*apiserver.Config)) (srv *apiserver.Server, stop func()) {
		ln, err := net.Listen("tcp", loopback+":"+portText)
		if err != nil {
			t.Skipf("no loopback address %s: %v", loopback, err)
		}
		cfg := apiserver.Config{
			StorageFactory: shared, Resources: registry.All(), ServingCert: &serving, ClientCA: ca.Pool(),
			Listener: ln, AdvertiseAddress: net.ParseIP(advertise),
		}
		configure(&cfg)
		srv, err = apiserver.New(cfg)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(ctx)
		done := make(chan error, 1)
		go func() { done <- srv.Run(ctx) }()
		var once sync.Once
		stop = func() {
			once.Do(func() {
				cancel()
				if err := <-done; err != nil {
					t.Errorf("server %s: %v", advertise, err)
				}
			})
		}
		t.Cleanup(stop)
		return srv, stop
	}
	_, stop2 := start("127.0.0.2", "192.0.2.11", quiet)
	waitFor("192.0.2.10 192.0.2.11", 10*time.Second)

	// A graceful stop removes the server before Run returns.
	stop2()
	if got := endpoints(); got != "192.0.2.10" {
		t.Fatalf("kubernetes endpoints once 192.0.2.11 stopped: %q, want 192.0.2.10", got)
	}

	// A server that dies stays listed until its lease expires (the TTL
	// after its last renewal), then another server's reconcile removes it.
	start("127.0.0.3", "192.0.2.12", short)
	srv4, stop4 := start("127.0.0.4", "192.0.2.13", short)
	waitFor("192.0.2.10 192.0.2.12 192.0.2.13", 10*time.Second)
	apiserver.LeaveEndpointsOnShutdown(srv4)
	stop4()
	died := time.Now()
	if got := endpoints(); got != "192.0.2.10 192.0.2.12 192.0.2.13" {
		t.Fatalf("kubernetes endpoints right after 192.0.2.13 died: %q, want it still listed", got)
	}
	waitFor("192.0.2.10 192.0.2.12", 10*time.Second)
	if gone := time.Since(died); gone < ttl-interval {
		t.Errorf("192.0.2.13 removed %v after it died, before its lease (%v) could expire", gone, ttl)
	}

	// Another EndpointSlice labelled for the kubernetes service is
	// deleted, as kube-apiserver deletes them.
	slices := e1.cs.DiscoveryV1().EndpointSlices("default")
	stray := &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Name: "kubernetes-stray", Labels: map[string]string{"kubernetes.io/service-name": "kubernetes"}},
		AddressType: discoveryv1.AddressTypeIPv4, Endpoints: []discoveryv1.Endpoint{{Addresses: []string{"192.0.2.99"}}},
	}
	if _, err := slices.Create(ctx, stray, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		_, err := slices.Get(ctx, stray.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("stray kubernetes endpointslice 10 s after its create: %v, want deleted", err)
		}
	}
	if got := slice(); got != "192.0.2.10 192.0.2.12" {
		t.Fatalf("kubernetes endpointslice after the stray one went: %q", got)
	}

	// The kubernetes Service, deleted, is created again (at the same
	// address, the range's first).
	if err := e1.cs.CoreV1().Services("default").Delete(ctx, "kubernetes", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		svcs, err := e1.cs.CoreV1().Services("default").List(ctx, metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if len(svcs.Items) == 1 && svcs.Items[0].Name == "kubernetes" {
			if ip := svcs.Items[0].Spec.ClusterIP; ip != "10.96.0.1" {
				t.Fatalf("recreated kubernetes service at %s, want 10.96.0.1", ip)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("services 10 s after the kubernetes service was deleted: %+v", svcs.Items)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// --endpoint-reconciler-type=none writes no kubernetes Endpoints (the
// Service is still created); master-count, deprecated in Kubernetes, and
// unknown types are refused.
func TestEndpointReconcilerTypes(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) {
		c.EndpointReconcilerType, c.AdvertiseAddress = apiserver.EndpointReconcilerNone, net.ParseIP("192.0.2.10")
	})
	ctx := context.Background()
	if _, err := e.cs.CoreV1().Services("default").Get(ctx, "kubernetes", metav1.GetOptions{}); err != nil {
		t.Fatalf("kubernetes service with the none reconciler: %v", err)
	}
	if ep, err := quietEndpoints(t, e).Get(ctx, "kubernetes", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("kubernetes endpoints with the none reconciler: %v %+v, want NotFound", err, ep)
	}
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: "/unused"})
	defer factory.Close()
	for _, typ := range []string{"master-count", "leases"} {
		_, err := apiserver.New(apiserver.Config{StorageFactory: factory, Resources: registry.All(), EndpointReconcilerType: typ})
		if err == nil || !strings.Contains(err.Error(), "--endpoint-reconciler-type") {
			t.Errorf("--endpoint-reconciler-type=%s: %v, want an error naming the flag", typ, err)
		}
	}
}

// Failed creates give back what they took, and deletes free everything:
// NodePort creates limited by a small port range roll back the addresses
// they had taken; after deleting everything, the whole address range is
// available again.
func TestServiceAllocationRollbackAndRelease(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) {
		c.ServiceClusterIPRange = "10.0.0.0/26" // 62 usable, 61 free
		c.ServiceNodePortRange = "30000-30019"  // 20 ports
	})
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	createAll := func(prefix string, n int, typ corev1.ServiceType) (created []string, refused int) {
		var mu sync.Mutex
		var wg sync.WaitGroup
		for i := range n {
			wg.Go(func() {
				s, err := svcs.Create(ctx, newService(fmt.Sprintf("%s%d", prefix, i), typ, "", 0), metav1.CreateOptions{})
				mu.Lock()
				defer mu.Unlock()
				switch {
				case err == nil:
					created = append(created, s.Name)
				case apierrors.IsInternalError(err) && strings.Contains(err.Error(), "range is full"):
					refused++
				default:
					t.Error(err)
				}
			})
		}
		wg.Wait()
		return created, refused
	}
	np, refused := createAll("np", 40, corev1.ServiceTypeNodePort)
	if len(np) != 20 || refused != 20 {
		t.Fatalf("NodePort creates: %d created, %d refused; want 20 and 20", len(np), refused)
	}
	// 41 addresses are left if the refused creates gave theirs back.
	ips, refused := createAll("ip", 45, corev1.ServiceTypeClusterIP)
	if len(ips) != 41 || refused != 4 {
		t.Fatalf("ClusterIP creates after the NodePort ones: %d created, %d refused; want 41 and 4", len(ips), refused)
	}
	var wg sync.WaitGroup
	for _, name := range append(np, ips...) {
		wg.Go(func() {
			if err := svcs.Delete(ctx, name, metav1.DeleteOptions{}); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	again, refused := createAll("again", 62, corev1.ServiceTypeClusterIP)
	if len(again) != 61 || refused != 1 {
		t.Fatalf("after deleting everything: %d created, %d refused; want 61 and 1", len(again), refused)
	}
	np2, _ := createAll("np2-", 1, corev1.ServiceTypeNodePort)
	if len(np2) != 0 {
		t.Fatal("a NodePort service got an address from a full range")
	}
	// With one address free again, the deleted services' node ports are
	// free too.
	if err := svcs.Delete(ctx, again[0], metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := svcs.Create(ctx, newService("np3", corev1.ServiceTypeNodePort, "", 30007), metav1.CreateOptions{}); err != nil {
		t.Fatalf("node port of a deleted service is not free: %v", err)
	}
}

// quietEndpoints is e's administrator's Endpoints client in namespace
// default that logs no warning: these tests read the kubernetes Endpoints
// on purpose, and client-go's default handler would print v1 Endpoints'
// deprecation at every read.
func quietEndpoints(t *testing.T, e *env) typedcorev1.EndpointsInterface {
	t.Helper()
	cfg := rest.CopyConfig(e.rest)
	cfg.WarningHandler = rest.NoWarnings{}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cs.CoreV1().Endpoints("default")
}
