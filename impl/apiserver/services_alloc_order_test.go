package apiserver_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/netip"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/apiserver/admission"
	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// serviceWatcher is a validating admission plugin that records the
// services it is shown and refuses those labelled deny=true.
type serviceWatcher struct {
	mu   sync.Mutex
	seen []*corev1.Service
}

func (w *serviceWatcher) Validate(_ context.Context, a *admission.Attributes) error {
	svc, ok := a.Object.(*corev1.Service)
	if !ok {
		return nil
	}
	w.mu.Lock()
	w.seen = append(w.seen, svc.DeepCopy())
	w.mu.Unlock()
	if svc.Labels["deny"] == "true" {
		return apierrors.NewForbidden(schema.GroupResource{Resource: "services"}, svc.Name, fmt.Errorf("denied by the test"))
	}
	return nil
}

func (w *serviceWatcher) last() *corev1.Service {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.seen) == 0 {
		return nil
	}
	return w.seen[len(w.seen)-1]
}

// allocEnv is a server on a small ClusterIP and NodePort range whose
// allocation records the test reads through allocators of its own.
type allocEnv struct {
	*env
	watcher *serviceWatcher
	ips     []*ipallocator.IPs
	ports   *ipallocator.Ports
	pr      ipallocator.PortRange
}

func newAllocEnv(t *testing.T) *allocEnv { return newAllocEnvOn(t, "10.0.0.0/27") }

