package apiserver_test

import (
	"context"
	"net/netip"
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kubeproof/kubeproof/impl/apiserver"
)

// Dual-stack services through client-go on an IPv6,IPv4 cluster: the
// `kubernetes` service is IPv6 single-stack, PreferDualStack gets an
// address of each range (IPv6 first), an upgrade by patch takes an IPv4
// address, a downgrade by patch gives it back, and a server-side dry run
// reserves nothing.
func TestDualStackServices(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) { c.ServiceClusterIPRange = "fd00:10::/120,10.0.0.0/28" })
	ctx := context.Background()
	svcs := e.cs.CoreV1().Services("default")
	v6, v4 := netip.MustParsePrefix("fd00:10::/120"), netip.MustParsePrefix("10.0.0.0/28")

	k, err := svcs.Get(ctx, "kubernetes", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if k.Spec.ClusterIP != "fd00:10::1" || !slices.Equal(k.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv6Protocol}) {
		t.Fatalf("kubernetes service %v %v", k.Spec.ClusterIPs, k.Spec.IPFamilies)
	}

	plain, err := svcs.Create(ctx, newService("plain", corev1.ServiceTypeClusterIP, "", 0), metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if *plain.Spec.IPFamilyPolicy != corev1.IPFamilyPolicySingleStack || len(plain.Spec.ClusterIPs) != 1 || !v6.Contains(netip.MustParseAddr(plain.Spec.ClusterIP)) {
		t.Fatalf("default service: %v %v %v", *plain.Spec.IPFamilyPolicy, plain.Spec.IPFamilies, plain.Spec.ClusterIPs)
	}

	prefer := corev1.IPFamilyPolicyPreferDualStack
	d := newService("dual", corev1.ServiceTypeNodePort, "", 0)
	d.Spec.IPFamilyPolicy = &prefer
	dual, err := svcs.Create(ctx, d, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(dual.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv4Protocol}) || len(dual.Spec.ClusterIPs) != 2 ||
		!v6.Contains(netip.MustParseAddr(dual.Spec.ClusterIPs[0])) || !v4.Contains(netip.MustParseAddr(dual.Spec.ClusterIPs[1])) {
		t.Fatalf("PreferDualStack: %v %v", dual.Spec.IPFamilies, dual.Spec.ClusterIPs)
	}
	// The secondary address is taken: asking for it is refused.
	again := newService("again", corev1.ServiceTypeClusterIP, "", 0)
	again.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	again.Spec.ClusterIP, again.Spec.ClusterIPs = dual.Spec.ClusterIPs[1], []string{dual.Spec.ClusterIPs[1]}
	if _, err := svcs.Create(ctx, again, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "provided IP is already allocated") {
		t.Fatalf("create with a taken IPv4 address: %v", err)
	}

	// Upgrade by merge patch: the IPv4 address is allocated.
	up, err := svcs.Patch(ctx, "plain", types.MergePatchType, []byte(`{"spec":{"ipFamilyPolicy":"RequireDualStack"}}`), metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(up.Spec.ClusterIPs) != 2 || up.Spec.ClusterIPs[0] != plain.Spec.ClusterIP || !v4.Contains(netip.MustParseAddr(up.Spec.ClusterIPs[1])) {
		t.Fatalf("upgrade: %v %v", up.Spec.IPFamilies, up.Spec.ClusterIPs)
	}
	// A dry-run downgrade shows one address and releases nothing; the
	// real one releases the IPv4 address, which a new service may take.
	downPatch := []byte(`{"spec":{"ipFamilyPolicy":"SingleStack"}}`)
	dry, err := svcs.Patch(ctx, "plain", types.MergePatchType, downPatch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil || len(dry.Spec.ClusterIPs) != 1 {
		t.Fatalf("dry-run downgrade: %v %v", err, dry)
	}
	taker := newService("taker", corev1.ServiceTypeClusterIP, "", 0)
	taker.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol}
	taker.Spec.ClusterIP, taker.Spec.ClusterIPs = up.Spec.ClusterIPs[1], []string{up.Spec.ClusterIPs[1]}
	if _, err := svcs.Create(ctx, taker, metav1.CreateOptions{}); !apierrors.IsInvalid(err) {
		t.Fatalf("a dry-run downgrade released the address: %v", err)
	}
	down, err := svcs.Patch(ctx, "plain", types.MergePatchType, downPatch, metav1.PatchOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(down.Spec.ClusterIPs, up.Spec.ClusterIPs[:1]) || !slices.Equal(down.Spec.IPFamilies, []corev1.IPFamily{corev1.IPv6Protocol}) {
		t.Fatalf("downgrade: %v %v", down.Spec.IPFamilies, down.Spec.ClusterIPs)
	}
	got, err := svcs.Create(ctx, taker, metav1.CreateOptions{})
	if err != nil || got.Spec.ClusterIP != up.Spec.ClusterIPs[1] {
		t.Fatalf("the released IPv4 address: %v %v", err, got)
	}

	// RequireDualStack with a family list naming an unknown one is a 422
	// with upstream's field path.
	bad := newService("bad", corev1.ServiceTypeClusterIP, "", 0)
	bad.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv6Protocol, corev1.IPv6Protocol}
	if _, err := svcs.Create(ctx, bad, metav1.CreateOptions{}); !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.ipFamilies[1]: Duplicate value") {
		t.Fatalf("duplicate families: %v", err)
	}

	// The table's CLUSTER-IP cell lists both addresses.
	raw, err := e.cs.CoreV1().RESTClient().Get().AbsPath("/api/v1/namespaces/default/services/dual").
		SetHeader("Accept", "application/json;as=Table;v=v1;g=meta.k8s.io").DoRaw(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(raw), `"`+strings.Join(dual.Spec.ClusterIPs, ",")+`"`) {
		t.Fatalf("table does not show %v: %s", dual.Spec.ClusterIPs, raw)
	}
}

// A single-stack IPv4 cluster refuses RequireDualStack with upstream's
// message.
func TestSingleStackRefusesRequireDualStack(t *testing.T) {
	e := newEnv(t, func(c *apiserver.Config) { c.ServiceClusterIPRange = "10.0.0.0/28" })
	require := corev1.IPFamilyPolicyRequireDualStack
	s := newService("r", corev1.ServiceTypeClusterIP, "", 0)
	s.Spec.IPFamilyPolicy = &require
	_, err := e.cs.CoreV1().Services("default").Create(context.Background(), s, metav1.CreateOptions{})
	if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), `spec.ipFamilyPolicy: Invalid value: "RequireDualStack": this cluster is not configured for dual-stack services`) {
		t.Fatalf("RequireDualStack on single-stack: %v", err)
	}
}
