package sim

import (
	"context"
	"net/netip"
	"strings"
	"testing"
)

// A dual-stack runtime gives each sandbox an address of each family, the
// first CIDR's as the primary IP and the other in additionalIps (and in
// PodState); a full pool of either family refuses the sandbox without
// leaking the other's address; stopping releases both.
func TestDualStackSandboxes(t *testing.T) {
	ctx := context.Background()
	r, _ := newSim(t, "fd00:10:244:3::/125,10.244.3.0/29") // 6 IPv6 and 5 IPv4 assignable
	var ids []string
	seen := map[string]bool{}
	for i := range 5 {
		id, err := r.RunPodSandbox(ctx, sandboxConfig(string(rune('a'+i)), nil), "")
		if err != nil {
			t.Fatal(err)
		}
		st, err := r.PodSandboxStatus(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		v6, v4 := netip.MustParseAddr(st.Network.Ip), ""
		if len(st.Network.AdditionalIps) == 1 {
			v4 = st.Network.AdditionalIps[0].Ip
		}
		if !netip.MustParsePrefix("fd00:10:244:3::/125").Contains(v6) || v6 == netip.MustParseAddr("fd00:10:244:3::1") ||
			!strings.HasPrefix(v4, "10.244.3.") || seen[v6.String()] || seen[v4] {
			t.Fatalf("sandbox %d: %s %v", i, st.Network.Ip, st.Network.AdditionalIps)
		}
		seen[v6.String()], seen[v4] = true, true
		ps, err := r.PodState(ctx, string(rune('a'+i)))
		if err != nil || len(ps.Sandboxes) != 1 || ps.Sandboxes[0].IP != v6.String() || len(ps.Sandboxes[0].AdditionalIPs) != 1 || ps.Sandboxes[0].AdditionalIPs[0] != v4 {
			t.Fatalf("pod state %+v %v", ps, err)
		}
		ids = append(ids, id)
	}
	// The IPv4 pool is full: no sandbox, and no IPv6 address leaked.
	if _, err := r.RunPodSandbox(ctx, sandboxConfig("z", nil), ""); err == nil || !strings.Contains(err.Error(), "no IP addresses available") {
		t.Fatalf("IPv4 pool exhausted: %v", err)
	}
	if err := r.StopPodSandbox(ctx, ids[0]); err != nil {
		t.Fatal(err)
	}
	// One IPv6 address was never handed out and one is released: two
	// sandboxes would fit in IPv6, one in IPv4.
	if _, err := r.RunPodSandbox(ctx, sandboxConfig("y", nil), ""); err != nil {
		t.Fatalf("after a stop: %v", err)
	}
	if _, err := r.RunPodSandbox(ctx, sandboxConfig("x", nil), ""); err == nil {
		t.Fatal("an IPv4 address was handed out twice")
	}
}

func TestIPPoolsRefuseBadLists(t *testing.T) {
	for _, bad := range []string{"10.0.0.0/24,10.1.0.0/24", "fd00::/64,fd01::/64", "10.0.0.0/24,fd00::/64,10.1.0.0/24", "fd00::/127", "10.0.0.0/24,"} {
		if _, err := newIPPools(bad); err == nil {
			t.Errorf("newIPPools(%q) accepted", bad)
		}
	}
	p, err := newIPPool("fd00::/64")
	if err != nil || p.size != maxIPv6PoolSize {
		t.Fatalf("a /64: %v size %d", err, p.size)
	}
	a, err := p.allocate()
	if err != nil || a != netip.MustParseAddr("fd00::2") {
		t.Fatalf("first IPv6 address %s %v", a, err)
	}
	p.release(a)
	if p.held(0) {
		t.Fatal("release of an IPv6 address did not free it")
	}
}
