package ipallocator

import (
	"net/netip"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

func holds(name, value string, offset int, inRange bool) holder {
	return holder{svc: types.NamespacedName{Namespace: "ns", Name: name}, value: value, offset: offset, inRange: inRange}
}

func reasons(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Service.Name+":"+f.Reason)
	}
	return out
}

func TestPlanRepair(t *testing.T) {
	kind := ipRepairOf(NewIPs(nil, netip.MustParsePrefix("10.0.0.0/28")))
	stored := map[int]bool{1: true, 2: true, 7: true}
	holders := []holder{
		holds("a", "10.0.0.2", 1, true),  // recorded: fine
		holds("b", "10.0.0.4", 3, true),  // not recorded: repaired
		holds("c", "10.0.0.2", 1, true),  // a's address: reported, not recorded twice
		holds("d", "10.1.0.1", 0, false), // out of range: reported
	}
	p := planRepair(kind, stored, holders, map[int]int{})
	if got, want := reasons(p.findings), []string{"b:ClusterIPNotAllocated", "c:ClusterIPAlreadyAllocated", "d:ClusterIPOutOfRange"}; !slices.Equal(got, want) {
		t.Fatalf("findings %v, want %v", got, want)
	}
	if p.findings[2].Message != "Cluster IP [IPv4]:10.1.0.1 is not within the configured Service CIDR 10.0.0.0/28; please recreate service" ||
		p.findings[0].Action != "ClusterIPAllocation" || p.findings[0].Controller != "ipallocator-repair-controller" {
		t.Fatalf("finding words: %+v", p.findings)
	}
	// 2 and 7 are held by no service: kept, counting down.
	for _, o := range []int{1, 2, 3, 7} {
		if !p.allocated[o] {
			t.Fatalf("offset %d not allocated after the first pass: %v", o, p.allocated)
		}
	}
	if len(p.allocated) != 4 || len(p.released) != 0 || p.leaks[2] != 1 || p.leaks[7] != 1 || len(p.leaks) != 2 {
		t.Fatalf("first pass: allocated %v released %v leaks %v", p.allocated, p.released, p.leaks)
	}
	// Second pass: 2 is held again (its create finished); 7 still not.
	p = planRepair(kind, p.allocated, append(holders, holds("e", "10.0.0.3", 2, true)), p.leaks)
	if !p.allocated[7] || len(p.released) != 0 || p.leaks[7] != 0 || len(p.leaks) != 1 {
		t.Fatalf("second pass: allocated %v released %v leaks %v", p.allocated, p.released, p.leaks)
	}
	if slices.Contains(reasons(p.findings), "e:ClusterIPNotAllocated") {
		t.Fatal("a value kept through its leak grace was reported not allocated")
	}
	// Third pass: 7 has been leaked for leakRuns passes: released.
	p = planRepair(kind, p.allocated, append(holders, holds("e", "10.0.0.3", 2, true)), p.leaks)
	if p.allocated[7] || !slices.Equal(p.released, []int{7}) || len(p.leaks) != 0 {
		t.Fatalf("third pass: allocated %v released %v leaks %v", p.allocated, p.released, p.leaks)
	}
}

func TestPlanRepairPorts(t *testing.T) {
	kind := portRepair
	kind.rangeName = "30000-30009"
	p := planRepair(kind, map[int]bool{}, []holder{holds("a", "30001", 1, true), holds("b", "31000", 1000, false)}, nil)
	if got, want := reasons(p.findings), []string{"a:PortNotAllocated", "b:PortOutOfRange"}; !slices.Equal(got, want) {
		t.Fatalf("findings %v, want %v", got, want)
	}
	if p.findings[1].Message != "Port 31000 is not within the port range 30000-30009; please recreate service" || p.findings[0].Controller != "portallocator-repair-controller" {
		t.Fatalf("finding words: %+v", p.findings)
	}
	if !p.allocated[1] || len(p.allocated) != 1 {
		t.Fatalf("allocated %v", p.allocated)
	}
}