// newAllocEnvOn is newAllocEnv on the service ranges given (one, or two
// of different families).
func newAllocEnvOn(t *testing.T, ranges string) *allocEnv {
	prefix := fmt.Sprintf("/test-allocorder%d-%d", time.Now().UnixNano(), prefixSeq.Add(1))
	factory := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: prefix})
	t.Cleanup(factory.Close)
	w := &serviceWatcher{}
	e := newEnv(t, func(c *apiserver.Config) {
		c.StorageFactory = factory
		c.ServiceClusterIPRange = ranges
		c.ServiceNodePortRange = "30000-30019"
		c.ServiceRepairInterval = time.Hour // a repair must not hide a leak
		c.AdmissionValidators = append(c.AdmissionValidators, w)
	})
	records, destroy, err := factory.New(storage.ResourceConfig{
		GroupResource: schema.GroupResource{Resource: "rangeallocations"}, StorageVersion: corev1.SchemeGroupVersion,
		ResourcePrefix: "/ranges",
		NewFunc:        func() runtime.Object { return &corev1.RangeAllocation{} },
		NewListFunc:    func() runtime.Object { return &ipallocator.RecordList{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(destroy)
	cidrs, err := ipallocator.ParseCIDRs(ranges)
	if err != nil {
		t.Fatal(err)
	}
	ips := ipallocator.NewServiceIPs(records, cidrs)
	pr, err := ipallocator.ParsePortRange("30000-30019")
	if err != nil {
		t.Fatal(err)
	}
	return &allocEnv{env: e, watcher: w, ips: ips, ports: ipallocator.NewPorts(records, pr), pr: pr}
}

// used is what the allocation records hold.
func (e *allocEnv) used(t *testing.T) (ips []string, ports []int) {
	ctx := context.Background()
	for _, a := range e.ips {
		for ip := a.CIDR().Addr(); a.CIDR().Contains(ip); ip = ip.Next() {
			if !a.Contains(ip) {
				continue
			}
			has, err := a.Has(ctx, ip)
			if err != nil {
				t.Fatal(err)
			}
			if has {
				ips = append(ips, ip.String())
			}
		}
	}
	for p := e.pr.Base; p < e.pr.Base+e.pr.Size; p++ {
		has, err := e.ports.Has(ctx, p)
		if err != nil {
			t.Fatal(err)
		}
		if has {
			ports = append(ports, p)
		}
	}
	return ips, ports
}

// held is what the stored services hold.
func (e *allocEnv) held(t *testing.T) (ips []string, ports []int) {
	list, err := e.cs.CoreV1().Services("").List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range list.Items {
		if s.Spec.Type != corev1.ServiceTypeExternalName {
			for _, ip := range s.Spec.ClusterIPs {
				if ip != "" && ip != corev1.ClusterIPNone {
					ips = append(ips, ip)
				}
			}
		}
		for _, p := range s.Spec.Ports {
			if p.NodePort != 0 && !slices.Contains(ports, int(p.NodePort)) {
				ports = append(ports, int(p.NodePort))
			}
		}
		if p := int(s.Spec.HealthCheckNodePort); p != 0 && !slices.Contains(ports, p) {
			ports = append(ports, p)
		}
	}
	slices.SortFunc(ips, func(a, b string) int { return netip.MustParseAddr(a).Compare(netip.MustParseAddr(b)) })
	slices.Sort(ports)
	return ips, ports
}

// Validating admission sees a new service's ClusterIPs and NodePorts, as
// kube-apiserver allocates them (BeginCreate) before validating.
func TestServiceAdmissionSeesAllocations(t *testing.T) {
	e := newAllocEnv(t)
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	svc := newService("np", corev1.ServiceTypeNodePort, "", 0)
	svc.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
	svc.Spec.Type = corev1.ServiceTypeLoadBalancer
	out, err := svcs.Create(ctx, svc, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen := e.watcher.last()
	if seen == nil || seen.Name != "np" {
		t.Fatalf("admission saw %v", seen)
	}
	if len(seen.Spec.ClusterIPs) != 1 || seen.Spec.ClusterIPs[0] == "" || seen.Spec.ClusterIP != seen.Spec.ClusterIPs[0] ||
		seen.Spec.Ports[0].NodePort == 0 || seen.Spec.HealthCheckNodePort == 0 {
		t.Fatalf("admission saw spec %+v, want a ClusterIP, a NodePort and a health check NodePort", seen.Spec)
	}
	if !slices.Equal(seen.Spec.ClusterIPs, out.Spec.ClusterIPs) || seen.Spec.Ports[0].NodePort != out.Spec.Ports[0].NodePort ||
		seen.Spec.HealthCheckNodePort != out.Spec.HealthCheckNodePort {
		t.Fatalf("admission saw %+v, stored %+v", seen.Spec, out.Spec)
	}
	// An update adding a port: admission sees its new NodePort.
	out.Spec.Ports = append(out.Spec.Ports, corev1.ServicePort{Name: "b", Port: 81, Protocol: corev1.ProtocolTCP})
	out.Spec.Ports[0].Name = "a"
	upd, err := svcs.Update(ctx, out, metav1.UpdateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	seen = e.watcher.last()
	if seen.Spec.Ports[1].NodePort == 0 || seen.Spec.Ports[1].NodePort != upd.Spec.Ports[1].NodePort {
		t.Fatalf("admission saw ports %+v on update, stored %+v", seen.Spec.Ports, upd.Spec.Ports)
	}
	// A dry run too, and it takes nothing.
	before, _ := e.used(t)
	dry := newService("dry", corev1.ServiceTypeNodePort, "", 0)
	if _, err := svcs.Create(ctx, dry, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}}); err != nil {
		t.Fatal(err)
	}
	seen = e.watcher.last()
	if seen.Name != "dry" || len(seen.Spec.ClusterIPs) != 1 || seen.Spec.Ports[0].NodePort == 0 {
		t.Fatalf("admission saw %+v on a dry run", seen.Spec)
	}
	if after, _ := e.used(t); !slices.Equal(before, after) {
		t.Fatalf("a dry run took addresses: %v, was %v", after, before)
	}
}

// A request both invalid and asking for a taken address gets the
// allocation's error alone, as kube-apiserver allocates before it
// validates; an address outside the range likewise; a taken NodePort is
// refused at its port's path.
func TestServiceAllocationBeforeValidation(t *testing.T) {
	e := newAllocEnv(t)
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	a, err := svcs.Create(ctx, newService("a", corev1.ServiceTypeNodePort, "", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	bad := func(s *corev1.Service) *corev1.Service {
		s.Spec.Ports[0].Name = "Not_A_Name"
		s.Spec.Ports = append(s.Spec.Ports, corev1.ServicePort{Name: "b", Port: 81, Protocol: corev1.ProtocolTCP})
		return s
	}
	for _, tc := range []struct {
		name  string
		svc   *corev1.Service
		cause string
		text  string
	}{
		{"taken IP", bad(newService("b1", corev1.ServiceTypeClusterIP, a.Spec.ClusterIP, 0)), "spec.clusterIPs",
			"failed to allocate IP " + a.Spec.ClusterIP + ": provided IP is already allocated"},
		{"IP outside the range", bad(newService("b2", corev1.ServiceTypeClusterIP, "10.1.0.5", 0)), "spec.clusterIPs",
			"not in the valid range"},
		{"taken NodePort", bad(newService("b3", corev1.ServiceTypeNodePort, "", a.Spec.Ports[0].NodePort)), "spec.ports[0].nodePort",
			"provided port is already allocated"},
		{"NodePort outside the range", bad(newService("b4", corev1.ServiceTypeNodePort, "", 31000)), "spec.ports[0].nodePort",
			"provided port is not in the valid range"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := svcs.Create(ctx, tc.svc, metav1.CreateOptions{})
			st, ok := err.(apierrors.APIStatus)
			if !ok || !apierrors.IsInvalid(err) {
				t.Fatalf("err = %v, want a 422", err)
			}
			var causes []string
			for _, c := range st.Status().Details.Causes {
				causes = append(causes, c.Field)
			}
			if !slices.Equal(causes, []string{tc.cause}) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("causes %v (%v), want only %s with %q", causes, err, tc.cause, tc.text)
			}
		})
	}
	// Nothing the refused requests took is left taken.
	used, ports := e.used(t)
	held, heldPorts := e.held(t)
	if !slices.Equal(used, held) || !slices.Equal(ports, heldPorts) {
		t.Fatalf("allocated %v %v, services hold %v %v", used, ports, held, heldPorts)
	}
}

// Random sequences of creates, updates and deletes, valid and invalid,
// refused by admission or not, dry runs or not, leave the allocation
// records holding exactly what the stored services hold.
func TestServiceAllocationsFollowTheServices(t *testing.T) {
	testAllocationsFollowTheServices(t, newAllocEnv(t), false)
}

// The same on a dual-stack server, with random IP family policies and
// families: upgrades take a second address, downgrades give one back.
func TestServiceAllocationsFollowTheServicesDualStack(t *testing.T) {
	testAllocationsFollowTheServices(t, newAllocEnvOn(t, "10.0.0.0/27,fd00::/123"), true)
}

func testAllocationsFollowTheServices(t *testing.T, e *allocEnv, dual bool) {
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 7))
	names := []string{"s0", "s1", "s2", "s3", "s4", "s5"}
	types := []corev1.ServiceType{corev1.ServiceTypeClusterIP, corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer, corev1.ServiceTypeExternalName}
	randomIP := func() string {
		switch rng.IntN(4) {
		case 0:
			return fmt.Sprintf("10.0.0.%d", 1+rng.IntN(30))
		case 1:
			return "10.9.0.1" // outside the range
		case 2:
			return corev1.ClusterIPNone
		}
		return ""
	}
	randomPort := func() int32 {
		switch rng.IntN(3) {
		case 0:
			return int32(30000 + rng.IntN(21)) // 30020 is outside
		}
		return 0
	}
	shape := func(s *corev1.Service) {
		s.Spec.Type = types[rng.IntN(len(types))]
		s.Spec.ExternalName = ""
		if s.Spec.Type == corev1.ServiceTypeExternalName {
			s.Spec.ExternalName = "example.com"
			if rng.IntN(2) == 0 {
				s.Spec.ClusterIP, s.Spec.ClusterIPs = "", nil
			}
		}
		if rng.IntN(3) == 0 {
			s.Spec.ClusterIP, s.Spec.ClusterIPs = randomIP(), nil
		}
		n := 1 + rng.IntN(2)
		ports := make([]corev1.ServicePort, n)
		for i := range ports {
			ports[i] = corev1.ServicePort{Name: fmt.Sprintf("p%d", i), Port: int32(80 + i), Protocol: corev1.ProtocolTCP}
			if i < len(s.Spec.Ports) && rng.IntN(2) == 0 {
				ports[i].NodePort = s.Spec.Ports[i].NodePort
			} else {
				ports[i].NodePort = randomPort()
			}
		}
		s.Spec.Ports = ports
		s.Spec.ExternalTrafficPolicy, s.Spec.HealthCheckNodePort = "", 0
		if s.Spec.Type == corev1.ServiceTypeLoadBalancer && rng.IntN(2) == 0 {
			s.Spec.ExternalTrafficPolicy = corev1.ServiceExternalTrafficPolicyLocal
			s.Spec.HealthCheckNodePort = randomPort()
		}
		if rng.IntN(5) == 0 {
			s.Spec.Ports[0].Name = "Bad_Name" // invalid
		}
		if dual && rng.IntN(2) == 0 {
			policies := []corev1.IPFamilyPolicy{corev1.IPFamilyPolicySingleStack, corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack}
			pol := policies[rng.IntN(len(policies))]
			s.Spec.IPFamilyPolicy = &pol
			switch rng.IntN(4) {
			case 0:
				s.Spec.IPFamilies = nil
			case 1:
				s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
			case 2:
				s.Spec.IPFamilies = append(s.Spec.IPFamilies[:min(len(s.Spec.IPFamilies), 1):min(len(s.Spec.IPFamilies), 1)], corev1.IPv6Protocol)
			}
			if rng.IntN(4) == 0 && len(s.Spec.ClusterIPs) == 1 {
				s.Spec.ClusterIPs = append(s.Spec.ClusterIPs, fmt.Sprintf("fd00::%x", 1+rng.IntN(31)))
			}
		}
		s.Labels = nil
		if rng.IntN(5) == 0 {
			s.Labels = map[string]string{"deny": "true"}
		}
	}
	var dryRun []string
	counts := map[string]int{}
	for step := range 200 {
		name := names[rng.IntN(len(names))]
		dryRun = nil
		if rng.IntN(4) == 0 {
			dryRun = []string{metav1.DryRunAll}
		}
		cur, getErr := svcs.Get(ctx, name, metav1.GetOptions{})
		var err error
		var op string
		switch {
		case apierrors.IsNotFound(getErr):
			op = "create"
			s := newService(name, corev1.ServiceTypeClusterIP, "", 0)
			shape(s)
			_, err = svcs.Create(ctx, s, metav1.CreateOptions{DryRun: dryRun})
		case getErr != nil:
			t.Fatal(getErr)
		case rng.IntN(4) == 0:
			op = "delete"
			err = svcs.Delete(ctx, name, metav1.DeleteOptions{DryRun: dryRun})
		default:
			op = "update"
			shape(cur)
			_, err = svcs.Update(ctx, cur, metav1.UpdateOptions{DryRun: dryRun})
		}
		outcome := "ok"
		if err != nil {
			if apierrors.IsInternalError(err) && !strings.Contains(err.Error(), "range is full") {
				t.Fatalf("step %d %s %s: %v", step, op, name, err)
			}
			outcome = string(apierrors.ReasonForError(err))
		}
		counts[op+" "+outcome]++
		used, ports := e.used(t)
		held, heldPorts := e.held(t)
		for _, ip := range held {
			if strings.Contains(ip, ":") {
				counts["IPv6 address held"]++
			}
		}
		if !slices.Equal(used, held) || !slices.Equal(ports, heldPorts) {
			t.Fatalf("step %d (%s %s, dry run %v: %v): allocated %v %v, services hold %v %v", step, op, name, dryRun != nil, err, used, ports, held, heldPorts)
		}
	}
	t.Logf("outcomes: %v", counts)
	if counts["create ok"] == 0 || counts["update ok"] == 0 || counts["create Invalid"] == 0 || counts["update Invalid"] == 0 ||
		counts["create Forbidden"] == 0 || (dual && counts["IPv6 address held"] == 0) {
		t.Fatalf("the sequence did not exercise every path: %v", counts)
	}
}

// Concurrent patches (retried inside the server on a conflict, each
// attempt taking its values again), creates and deletes of the same few
// services leave the allocation records holding what the services hold.
func TestServiceAllocationsFollowConcurrentWrites(t *testing.T) {
	e := newAllocEnv(t)
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)
	patches := []string{
		`{"spec":{"type":"NodePort"}}`,
		`{"spec":{"type":"ClusterIP","ports":[{"name":"p0","port":80,"protocol":"TCP"}]}}`,
		`{"spec":{"type":"LoadBalancer","externalTrafficPolicy":"Local"}}`,
		`{"spec":{"type":"NodePort","ports":[{"name":"p0","port":80,"protocol":"TCP"},{"name":"p1","port":81,"protocol":"TCP"}]}}`,
		`{"spec":{"type":"NodePort","ports":[{"name":"p0","port":80,"protocol":"TCP","nodePort":30005}]}}`,
		`{"spec":{"type":"ExternalName","externalName":"example.com","clusterIP":"","clusterIPs":null}}`,
		`{"spec":{"type":"NodePort","ports":[{"name":"Bad_Name","port":80,"protocol":"TCP"}]}}`,
		`{"metadata":{"labels":{"deny":"true"}},"spec":{"type":"NodePort"}}`,
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	counts := map[string]int{}
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(seed, uint64(g)))
			for range 40 {
				name := fmt.Sprintf("c%d", rng.IntN(3))
				var err error
				var op string
				var dry []string
				if rng.IntN(4) == 0 {
					dry = []string{metav1.DryRunAll}
				}
				switch rng.IntN(5) {
				case 0:
					op = "create"
					_, err = svcs.Create(ctx, newService(name, corev1.ServiceTypeNodePort, "", 0), metav1.CreateOptions{DryRun: dry})
				case 1:
					op = "delete"
					err = svcs.Delete(ctx, name, metav1.DeleteOptions{DryRun: dry})
				default:
					op = "patch"
					_, err = svcs.Patch(ctx, name, types.MergePatchType, []byte(patches[rng.IntN(len(patches))]), metav1.PatchOptions{DryRun: dry})
				}
				if apierrors.IsInternalError(err) && !strings.Contains(err.Error(), "range is full") {
					t.Errorf("%s %s: %v", op, name, err)
				}
				mu.Lock()
				counts[op+" "+string(apierrors.ReasonForError(err))]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	t.Logf("outcomes: %v", counts)
	used, ports := e.used(t)
	held, heldPorts := e.held(t)
	if !slices.Equal(used, held) || !slices.Equal(ports, heldPorts) {
		t.Fatalf("allocated %v %v, services hold %v %v", used, ports, held, heldPorts)
	}
}
