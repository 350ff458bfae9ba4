package ipallocator_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/ipfamily"
	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

func TestParseCIDRs(t *testing.T) {
	for flag, want := range map[string][]corev1.IPFamily{
		"10.96.0.0/12":            {corev1.IPv4Protocol},
		"fd00:10:96::/108":        {corev1.IPv6Protocol},
		"10.96.0.0/12,fd00::/108": {corev1.IPv4Protocol, corev1.IPv6Protocol},
		"fd00::/112, 10.0.0.0/24": {corev1.IPv6Protocol, corev1.IPv4Protocol},
	} {
		got, err := ipallocator.ParseCIDRs(flag)
		if err != nil {
			t.Fatalf("ParseCIDRs(%q): %v", flag, err)
		}
		var fams []corev1.IPFamily
		for _, p := range got {
			fams = append(fams, ipfamily.OfAddr(p.Addr()))
		}
		if !slices.Equal(fams, want) {
			t.Errorf("ParseCIDRs(%q) families %v, want %v", flag, fams, want)
		}
	}
	for flag, want := range map[string]string{
		"":                                   "must contain at least one valid cidr",
		"10.0.0.0/24,10.1.0.0/24":            "must be of different IP family",
		"fd00::/108,fd01::/108":              "must be of different IP family",
		"10.0.0.0/24,fd00::/108,10.1.0.0/24": "must not contain more than two entries",
		"10.0.0.0/24,fd00::/64":              "for 128-bit addresses, the mask must be >= 108",
		"10.0.0.0/8":                         "for 32-bit addresses, the mask must be >= 12",
		"10.0.0.0/24,":                       "service IP range",
	} {
		if _, err := ipallocator.ParseCIDRs(flag); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseCIDRs(%q) = %v, want an error with %q", flag, err, want)
		}
	}
}

// An IPv6 range hands out addresses after the network address, the last
// one included (IPv6 has no broadcast address).
func TestIPv6Range(t *testing.T) {
	ctx := context.Background()
	a := ipallocator.NewIPsAt(newStore(t, freshPrefix(), false), ipallocator.SecondaryServiceIPsKey, netip.MustParsePrefix("fd00::/126"))
	if a.Family() != corev1.IPv6Protocol || a.FirstIP() != netip.MustParseAddr("fd00::1") {
		t.Fatalf("family %s, first %s", a.Family(), a.FirstIP())
	}
	var got []netip.Addr
	for range 3 {
		ip, err := a.AllocateNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ip)
	}
	slices.SortFunc(got, netip.Addr.Compare)
	if want := []netip.Addr{netip.MustParseAddr("fd00::1"), netip.MustParseAddr("fd00::2"), netip.MustParseAddr("fd00::3")}; !slices.Equal(got, want) {
		t.Fatalf("allocated %v, want %v", got, want)
	}
	if _, err := a.AllocateNext(ctx); err != ipallocator.ErrFull {
		t.Fatalf("a full /126: %v", err)
	}
	if a.Contains(netip.MustParseAddr("fd00::")) || a.Contains(netip.MustParseAddr("10.0.0.1")) {
		t.Fatal("the network address or an IPv4 address is in an IPv6 range")
	}
}

