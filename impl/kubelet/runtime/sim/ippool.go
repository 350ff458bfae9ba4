package sim

import (
	"encoding/binary"
	"fmt"
	"net/netip"
	"strings"

	mutation "github.com/kubeproof/kubeproof/impl/faults"
)

// ipPool hands out the host addresses of one IPv4 or IPv6 prefix,
// next-fit (so a released address is not reused at once), each to at most
// one live sandbox. The first host address is kept for the gateway, as the
// bridge CNI plugin does; an IPv6 pool hands out at most maxIPv6PoolSize
// addresses (a /64 has more than any node holds pods).
type ipPool struct {
	prefix netip.Prefix
	first  netip.Addr // first assignable address
	size   int        // number of assignable addresses
	// inUse has bit off set while the address at offset off is held; it
	// grows as far as the highest offset handed out (a /24 needs four
	// words, where a map cost about 60 bytes per address).
	inUse []uint64
	next  int // offset tried next
}

// maxIPv6PoolSize bounds an IPv6 pool.
const maxIPv6PoolSize = 1 << 16

func newIPPool(cidr string) (*ipPool, error) {
	p, err := netip.ParsePrefix(strings.TrimSpace(cidr))
	if err != nil {
		return nil, fmt.Errorf("parsing pod CIDR %q: %w", cidr, err)
	}
	p = p.Masked()
	if p.Addr().Is4() {
		if p.Bits() > 30 {
			return nil, fmt.Errorf("pod CIDR %q: want an IPv4 prefix of /30 or larger", cidr)
		}
		// network address, gateway, ..., broadcast
		return &ipPool{prefix: p, first: p.Addr().Next().Next(), size: 1<<(32-p.Bits()) - 3}, nil
	}
	if p.Addr().Is4In6() || p.Bits() > 126 {
		return nil, fmt.Errorf("pod CIDR %q: want an IPv6 prefix of /126 or larger", cidr)
	}
	// network address (subnet-router anycast), gateway, ...
	size := maxIPv6PoolSize
	if free := 128 - p.Bits(); free < 17 {
		size = 1<<free - 2
	}
	return &ipPool{prefix: p, first: p.Addr().Next().Next(), size: size}, nil
}

// newIPPools parses a pod CIDR list ("10.244.3.0/24" or, for a dual-stack
// node, "10.244.3.0/24,fd00:10:244:3::/64"): one pool per family, the
// primary first.
func newIPPools(cidrs string) ([]*ipPool, error) {
	var out []*ipPool
	for _, c := range strings.Split(cidrs, ",") {
		p, err := newIPPool(c)
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	if len(out) > 2 || len(out) == 2 && out[0].prefix.Addr().Is4() == out[1].prefix.Addr().Is4() {
		return nil, fmt.Errorf("pod CIDRs %q: want one CIDR, or two of different IP families", cidrs)
	}
	return out, nil
}

func (p *ipPool) allocate() (netip.Addr, error) {
	if mutation.Enabled(mutation.KubeletReusesIP) { // mutation: hand out a held IP (KUBELET-3)
		for off := 0; off < len(p.inUse)*64; off++ {
			if p.held(off) {
				return addrAt(p.first, off), nil
			}
		}
	}
	for i := 0; i < p.size; i++ {
		off := (p.next + i) % p.size
		if !p.held(off) {
			for len(p.inUse) <= off/64 {
				p.inUse = append(p.inUse, 0)
			}
			p.inUse[off/64] |= 1 << (off % 64)
			p.next = (off + 1) % p.size
			return addrAt(p.first, off), nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no IP addresses available in range set: %s", p.rangeSet())
}

// rangeSet is the pool's range as host-local IPAM prints a range set it
// has no address left in: "<start>-<end>", its default range of the
// subnet, from the address after the network's to the last one before
// the broadcast address (IPv4) or the last one (IPv6).
func (p *ipPool) rangeSet() string {
	end := lastAddr(p.prefix)
	if end.Is4() {
		end = end.Prev()
	}
	return p.prefix.Addr().Next().String() + "-" + end.String()
}

// lastAddr is the last address of prefix (masked).
func lastAddr(prefix netip.Prefix) netip.Addr {
	b := prefix.Addr().AsSlice()
	for i := range b {
		if bits := prefix.Bits() - i*8; bits < 8 {
			if bits < 0 {
				bits = 0
			}
			b[i] |= byte(0xff >> bits)
		}
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// held reports whether the address at offset off is handed out.
func (p *ipPool) held(off int) bool {
	return off/64 < len(p.inUse) && p.inUse[off/64]&(1<<(off%64)) != 0
}

// release returns a to the pool (an address outside it, or not held, is
// ignored).
func (p *ipPool) release(a netip.Addr) {
	if !p.prefix.Contains(a) {
		return
	}
	off, ok := addrOffset(p.first, a)
	if ok && off < p.size && p.held(off) {
		p.inUse[off/64] &^= 1 << (off % 64)
	}
}

// addrOffset is how many places a comes after base (same family; false
// when a is before base or too far).
func addrOffset(base, a netip.Addr) (int, bool) {
	if base.Is4() {
		d := int64(addrValue4(a)) - int64(addrValue4(base))
		return int(d), d >= 0
	}
	bh, bl := addrValue6(base)
	ah, al := addrValue6(a)
	if ah != bh || al < bl || al-bl > 1<<31 {
		return 0, false
	}
	return int(al - bl), true
}

func addrValue4(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// addrValue6 is an IPv6 address as its high and low 64 bits.
func addrValue6(a netip.Addr) (hi, lo uint64) {
	b := a.As16()
	return binary.BigEndian.Uint64(b[:8]), binary.BigEndian.Uint64(b[8:])
}

// addrAt returns the address off places after base.
func addrAt(base netip.Addr, off int) netip.Addr {
	if base.Is4() {
		v := addrValue4(base) + uint32(off)
		return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
	}
	hi, lo := addrValue6(base)
	sum := lo + uint64(off)
	if sum < lo {
		hi++
	}
	var b [16]byte
	binary.BigEndian.PutUint64(b[:8], hi)
	binary.BigEndian.PutUint64(b[8:], sum)
	return netip.AddrFrom16(b)
}
