package ipallocator_test

import (
	"context"
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
	"github.com/kubeproof/kubeproof/impl/storage"
)

// TestRepairerRebuildsTheRecords: a pass records the address and port a
// service holds but the records lost (reported NotAllocated), reports a
// service holding another's address or a port out of the range, and
// releases a value no service holds on the third pass that finds it so,
// not before; a pass over consistent records writes nothing.
func TestRepairerRebuildsTheRecords(t *testing.T) {
	e := newServiceEnv(t)
	ctx := context.Background()
	a := e.create(t, svc("a", corev1.ServiceTypeNodePort, "", 0))
	var findings []ipallocator.Finding
	rp := ipallocator.NewRepairer(e.s, "/services", func(f ipallocator.Finding) { findings = append(findings, f) })

	before := e.snapshot(t)
	if err := rp.RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	e.unchanged(t, before, "a pass over consistent records")
	if len(findings) != 0 {
		t.Fatalf("findings over consistent records: %+v", findings)
	}

	// A leaked address and port are taken for no one (while a's are still
	// held, so the random picks cannot be a's), then the records lose a's
	// address and port (as if an ambiguous failure had undone them).
	aIP := netip.MustParseAddr(a.Spec.ClusterIP)
	aPort := int(a.Spec.Ports[0].NodePort)
	leakedIP, err := e.s.IPs().AllocateNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	leakedPort, err := e.s.Ports().AllocateNext(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := e.s.IPs().Release(ctx, aIP); err != nil {
		t.Fatal(err)
	}
	if err := e.s.Ports().Release(ctx, aPort); err != nil {
		t.Fatal(err)
	}
	// Services written behind the allocator: one with a's address, one
	// with a port out of the range.
	dup := svc("dup", corev1.ServiceTypeClusterIP, a.Spec.ClusterIP)
	far := svc("far", corev1.ServiceTypeNodePort, "", 31000)
	far.Spec.ClusterIP, far.Spec.ClusterIPs = "None", []string{"None"}
	for _, s := range []*corev1.Service{dup, far} {
		if err := e.inner.Create(ctx, "/services/default/"+s.Name, s, &corev1.Service{}); err != nil {
			t.Fatal(err)
		}
	}

	for pass := 1; pass <= 3; pass++ {
		findings = nil
		if err := rp.RunOnce(ctx); err != nil {
			t.Fatal(err)
		}
		var got []string
		for _, f := range findings {
			got = append(got, f.Service.Name+":"+f.Reason)
		}
		slices.Sort(got)
		want := []string{"dup:ClusterIPAlreadyAllocated", "far:PortOutOfRange"}
		if pass == 1 {
			want = []string{"a:ClusterIPNotAllocated", "a:PortNotAllocated", "dup:ClusterIPAlreadyAllocated", "far:PortOutOfRange"}
		}
		if !slices.Equal(got, want) {
			t.Fatalf("pass %d: findings %v, want %v", pass, got, want)
		}
		for _, check := range []struct {
			what string
			has  func() (bool, error)
			want bool
		}{
			{"a's address", func() (bool, error) { return e.s.IPs().Has(ctx, aIP) }, true},
			{"a's port", func() (bool, error) { return e.s.Ports().Has(ctx, aPort) }, true},
			{"the leaked address", func() (bool, error) { return e.s.IPs().Has(ctx, leakedIP) }, pass < 3},
			{"the leaked port", func() (bool, error) { return e.s.Ports().Has(ctx, leakedPort) }, pass < 3},
		} {
			if has, err := check.has(); err != nil || has != check.want {
				t.Fatalf("pass %d: %s allocated = %v (%v), want %v", pass, check.what, has, err, check.want)
			}
		}
	}
	// The repaired records refuse a's values to a new service.
	if err := e.s.Create(ctx, "/services/default/b", svc("b", corev1.ServiceTypeNodePort, a.Spec.ClusterIP), &corev1.Service{}); err == nil {
		t.Fatal("a's repaired address was handed out again")
	}
}

// racingList is a services store whose first list runs race first: a
// write to the allocation records between a repair pass's reading them and
// its listing the services.
type racingList struct {
	storage.Interface
	race func()
}

func (r *racingList) GetList(ctx context.Context, key string, opts storage.ListOptions, listObj runtime.Object) error {
	if r.race != nil {
		race := r.race
		r.race = nil
		race()
	}
	return r.Interface.GetList(ctx, key, opts, listObj)
}

// TestRepairerLosesNoConcurrentAllocation: an address allocated after a
// pass read the records (a create under way) is not erased by the pass's
// write: the write is a compare-and-swap on what was read, and the retried
// pass keeps the address through its leak grace.
func TestRepairerLosesNoConcurrentAllocation(t *testing.T) {
	e := newServiceEnv(t)
	ctx := context.Background()
	a := e.create(t, svc("a", corev1.ServiceTypeClusterIP, ""))
	// a's record is lost, so the pass has something to write.
	if err := e.s.IPs().Release(ctx, netip.MustParseAddr(a.Spec.ClusterIP)); err != nil {
		t.Fatal(err)
	}
	var racing netip.Addr
	inner := &racingList{Interface: e.inner}
	inner.race = func() {
		var err error
		if racing, err = e.s.IPs().AllocateNext(ctx); err != nil {
			t.Error(err)
		}
	}
	s := ipallocator.NewServiceStorage(inner, e.s.AllIPs(), e.s.Ports(), nil)
	if err := ipallocator.NewRepairer(s, "/services", nil).RunOnce(ctx); err != nil {
		t.Fatal(err)
	}
	for _, ip := range []netip.Addr{racing, netip.MustParseAddr(a.Spec.ClusterIP)} {
		if has, err := e.s.IPs().Has(ctx, ip); err != nil || !has {
			t.Fatalf("%s not allocated after the pass: %v %v", ip, has, err)
		}
	}
}
