package ipallocator

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"

	"github.com/kubeproof/kubeproof/impl/ipfamily"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// DefaultServiceClusterIPRange is kubeadm's --service-cluster-ip-range.
const DefaultServiceClusterIPRange = "10.96.0.0/12"

// DefaultServiceNodePortRange is kube-apiserver's --service-node-port-range.
const DefaultServiceNodePortRange = "30000-32767"

// Record keys, relative to the storage prefix (kube-apiserver's): the
// primary service range's, the secondary's (dual-stack), the NodePorts'.
const (
	ServiceIPsKey          = "/ranges/serviceips"
	SecondaryServiceIPsKey = "/ranges/secondaryserviceips"
	ServiceNodePortsKey    = "/ranges/servicenodeports"
)

// IPs allocates ClusterIPs from a CIDR of one family. As kube-apiserver's
// bitmap allocator, the network address (and for IPv4 the broadcast
// address) are never handed out: offset 0 is the first address after the
// network address.
type IPs struct {
	cidr  netip.Prefix
	first netip.Addr
	r     *Range
}

// maxServiceCIDRBits is kube-apiserver's limit on a service range: at
// most 2^20 addresses, whatever the family.
const maxServiceCIDRBits = 20

// ParseCIDR checks one service range: an IPv4 or IPv6 CIDR of at most
// 2^20 addresses (a mask of at least /12 for IPv4, /108 for IPv6, as
// kube-apiserver) with room for at least two services.
func ParseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("service IP range %q: %w", s, err)
	}
	if p.Addr().Is4In6() {
		return netip.Prefix{}, fmt.Errorf("service IP range %q: an IPv4-mapped IPv6 range is neither family", s)
	}
	bits := p.Addr().BitLen()
	if bits-p.Bits() > maxServiceCIDRBits {
		return netip.Prefix{}, fmt.Errorf("service IP range %q is too large; for %d-bit addresses, the mask must be >= %d", s, bits, bits-maxServiceCIDRBits)
	}
	if p.Bits() > bits-2 {
		return netip.Prefix{}, fmt.Errorf("service IP range %q is too small: it must hold at least two addresses besides the network and broadcast addresses", s)
	}
	return p.Masked(), nil
}

// ParseCIDRs checks a --service-cluster-ip-range value: one range, or two
// of different families separated by a comma ("10.96.0.0/12,fd00::/108"
// or the other way round) for a dual-stack cluster, the first being the
// primary family (the `kubernetes` Service's, and the one services get
// when they ask for none). The errors are kube-apiserver's.
func ParseCIDRs(s string) ([]netip.Prefix, error) {
	parts := strings.Split(s, ",")
	if strings.TrimSpace(s) == "" {
		return nil, errors.New("--service-cluster-ip-range must contain at least one valid cidr")
	}
	if len(parts) > 2 {
		return nil, errors.New("--service-cluster-ip-range must not contain more than two entries")
	}
	var out []netip.Prefix
	for _, part := range parts {
		p, err := ParseCIDR(part)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) == 2 && ipfamily.OfAddr(out[0].Addr()) == ipfamily.OfAddr(out[1].Addr()) {
		return nil, errors.New("--service-cluster-ip-range[0] and --service-cluster-ip-range[1] must be of different IP family")
	}
	return out, nil
}

// NewIPs returns the allocator of cidr (from ParseCIDR) over store, the
// record being at ServiceIPsKey (the primary range).
func NewIPs(store storage.Interface, cidr netip.Prefix) *IPs {
	return NewIPsAt(store, ServiceIPsKey, cidr)
}

// NewServiceIPs returns the allocators of the service ranges cidrs (from
// ParseCIDRs) over store, the primary first: its records at
// ServiceIPsKey, a dual-stack cluster's second range's at
// SecondaryServiceIPsKey, as kube-apiserver's serviceips and
// secondaryserviceips.
func NewServiceIPs(store storage.Interface, cidrs []netip.Prefix) []*IPs {
	ips := []*IPs{NewIPs(store, cidrs[0])}
	if len(cidrs) == 2 {
		ips = append(ips, NewIPsAt(store, SecondaryServiceIPsKey, cidrs[1]))
	}
	return ips
}