// newDualEnv is a ServiceStorage over the ranges of flag
// (--service-cluster-ip-range syntax) and 30000-30009.
func newDualEnv(t *testing.T, flag string) serviceEnv {
	t.Helper()
	prefix := freshPrefix()
	f := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: prefix})
	t.Cleanup(f.Close)
	inner, _, err := f.New(storage.ResourceConfig{
		GroupResource:  schema.GroupResource{Resource: "services"},
		StorageVersion: corev1.SchemeGroupVersion, ResourcePrefix: "/services",
		NewFunc:     func() runtime.Object { return &corev1.Service{} },
		NewListFunc: func() runtime.Object { return &corev1.ServiceList{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	records := newStore(t, prefix, false)
	cidrs, err := ipallocator.ParseCIDRs(flag)
	if err != nil {
		t.Fatal(err)
	}
	ips := ipallocator.NewServiceIPs(records, cidrs)
	pr, _ := ipallocator.ParsePortRange("30000-30009")
	return serviceEnv{s: ipallocator.NewServiceStorage(inner, ips, ipallocator.NewPorts(records, pr), nil), records: records, inner: inner}
}

func withPolicy(s *corev1.Service, p corev1.IPFamilyPolicy, fams ...corev1.IPFamily) *corev1.Service {
	s.Spec.IPFamilyPolicy = &p
	s.Spec.IPFamilies = fams
	return s
}

// held reports whether each of ips is allocated in its family's range.
func (e serviceEnv) held(t *testing.T, ips ...string) []bool {
	t.Helper()
	var out []bool
	for _, s := range ips {
		ip := netip.MustParseAddr(s)
		var has bool
		for _, a := range e.s.AllIPs() {
			if a.Contains(ip) {
				var err error
				if has, err = a.Has(context.Background(), ip); err != nil {
					t.Fatal(err)
				}
			}
		}
		out = append(out, has)
	}
	return out
}

func (e serviceEnv) update(t *testing.T, old, s *corev1.Service) (*corev1.Service, error) {
	t.Helper()
	out := &corev1.Service{}
	err := e.s.GuaranteedUpdate(context.Background(), "/services/default/"+s.Name, out, false, nil,
		func(runtime.Object) (runtime.Object, error) { return s.DeepCopy(), nil })
	return out, err
}

// On an IPv4,IPv6 cluster: a service asking for nothing is single-stack
// IPv4; PreferDualStack and RequireDualStack get an address of each
// family, primary first; ipFamilies [IPv6] makes an IPv6 single-stack
// service; an upgrade takes a secondary address, a downgrade and a move to
// ExternalName give addresses back, and a delete gives back both.
func TestDualStackServiceAllocation(t *testing.T) {
	e := newDualEnv(t, "10.0.0.0/28,fd00::/124")
	v4, v6 := netip.MustParsePrefix("10.0.0.0/28"), netip.MustParsePrefix("fd00::/124")
	fam := func(s *corev1.Service) []corev1.IPFamily { return s.Spec.IPFamilies }

	// First, while every address is free.
	asked := e.create(t, svc("asked", corev1.ServiceTypeClusterIP, "fd00::9"))
	if !slices.Equal(fam(asked), []corev1.IPFamily{corev1.IPv6Protocol}) || asked.Spec.ClusterIP != "fd00::9" {
		t.Fatalf("a requested IPv6 address: %v %v", fam(asked), asked.Spec.ClusterIPs)
	}
	single := e.create(t, svc("single", corev1.ServiceTypeClusterIP, ""))
	if !slices.Equal(fam(single), []corev1.IPFamily{corev1.IPv4Protocol}) || len(single.Spec.ClusterIPs) != 1 ||
		!v4.Contains(netip.MustParseAddr(single.Spec.ClusterIP)) || *single.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack {
		t.Fatalf("default service: %v %v %v", single.Spec.IPFamilyPolicy, fam(single), single.Spec.ClusterIPs)
	}
	for _, p := range []corev1.IPFamilyPolicy{corev1.IPFamilyPolicyPreferDualStack, corev1.IPFamilyPolicyRequireDualStack} {
		d := e.create(t, withPolicy(svc("dual-"+strings.ToLower(string(p)), corev1.ServiceTypeNodePort, "", 0), p))
		if !slices.Equal(fam(d), []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}) || len(d.Spec.ClusterIPs) != 2 ||
			!v4.Contains(netip.MustParseAddr(d.Spec.ClusterIPs[0])) || !v6.Contains(netip.MustParseAddr(d.Spec.ClusterIPs[1])) ||
			d.Spec.ClusterIP != d.Spec.ClusterIPs[0] {
			t.Fatalf("%s: %v %v", p, fam(d), d.Spec.ClusterIPs)
		}
		if got := e.held(t, d.Spec.ClusterIPs...); !slices.Equal(got, []bool{true, true}) {
			t.Fatalf("%s: held %v", p, got)
		}
	}
	six := e.create(t, withPolicy(svc("six", corev1.ServiceTypeClusterIP, ""), corev1.IPFamilyPolicyPreferDualStack, corev1.IPv6Protocol))
	if !slices.Equal(fam(six), []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}) || !v6.Contains(netip.MustParseAddr(six.Spec.ClusterIP)) {
		t.Fatalf("IPv6-first: %v %v", fam(six), six.Spec.ClusterIPs)
	}

	// Upgrade: SingleStack -> RequireDualStack takes an IPv6 address.
	up := single.DeepCopy()
	up.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicyRequireDualStack)
	up.Spec.IPFamilies = nil
	upgraded, err := e.update(t, single, up)
	if err != nil {
		t.Fatal(err)
	}
	if len(upgraded.Spec.ClusterIPs) != 2 || upgraded.Spec.ClusterIPs[0] != single.Spec.ClusterIP || !v6.Contains(netip.MustParseAddr(upgraded.Spec.ClusterIPs[1])) {
		t.Fatalf("upgrade: %v %v", fam(upgraded), upgraded.Spec.ClusterIPs)
	}
	if got := e.held(t, upgraded.Spec.ClusterIPs...); !slices.Equal(got, []bool{true, true}) {
		t.Fatalf("upgrade: held %v", got)
	}
	// Dropping the second address without SingleStack is refused.
	bad := upgraded.DeepCopy()
	bad.Spec.ClusterIPs = bad.Spec.ClusterIPs[:1]
	if _, err := e.update(t, upgraded, bad); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "must be 'SingleStack' to release the secondary cluster IP") {
		t.Fatalf("downgrade without SingleStack: %v", err)
	}
	// Downgrade: SingleStack with the fields untouched keeps the first.
	down := upgraded.DeepCopy()
	down.Spec.IPFamilyPolicy = ptr(corev1.IPFamilyPolicySingleStack)
	downgraded, err := e.update(t, upgraded, down)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(downgraded.Spec.ClusterIPs, upgraded.Spec.ClusterIPs[:1]) || !slices.Equal(fam(downgraded), []corev1.IPFamily{corev1.IPv4Protocol}) {
		t.Fatalf("downgrade: %v %v", fam(downgraded), downgraded.Spec.ClusterIPs)
	}
	if got := e.held(t, upgraded.Spec.ClusterIPs...); !slices.Equal(got, []bool{true, false}) {
		t.Fatalf("downgrade: held %v, want the IPv6 address released", got)
	}
	// The primary family never changes.
	swap := downgraded.DeepCopy()
	swap.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol}
	swap.Spec.ClusterIP, swap.Spec.ClusterIPs = "fd00::a", []string{"fd00::a"}
	if _, err := e.update(t, downgraded, swap); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "may not change once set") {
		t.Fatalf("changing the primary family: %v", err)
	}

	// To ExternalName: both addresses go back.
	dual, err := e.update(t, downgraded, withPolicy(downgraded.DeepCopy(), corev1.IPFamilyPolicyPreferDualStack, corev1.IPv4Protocol, corev1.IPv6Protocol))
	if err != nil || len(dual.Spec.ClusterIPs) != 2 {
		t.Fatalf("re-upgrade: %v %v", err, dual.Spec.ClusterIPs)
	}
	ext := dual.DeepCopy()
	ext.Spec = corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "example.com", Ports: dual.Spec.Ports}
	if _, err := e.update(t, dual, ext); err != nil {
		t.Fatal(err)
	}
	if got := e.held(t, dual.Spec.ClusterIPs...); !slices.Equal(got, []bool{false, false}) {
		t.Fatalf("to ExternalName: held %v", got)
	}

	// Delete gives back both families' addresses.
	out := &corev1.Service{}
	if err := e.s.Delete(context.Background(), "/services/default/six", out, nil, nil); err != nil {
		t.Fatal(err)
	}
	if got := e.held(t, six.Spec.ClusterIPs...); !slices.Equal(got, []bool{false, false}) {
		t.Fatalf("delete: held %v", got)
	}
}

