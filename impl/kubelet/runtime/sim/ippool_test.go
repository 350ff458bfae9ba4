package sim

import (
	"net/netip"
	"testing"
)

// The pool hands out each address of its prefix once (skipping the
// network, gateway and broadcast addresses), next-fit, and takes back only
// its own held addresses.
func TestIPPoolHandsOutEachAddressOnceNextFit(t *testing.T) {
	p, err := newIPPool("10.0.0.0/29") // .2 to .6 assignable
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for i := 0; i < 5; i++ {
		a, err := p.allocate()
		if err != nil {
			t.Fatalf("allocation %d: %v", i, err)
		}
		got = append(got, a.String())
	}
	if want := "[10.0.0.2 10.0.0.3 10.0.0.4 10.0.0.5 10.0.0.6]"; stringsOf(got) != want {
		t.Errorf("allocated %v, want %s", got, want)
	}
	if a, err := p.allocate(); err == nil {
		t.Errorf("a full pool handed out %s", a)
	}
	p.release(netip.MustParseAddr("10.0.0.3"))
	p.release(netip.MustParseAddr("10.0.1.3")) // not ours
	p.release(netip.MustParseAddr("10.0.0.7")) // broadcast, never handed out
	if a, err := p.allocate(); err != nil || a.String() != "10.0.0.3" {
		t.Errorf("after releasing .3: %v %v, want 10.0.0.3", a, err)
	}
	if a, err := p.allocate(); err == nil {
		t.Errorf("a full pool handed out %s", a)
	}
}

func TestIPPoolBeyondOneWord(t *testing.T) {
	p, err := newIPPool("10.1.0.0/22")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[netip.Addr]bool{}
	for i := 0; i < p.size; i++ {
		a, err := p.allocate()
		if err != nil {
			t.Fatalf("allocation %d of %d: %v", i, p.size, err)
		}
		if seen[a] || !p.prefix.Contains(a) {
			t.Fatalf("allocation %d: %s twice or outside %s", i, a, p.prefix)
		}
		seen[a] = true
	}
	last := netip.MustParseAddr("10.1.3.254")
	if !seen[last] {
		t.Errorf("%s never handed out", last)
	}
	// Next-fit: after releasing two addresses the earlier one is found
	// after wrapping around from the last allocation.
	p.release(netip.MustParseAddr("10.1.1.10"))
	p.release(netip.MustParseAddr("10.1.2.200"))
	if a, _ := p.allocate(); a.String() != "10.1.1.10" {
		t.Errorf("got %s, want 10.1.1.10", a)
	}
	if a, _ := p.allocate(); a.String() != "10.1.2.200" {
		t.Errorf("got %s, want 10.1.2.200", a)
	}
}

func stringsOf(s []string) string {
	out := "["
	for i, x := range s {
		if i > 0 {
			out += " "
		}
		out += x
	}
	return out + "]"
}
