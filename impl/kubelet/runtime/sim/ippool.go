package sim

import (
	"fmt"
	"net/netip"

	mutation "github.com/kubeproof/kubeproof/impl/faults"
)

// ipPool hands out the host addresses of one IPv4 prefix, next-fit (so a
// released address is not reused at once), each to at most one live
// sandbox. The first host address is kept for the gateway, as the bridge
// CNI plugin does.
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

func newIPPool(cidr string) (*ipPool, error) {
	p, err := netip.ParsePrefix(cidr)
	if err != nil {
		return nil, fmt.Errorf("parsing pod CIDR %q: %w", cidr, err)
	}
	p = p.Masked()
	if !p.Addr().Is4() || p.Bits() > 30 {
		return nil, fmt.Errorf("pod CIDR %q: want an IPv4 prefix of /30 or larger", cidr)
	}
	// network address, gateway, ..., broadcast
	size := 1<<(32-p.Bits()) - 3
	return &ipPool{prefix: p, first: p.Addr().Next().Next(), size: size}, nil
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
	return netip.Addr{}, fmt.Errorf("no IP addresses available in range set %s", p.prefix)
}

// held reports whether the address at offset off is handed out.
func (p *ipPool) held(off int) bool {
	return off/64 < len(p.inUse) && p.inUse[off/64]&(1<<(off%64)) != 0
}

// release returns a to the pool (an address outside it, or not held, is
// ignored).
func (p *ipPool) release(a netip.Addr) {
	if !a.Is4() || !p.prefix.Contains(a) {
		return
	}
	off := int(addrValue(a)) - int(addrValue(p.first))
	if off >= 0 && off < p.size && p.held(off) {
		p.inUse[off/64] &^= 1 << (off % 64)
	}
}

func addrValue(a netip.Addr) uint32 {
	b := a.As4()
	return uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
}

// addrAt returns the IPv4 address off places after base.
func addrAt(base netip.Addr, off int) netip.Addr {
	v := addrValue(base) + uint32(off)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
