package ipallocator

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"net/netip"
	"strconv"
	"strings"

	"github.com/kubeproof/kubeproof/impl/storage"
)

// DefaultServiceClusterIPRange is kubeadm's --service-cluster-ip-range.
const DefaultServiceClusterIPRange = "10.96.0.0/12"

// DefaultServiceNodePortRange is kube-apiserver's --service-node-port-range.
const DefaultServiceNodePortRange = "30000-32767"

// Record keys, relative to the storage prefix (kube-apiserver's).
const (
	ServiceIPsKey       = "/ranges/serviceips"
	ServiceNodePortsKey = "/ranges/servicenodeports"
)

// IPs allocates ClusterIPs from a CIDR. As kube-apiserver's bitmap
// allocator, the network address (and for IPv4 the broadcast address) are
// never handed out: offset 0 is the first address after the network
// address.
type IPs struct {
	cidr  netip.Prefix
	first netip.Addr
	r     *Range
}

// ParseCIDR checks a --service-cluster-ip-range value: one IPv4 CIDR with a
// mask of at least /12 (at most 2^20 addresses, kube-apiserver's limit) and
// room for at least one service; IPv6 and dual-stack are not supported.
func ParseCIDR(s string) (netip.Prefix, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(s))
	if err != nil {
		return netip.Prefix{}, fmt.Errorf("service IP range %q: %w", s, err)
	}
	if !p.Addr().Is4() {
		return netip.Prefix{}, fmt.Errorf("service IP range %q: only single-stack IPv4 is supported", s)
	}
	if p.Bits() < 12 {
		return netip.Prefix{}, fmt.Errorf("service IP range %q is too large; for 32-bit addresses, the mask must be >= 12", s)
	}
	if p.Bits() > 30 {
		return netip.Prefix{}, fmt.Errorf("service IP range %q is too small: it must hold at least two addresses besides the network and broadcast addresses", s)
	}
	return p.Masked(), nil
}

// NewIPs returns the allocator of cidr (from ParseCIDR) over store, the
// record being at ServiceIPsKey.
func NewIPs(store storage.Interface, cidr netip.Prefix) *IPs {
	size := 1<<(32-cidr.Bits()) - 2
	// KEP-3070: min(max(16, size/16), 256) low addresses are for requests.
	reserved := min(max(16, size/16), 256)
	return &IPs{cidr: cidr, first: cidr.Addr().Next(), r: NewRange(store, ServiceIPsKey, cidr.String(), size, reserved)}
}

// CIDR is the range served.
func (a *IPs) CIDR() netip.Prefix { return a.cidr }

// Contains reports whether ip can be allocated (inside the range, neither
// the network nor the broadcast address).
func (a *IPs) Contains(ip netip.Addr) bool {
	_, ok := a.offset(ip)
	return ok
}

// FirstIP is the range's first allocatable address, the `kubernetes`
// Service's ClusterIP.
func (a *IPs) FirstIP() netip.Addr { return a.first }

func (a *IPs) offset(ip netip.Addr) (int, bool) {
	if !ip.Is4() || !a.cidr.Contains(ip) {
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
	var b [4]byte
	v.FillBytes(b[:])
	return netip.AddrFrom4(b)
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