// NewIPsAt returns the allocator of cidr over store with its records under
// key (SecondaryServiceIPsKey for a dual-stack cluster's second range).
func NewIPsAt(store storage.Interface, key string, cidr netip.Prefix) *IPs {
	free := cidr.Addr().BitLen() - cidr.Bits()
	// Not the network address; for IPv4 not the broadcast address either.
	size := 1<<free - 1
	if cidr.Addr().Is4() {
		size--
	}
	// KEP-3070: min(max(16, size/16), 256) low addresses are for requests.
	reserved := min(max(16, size/16), 256)
	return &IPs{cidr: cidr, first: cidr.Addr().Next(), r: NewRange(store, key, cidr.String(), size, reserved)}
}

// CIDR is the range served.
func (a *IPs) CIDR() netip.Prefix { return a.cidr }

// Contains reports whether ip can be allocated (inside the range, neither
// the network nor the broadcast address).
func (a *IPs) Contains(ip netip.Addr) bool {
	_, ok := a.offset(ip)
	return ok
}

// Family is the family of the range's addresses.
func (a *IPs) Family() corev1.IPFamily { return ipfamily.OfAddr(a.cidr.Addr()) }

// FirstIP is the range's first allocatable address, the `kubernetes`
// Service's ClusterIP.
func (a *IPs) FirstIP() netip.Addr { return a.first }

func (a *IPs) offset(ip netip.Addr) (int, bool) {
	if !a.cidr.Contains(ip) {
		return 0, false
	}
	d := new(big.Int).Sub(new(big.Int).SetBytes(ip.AsSlice()), new(big.Int).SetBytes(a.first.AsSlice()))
	if d.Sign() < 0 || d.Int64() >= int64(a.r.size) {
		return 0, false
	}
	return int(d.Int64()), true
}

func (a *IPs) ip(offset int) netip.Addr {
	v := new(big.Int).Add(new(big.Int).SetBytes(a.first.AsSlice()), big.NewInt(int64(offset)))
	if a.first.Is4() {
		var b [4]byte
		v.FillBytes(b[:])
		return netip.AddrFrom4(b)
	}
	var b [16]byte
	v.FillBytes(b[:])
	return netip.AddrFrom16(b)
}

// Allocate takes ip: ErrNotInRange, ErrAllocated, or a storage error.
func (a *IPs) Allocate(ctx context.Context, ip netip.Addr) error {
	o, ok := a.offset(ip)
	if !ok {
		return ErrNotInRange
	}
	return a.r.Allocate(ctx, o)
}

// AllocateNext takes a free address.
func (a *IPs) AllocateNext(ctx context.Context) (netip.Addr, error) {
	o, err := a.r.AllocateNext(ctx)
	if err != nil {
		return netip.Addr{}, err
	}
	return a.ip(o), nil
}

// CheckAllocate answers what Allocate(ip) would answer now without taking
// ip (a dry run): ErrNotInRange, ErrAllocated, a storage error, or nil.
func (a *IPs) CheckAllocate(ctx context.Context, ip netip.Addr) error {
	o, ok := a.offset(ip)
	if !ok {
		return ErrNotInRange
	}
	return checkFree(ctx, a.r, o)
}

// PeekNext returns an address AllocateNext could take now, other than
// those in except, without taking it (a dry run's pick).
func (a *IPs) PeekNext(ctx context.Context, except []netip.Addr) (netip.Addr, error) {
	var offs []int
	for _, ip := range except {
		if o, ok := a.offset(ip); ok {
			offs = append(offs, o)
		}
	}
	o, err := a.r.PeekNext(ctx, offs)
	if err != nil {
		return netip.Addr{}, err
	}
	return a.ip(o), nil
}

// checkFree is ErrAllocated when offset o of r is taken.
func checkFree(ctx context.Context, r *Range, o int) error {
	taken, err := r.Has(ctx, o)
	if err != nil {
		return err
	}
	if taken {
		return ErrAllocated
	}
	return nil
}

// Release frees ip (an address outside the range is ignored).
func (a *IPs) Release(ctx context.Context, ip netip.Addr) error {
	o, ok := a.offset(ip)
	if !ok {
		return nil
	}
	return a.r.Release(ctx, o)
}

// Has reports whether ip is allocated.
func (a *IPs) Has(ctx context.Context, ip netip.Addr) (bool, error) {
	o, ok := a.offset(ip)
	if !ok {
		return false, nil
	}
	return a.r.Has(ctx, o)
}

