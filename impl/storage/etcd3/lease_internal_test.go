package etcd3

import (
	"context"
	"errors"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

func TestLeaseReuseAndLifetime(t *testing.T) {
	for _, tc := range []struct {
		ttl, reuse, lifetime time.Duration
	}{
		{time.Hour, time.Minute, time.Hour + time.Minute}, // kube-apiserver's default --event-ttl
		{10 * time.Minute, 30 * time.Second, 10*time.Minute + 30*time.Second},
		{2 * time.Second, 100 * time.Millisecond, 3 * time.Second}, // whole seconds, rounded up
	} {
		if got := leaseReuse(tc.ttl); got != tc.reuse {
			t.Errorf("leaseReuse(%s) = %s, want %s", tc.ttl, got, tc.reuse)
		}
		if got := leaseLifetime(tc.ttl); got != tc.lifetime {
			t.Errorf("leaseLifetime(%s) = %s, want %s", tc.ttl, got, tc.lifetime)
		}
	}
}

// Writes share a lease while it keeps their object at least the TTL, for
// at most maxLeaseAttachments writes; then a new one is granted for the
// TTL plus the reuse window.
func TestLeasesShareOneLeasePerWindow(t *testing.T) {
	start := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	now := start
	var granted []int64
	ls := &leases{
		ttl: time.Hour,
		grant: func(_ context.Context, seconds int64) (clientv3.LeaseID, error) {
			granted = append(granted, seconds)
			return clientv3.LeaseID(len(granted)), nil
		},
		now: func() time.Time { return now },
	}
	get := func() clientv3.LeaseID {
		t.Helper()
		id, err := ls.get(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return id
	}
	if id := get(); id != 1 || len(granted) != 1 || granted[0] != 3660 {
		t.Fatalf("first write: lease %d, grants %v; want lease 1 granted for 3660 s", id, granted)
	}
	now = start.Add(59 * time.Second) // inside the minute of reuse
	if id := get(); id != 1 {
		t.Fatalf("a write 59 s later got lease %d, want 1 again", id)
	}
	now = start.Add(60 * time.Second) // lease 1 would keep it only 3600 s: not more than the TTL
	if id := get(); id != 2 || len(granted) != 2 {
		t.Fatalf("a write 60 s later got lease %d (grants %v), want a new lease 2", id, granted)
	}
	for range maxLeaseAttachments - 1 {
		if id := get(); id != 2 {
			t.Fatalf("got lease %d within lease 2's attachments, want 2", id)
		}
	}
	if id := get(); id != 3 {
		t.Fatalf("write %d on one lease got lease %d, want a new lease 3", maxLeaseAttachments+1, id)
	}
}

// A failed grant fails the write and is asked again by the next one.
func TestLeasesGrantFailure(t *testing.T) {
	fail := errors.New("etcdserver: request timed out")
	calls := 0
	ls := &leases{
		ttl: time.Hour,
		grant: func(context.Context, int64) (clientv3.LeaseID, error) {
			calls++
			if calls == 1 {
				return clientv3.NoLease, fail
			}
			return 7, nil
		},
		now: time.Now,
	}
	if _, err := ls.get(context.Background()); !errors.Is(err, fail) {
		t.Fatalf("first get: %v, want the grant's error", err)
	}
	if id, err := ls.get(context.Background()); err != nil || id != 7 {
		t.Fatalf("second get: %v %v, want lease 7", id, err)
	}
}

// A lease granted for a longer time than the TTL plus its window (before
// the TTL was lowered) is not reused; neither is none.
func TestGrantedLeaseReusable(t *testing.T) {
	now := time.Date(2026, 11, 24, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name string
		l    grantedLease
		want bool
	}{
		{"none", grantedLease{}, false},
		{"fresh", grantedLease{id: 1, expires: now.Add(3660 * time.Second), attached: 1}, true},
		{"expires exactly at the TTL", grantedLease{id: 1, expires: now.Add(time.Hour), attached: 1}, false},
		{"granted for a longer TTL", grantedLease{id: 1, expires: now.Add(2 * time.Hour), attached: 1}, false},
		{"full", grantedLease{id: 1, expires: now.Add(3660 * time.Second), attached: maxLeaseAttachments}, false},
	} {
		if got := tc.l.reusable(now, time.Hour); got != tc.want {
			t.Errorf("%s: reusable = %v, want %v", tc.name, got, tc.want)
		}
	}
}
