package etcd3

import (
	"context"
	"fmt"
	"sync"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// Objects with a time to live (storage.ResourceConfig.TTL: events, kept
// for kube-apiserver's --event-ttl) are written with an etcd lease, which
// deletes them when it expires; etcd's watch then reports the deletion.
// Granting a lease per write would double the writes, so, as
// kube-apiserver's storage does, writes share one: a lease granted for
// the TTL plus a reuse window (leaseLifetime) serves the writes of that
// window, up to maxLeaseAttachments of them, and each object written on it
// lives between the TTL and the TTL plus the window after its last write.
const (
	// leaseReuseFraction and maxLeaseReuse bound the reuse window: 5% of
	// the TTL, at most a minute (an hour's TTL: 60 s).
	leaseReuseFraction = 0.05
	maxLeaseReuse      = time.Minute
	// maxLeaseAttachments is how many writes one lease serves.
	maxLeaseAttachments = 1000
)

// leaseReuse is the reuse window of leases for objects that live ttl.
func leaseReuse(ttl time.Duration) time.Duration {
	return min(time.Duration(leaseReuseFraction*float64(ttl)), maxLeaseReuse)
}

// leaseLifetime is what leases for objects that live ttl are granted for:
// ttl and the reuse window, in whole seconds (etcd's unit), rounded up.
func leaseLifetime(ttl time.Duration) time.Duration {
	return (ttl + leaseReuse(ttl) + time.Second - 1).Truncate(time.Second)
}

// grantedLease is the lease the last write of a resource got.
type grantedLease struct {
	id       clientv3.LeaseID
	expires  time.Time // when etcd lets it expire, as granted
	attached int       // writes it has served
}

// reusable tells whether l may serve one more write, made at now, of an
// object that must live at least ttl: l still has more than ttl to live,
// no more than a lease granted now would (one granted for a longer TTL,
// before the TTL was lowered, is not used), and it has served fewer than
// maxLeaseAttachments writes.
func (l grantedLease) reusable(now time.Time, ttl time.Duration) bool {
	return l.id != clientv3.NoLease &&
		now.Add(ttl).Before(l.expires) &&
		!l.expires.After(now.Add(leaseLifetime(ttl))) &&
		l.attached < maxLeaseAttachments
}

// leases hands out the leases of one resource's writes.
type leases struct {
	ttl   time.Duration
	grant func(ctx context.Context, seconds int64) (clientv3.LeaseID, error)
	now   func() time.Time

	mu   sync.Mutex
	last grantedLease
}

func newLeases(client *clientv3.Client, ttl time.Duration) *leases {
	return &leases{
		ttl: ttl,
		grant: func(ctx context.Context, seconds int64) (clientv3.LeaseID, error) {
			resp, err := client.Lease.Grant(ctx, seconds)
			if err != nil {
				return clientv3.NoLease, err
			}
			return resp.ID, nil
		},
		now: time.Now,
	}
}

// get returns the lease the next write attaches its object to, granting
// a new one when the last cannot serve it (grantedLease.reusable).
func (ls *leases) get(ctx context.Context) (clientv3.LeaseID, error) {
	ls.mu.Lock()
	defer ls.mu.Unlock()
	now := ls.now()
	if ls.last.reusable(now, ls.ttl) {
		ls.last.attached++
		return ls.last.id, nil
	}
	lifetime := leaseLifetime(ls.ttl)
	seconds := int64(lifetime / time.Second)
	id, err := ls.grant(ctx, seconds)
	if err != nil {
		return clientv3.NoLease, fmt.Errorf("granting a %d s lease: %w", seconds, err)
	}
	ls.last = grantedLease{id: id, expires: now.Add(lifetime), attached: 1}
	return id, nil
}
