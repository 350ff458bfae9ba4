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
	inUse  map[netip.Addr]bool
	next   int // offset tried next
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
	return &ipPool{prefix: p, first: p.Addr().Next().Next(), size: size, inUse: map[netip.Addr]bool{}}, nil
}

func (p *ipPool) allocate() (netip.Addr, error) {
	if mutation.Enabled(mutation.KubeletReusesIP) { // mutation: hand out a held IP (KUBELET-3)
		for a := range p.inUse {
			return a, nil
		}
	}
	for i := 0; i < p.size; i++ {
		off := (p.next + i) % p.size
		a := addrAt(p.first, off)
		if !p.inUse[a] {
			p.inUse[a] = true
			p.next = (off + 1) % p.size
			return a, nil
		}
	}
	return netip.Addr{}, fmt.Errorf("no IP addresses available in range set %s", p.prefix)
}

func (p *ipPool) release(a netip.Addr) { delete(p.inUse, a) }

// addrAt returns the IPv4 address off places after base.
func addrAt(base netip.Addr, off int) netip.Addr {
	b := base.As4()
	v := uint32(b[0])<<24 | uint32(b[1])<<16 | uint32(b[2])<<8 | uint32(b[3])
	v += uint32(off)
	return netip.AddrFrom4([4]byte{byte(v >> 24), byte(v >> 16), byte(v >> 8), byte(v)})
}
