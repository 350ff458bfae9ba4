package ipallocator_test

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kubeproof/kubeproof/impl/registry/ipallocator"
	"github.com/kubeproof/kubeproof/impl/storage"
	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

var (
	etcdServer *embedded.Etcd
	prefixSeq  atomic.Int64
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "ipallocator-test-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	etcdServer, err = embedded.Start(context.Background(), embedded.Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting etcd:", err)
		return 1
	}
	defer etcdServer.Close()
	return m.Run()
}

// newStore is a store of allocation records under a fresh prefix; two
// calls with the same prefix share the records (two API servers).
func newStore(t *testing.T, prefix string, watchCache bool) storage.Interface {
	t.Helper()
	f := storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: prefix, WatchCache: watchCache})
	t.Cleanup(f.Close)
	s, _, err := f.New(storage.ResourceConfig{
		GroupResource:  schema.GroupResource{Resource: "rangeallocations"},
		StorageVersion: corev1.SchemeGroupVersion, ResourcePrefix: "/ranges",
		NewFunc:     func() runtime.Object { return &corev1.RangeAllocation{} },
		NewListFunc: func() runtime.Object { return &ipallocator.RecordList{} },
	})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func freshPrefix() string {
	return fmt.Sprintf("/test%d-%d", time.Now().UnixNano(), prefixSeq.Add(1))
}

func TestIPsAllocateReleaseAndBounds(t *testing.T) {
	ctx := context.Background()
	cidr, err := ipallocator.ParseCIDR("10.0.0.0/29") // 6 usable: .1 - .6
	if err != nil {
		t.Fatal(err)
	}
	a := ipallocator.NewIPs(newStore(t, freshPrefix(), true), cidr)
	if got := a.FirstIP(); got != netip.MustParseAddr("10.0.0.1") {
		t.Fatalf("FirstIP = %s", got)
	}
	for _, ip := range []string{"10.0.0.0", "10.0.0.7", "10.0.1.1"} {
		if err := a.Allocate(ctx, netip.MustParseAddr(ip)); !errors.Is(err, ipallocator.ErrNotInRange) {
			t.Errorf("Allocate(%s) = %v, want ErrNotInRange", ip, err)
		}
	}
	if err := a.Allocate(ctx, netip.MustParseAddr("10.0.0.1")); err != nil {
		t.Fatal(err)
	}
	if err := a.Allocate(ctx, netip.MustParseAddr("10.0.0.1")); !errors.Is(err, ipallocator.ErrAllocated) {
		t.Fatalf("second Allocate = %v, want ErrAllocated", err)
	}
	seen := map[netip.Addr]bool{netip.MustParseAddr("10.0.0.1"): true}
	for range 5 {
		ip, err := a.AllocateNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if seen[ip] || !a.Contains(ip) {
			t.Fatalf("AllocateNext gave %s (seen %v)", ip, seen)
		}
		seen[ip] = true
	}
	if _, err := a.AllocateNext(ctx); !errors.Is(err, ipallocator.ErrFull) {
		t.Fatalf("AllocateNext on a full range = %v, want ErrFull", err)
	}
	if err := a.Release(ctx, netip.MustParseAddr("10.0.0.4")); err != nil {
		t.Fatal(err)
	}
	if has, _ := a.Has(ctx, netip.MustParseAddr("10.0.0.4")); has {
		t.Fatal("released address still allocated")
	}
	ip, err := a.AllocateNext(ctx)
	if err != nil || ip != netip.MustParseAddr("10.0.0.4") {
		t.Fatalf("AllocateNext after release = %s, %v; want 10.0.0.4", ip, err)
	}
}