// Sync rebuilds the record from the addresses services hold when it is
// missing or was written for another range.
func (a *IPs) Sync(ctx context.Context, used []netip.Addr) error {
	var offs []int
	for _, ip := range used {
		if o, ok := a.offset(ip); ok {
			offs = append(offs, o)
		}
	}
	return a.r.Sync(ctx, offs)
}

// PortRange is a --service-node-port-range value.
type PortRange struct{ Base, Size int }

// String is the flag syntax, "30000-32767".
func (p PortRange) String() string { return fmt.Sprintf("%d-%d", p.Base, p.Base+p.Size-1) }

// Contains reports whether port is in the range.
func (p PortRange) Contains(port int) bool { return port >= p.Base && port < p.Base+p.Size }

// ParsePortRange parses "30000-32767" (or a single port "30000").
func ParsePortRange(s string) (PortRange, error) {
	lo, hi, found := strings.Cut(strings.TrimSpace(s), "-")
	if !found {
		hi = lo
	}
	base, err1 := strconv.Atoi(strings.TrimSpace(lo))
	last, err2 := strconv.Atoi(strings.TrimSpace(hi))
	if err := errors.Join(err1, err2); err != nil {
		return PortRange{}, fmt.Errorf("node port range %q: %w", s, err)
	}
	if base < 1 || last > 65535 || last < base {
		return PortRange{}, fmt.Errorf("node port range %q: want FIRST-LAST with 1 <= FIRST <= LAST <= 65535", s)
	}
	return PortRange{Base: base, Size: last - base + 1}, nil
}

// Ports allocates NodePorts.
type Ports struct {
	pr PortRange
	r  *Range
}

// NewPorts returns the allocator of pr over store, the record being at
// ServiceNodePortsKey.
func NewPorts(store storage.Interface, pr PortRange) *Ports {
	// KEP-3668: min(max(16, size/32), 128) low ports are for requests.
	reserved := min(max(16, pr.Size/32), 128)
	return &Ports{pr: pr, r: NewRange(store, ServiceNodePortsKey, pr.String(), pr.Size, reserved)}
}

// Range is the range served.
func (a *Ports) Range() PortRange { return a.pr }

// Allocate takes port: ErrNotInRange, ErrAllocated, or a storage error.
func (a *Ports) Allocate(ctx context.Context, port int) error {
	if !a.pr.Contains(port) {
		return ErrNotInRange
	}
	return a.r.Allocate(ctx, port-a.pr.Base)
}

// AllocateNext takes a free port.
func (a *Ports) AllocateNext(ctx context.Context) (int, error) {
	o, err := a.r.AllocateNext(ctx)
	if err != nil {
		return 0, err
	}
	return a.pr.Base + o, nil
}

// CheckAllocate answers what Allocate(port) would answer now without
// taking port (a dry run): ErrNotInRange, ErrAllocated, a storage error,
// or nil.
func (a *Ports) CheckAllocate(ctx context.Context, port int) error {
	if !a.pr.Contains(port) {
		return ErrNotInRange
	}
	return checkFree(ctx, a.r, port-a.pr.Base)
}

// PeekNext returns a port AllocateNext could take now, other than those in
// except, without taking it (a dry run's pick).
func (a *Ports) PeekNext(ctx context.Context, except []int) (int, error) {
	var offs []int
	for _, p := range except {
		if a.pr.Contains(p) {
			offs = append(offs, p-a.pr.Base)
		}
	}
	o, err := a.r.PeekNext(ctx, offs)
	if err != nil {
		return 0, err
	}
	return a.pr.Base + o, nil
}

// Release frees port (a port outside the range is ignored).
func (a *Ports) Release(ctx context.Context, port int) error {
	if !a.pr.Contains(port) {
		return nil
	}
	return a.r.Release(ctx, port-a.pr.Base)
}

// Has reports whether port is allocated.
func (a *Ports) Has(ctx context.Context, port int) (bool, error) {
	if !a.pr.Contains(port) {
		return false, nil
	}
	return a.r.Has(ctx, port-a.pr.Base)
}

// Sync rebuilds the record from the ports services hold when it is
// missing or was written for another range.
func (a *Ports) Sync(ctx context.Context, used []int) error {
	var offs []int
	for _, p := range used {
		if a.pr.Contains(p) {
			offs = append(offs, p-a.pr.Base)
		}
	}
	return a.r.Sync(ctx, offs)
}