// A dry-run dual-stack create shows an address of each family and writes
// no allocation record.
func TestDualStackDryRunReservesNothing(t *testing.T) {
	e := newDualEnv(t, "fd00::/124,10.0.0.0/28")
	before := e.snapshot(t)
	got, err := dryCreate(t, e, withPolicy(svc("x", corev1.ServiceTypeClusterIP, ""), corev1.IPFamilyPolicyRequireDualStack))
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}) || len(got.Spec.ClusterIPs) != 2 {
		t.Fatalf("dry run: %v %v", got.Spec.IPFamilies, got.Spec.ClusterIPs)
	}
	e.unchanged(t, before, "a dual-stack dry-run create")
	if got := e.held(t, got.Spec.ClusterIPs...); !slices.Equal(got, []bool{false, false}) {
		t.Fatalf("dry run held %v", got)
	}
}

// On a single-stack cluster RequireDualStack and a family it does not
// serve are refused; PreferDualStack gets one address; a selectorless
// headless service still lists both families.
func TestSingleStackClusterRefusesDualStack(t *testing.T) {
	e := newDualEnv(t, "fd00::/124")
	_, err := dryCreate(t, e, withPolicy(svc("r", corev1.ServiceTypeClusterIP, ""), corev1.IPFamilyPolicyRequireDualStack))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ipFamilyPolicy: Invalid value: \"RequireDualStack\": this cluster is not configured for dual-stack services") {
		t.Fatalf("RequireDualStack: %v", err)
	}
	_, err = dryCreate(t, e, withPolicy(svc("f", corev1.ServiceTypeClusterIP, ""), corev1.IPFamilyPolicySingleStack, corev1.IPv4Protocol))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ipFamilies[0]: Invalid value: \"IPv4\": not configured on this cluster") {
		t.Fatalf("IPv4 on an IPv6 cluster: %v", err)
	}
	_, err = dryCreate(t, e, svc("a", corev1.ServiceTypeClusterIP, "10.0.0.1"))
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "IPv4 is not configured on this cluster") {
		t.Fatalf("an IPv4 address on an IPv6 cluster: %v", err)
	}
	p := e.create(t, withPolicy(svc("p", corev1.ServiceTypeClusterIP, ""), corev1.IPFamilyPolicyPreferDualStack))
	if !slices.Equal(p.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv6Protocol}) || len(p.Spec.ClusterIPs) != 1 {
		t.Fatalf("PreferDualStack on IPv6: %v %v", p.Spec.IPFamilies, p.Spec.ClusterIPs)
	}
	h := svc("h", corev1.ServiceTypeClusterIP, corev1.ClusterIPNone)
	h = e.create(t, h)
	if *h.Spec.IPFamilyPolicy != corev1.IPFamilyPolicyRequireDualStack || !slices.Equal(h.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}) {
		t.Fatalf("selectorless headless: %v %v", *h.Spec.IPFamilyPolicy, h.Spec.IPFamilies)
	}
}

// The repair covers both families: a lost IPv6 record is rebuilt and
// reported with the family in the message.
func TestRepairerRepairsBothFamilies(t *testing.T) {
	e := newDualEnv(t, "10.0.0.0/28,fd00::/124")
	ctx := context.Background()
	d := e.create(t, withPolicy(svc("d", corev1.ServiceTypeClusterIP, ""), corev1.IPFamilyPolicyRequireDualStack))
	v6 := netip.MustParseAddr(d.Spec.ClusterIPs[1])
	if err := e.s.AllIPs()[1].Release(ctx, v6); err != nil {
		t.Fatal(err)
	}
	var findings []ipallocator.Finding
	if err := ipallocator.NewRepairer(e.s, "/services", func(f ipallocator.Finding) { findings = append(findings, f) }).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	if got := e.held(t, d.Spec.ClusterIPs...); !slices.Equal(got, []bool{true, true}) {
		t.Fatalf("after repair held %v", got)
	}
	if len(findings) != 1 || findings[0].Reason != "ClusterIPNotAllocated" || findings[0].Message != "Cluster IP [IPv6]:"+v6.String()+" is not allocated; repairing" {
		t.Fatalf("findings %+v", findings)
	}
}

func ptr[T any](v T) *T { return &v }