func TestDynamicAllocationPrefersTheUpperBand(t *testing.T) {
	ctx := context.Background()
	cidr, _ := ipallocator.ParseCIDR("10.96.0.0/24") // 254 usable, 16 reserved
	a := ipallocator.NewIPs(newStore(t, freshPrefix(), false), cidr)
	for range 50 {
		ip, err := a.AllocateNext(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if ip.As4()[3] <= 16 {
			t.Fatalf("dynamic allocation took %s from the reserved lower band while the upper band had room", ip)
		}
	}
}

// Two allocators over one etcd prefix (two API servers) allocating at the
// same time never hand out the same address, and every address is handed
// out once the range is exhausted.
func TestConcurrentAllocationIsUnique(t *testing.T) {
	ctx := context.Background()
	prefix := freshPrefix()
	cidr, _ := ipallocator.ParseCIDR("10.1.0.0/26") // 62 usable
	a1 := ipallocator.NewIPs(newStore(t, prefix, true), cidr)
	a2 := ipallocator.NewIPs(newStore(t, prefix, false), cidr)
	var mu sync.Mutex
	got := map[netip.Addr]int{}
	var wg sync.WaitGroup
	for i := range 8 {
		a := a1
		if i%2 == 1 {
			a = a2
		}
		wg.Go(func() {
			for {
				ip, err := a.AllocateNext(ctx)
				if errors.Is(err, ipallocator.ErrFull) {
					return
				}
				if err != nil {
					t.Error(err)
					return
				}
				mu.Lock()
				got[ip]++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if len(got) != 62 {
		t.Fatalf("allocated %d distinct addresses, want 62", len(got))
	}
	for ip, n := range got {
		if n != 1 {
			t.Errorf("%s handed out %d times", ip, n)
		}
	}
}

func TestPortsAndSync(t *testing.T) {
	ctx := context.Background()
	pr, err := ipallocator.ParsePortRange("30000-30009")
	if err != nil {
		t.Fatal(err)
	}
	prefix := freshPrefix()
	p := ipallocator.NewPorts(newStore(t, prefix, false), pr)
	if err := p.Allocate(ctx, 29999); !errors.Is(err, ipallocator.ErrNotInRange) {
		t.Fatalf("Allocate(29999) = %v", err)
	}
	if err := p.Allocate(ctx, 30005); err != nil {
		t.Fatal(err)
	}
	if err := p.Allocate(ctx, 30005); !errors.Is(err, ipallocator.ErrAllocated) {
		t.Fatalf("second Allocate = %v", err)
	}
	// Sync keeps a record of the same range.
	if err := p.Sync(ctx, nil); err != nil {
		t.Fatal(err)
	}
	if has, _ := p.Has(ctx, 30005); !has {
		t.Fatal("Sync dropped an allocation of the same range")
	}
	// A changed range is rebuilt from what services hold.
	wider, _ := ipallocator.ParsePortRange("30000-30019")
	p2 := ipallocator.NewPorts(newStore(t, prefix, false), wider)
	if err := p2.Allocate(ctx, 30015); err == nil {
		t.Fatal("allocation in a record of another range succeeded before Sync")
	}
	if err := p2.Sync(ctx, []int{30001, 30015}); err != nil {
		t.Fatal(err)
	}
	for port, want := range map[int]bool{30001: true, 30015: true, 30005: false} {
		if has, _ := p2.Has(ctx, port); has != want {
			t.Errorf("after Sync Has(%d) = %v, want %v", port, has, want)
		}
	}
	for _, bad := range []string{"", "x-y", "30010-30000", "0-10", "30000-70000"} {
		if _, err := ipallocator.ParsePortRange(bad); err == nil {
			t.Errorf("ParsePortRange(%q) accepted", bad)
		}
	}
	for _, bad := range []string{"10.0.0.0/8", "fd00::/96", "fd00::/127", "10.0.0.0/31", "nope"} {
		if _, err := ipallocator.ParseCIDR(bad); err == nil {
			t.Errorf("ParseCIDR(%q) accepted", bad)
		}
	}
}

// A /12 is kept in blocks of 4096 addresses: every record stays at most
// 512 bytes however the allocations spread, and Free counts across them.
func TestLargeRangeIsKeptInSmallBlocks(t *testing.T) {
	ctx := context.Background()
	store := newStore(t, freshPrefix(), true)
	cidr, _ := ipallocator.ParseCIDR(ipallocator.DefaultServiceClusterIPRange)
	a := ipallocator.NewIPs(store, cidr)
	if err := a.Allocate(ctx, a.FirstIP()); err != nil {
		t.Fatal(err)
	}
	for range 50 {
		if _, err := a.AllocateNext(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var list ipallocator.RecordList
	if err := store.GetList(ctx, ipallocator.ServiceIPsKey, storage.ListOptions{Recursive: true, Predicate: storage.Everything()}, &list); err != nil {
		t.Fatal(err)
	}
	if len(list.Items) < 2 {
		t.Fatalf("%d records for 51 addresses spread over a /12", len(list.Items))
	}
	for _, rec := range list.Items {
		if len(rec.Data) > 512 || rec.Range != "10.96.0.0/12" {
			t.Errorf("record %s: %d bytes, range %q", rec.Name, len(rec.Data), rec.Range)
		}
	}
	r := ipallocator.NewRange(store, ipallocator.ServiceIPsKey, "10.96.0.0/12", 1<<20-2, 256)
	if free, err := r.Free(ctx); err != nil || free != 1<<20-2-51 {
		t.Fatalf("Free = %d, %v; want %d", free, err, 1<<20-2-51)
	}
}
