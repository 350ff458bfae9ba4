package compact

import (
	"context"
	"errors"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"

	"github.com/kubeproof/kubeproof/impl/storage/embedded"
	"github.com/kubeproof/kubeproof/impl/storage/internal/leakcheck"
)

func TestTwoServersCompactOncePerInterval(t *testing.T) {
	ctx := context.Background()
	e, err := embedded.Start(ctx, embedded.Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	c := e.Client()
	put := func() int64 {
		r, err := c.Put(ctx, "/registry/k", "v")
		if err != nil {
			t.Fatal(err)
		}
		return r.Header.Revision
	}
	put()

	// Interval 1: server A claims it (records the revision, no compaction);
	// server B, one step behind, only learns the new logical time.
	aTime, aRev, err := Step(ctx, c, 0, 0)
	if err != nil || aTime != 1 {
		t.Fatalf("A first step: time %d err %v", aTime, err)
	}
	bTime, _, err := Step(ctx, c, 0, 0)
	if err != nil || bTime != 1 {
		t.Fatalf("B first step: time %d err %v, want to learn time 1", bTime, err)
	}
	old := put()
	put()

	// Interval 2: A claims again and compacts to the revision it saw in
	// interval 1; B learns and does nothing.
	aTime, _, err = Step(ctx, c, aTime, aRev)
	if err != nil || aTime != 2 {
		t.Fatalf("A second step: time %d err %v", aTime, err)
	}
	if _, err := c.Get(ctx, "/registry/k", clientvRev(aRev-1)...); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("read below the compacted revision %d: err %v, want ErrCompacted", aRev, err)
	}
	if _, err := c.Get(ctx, "/registry/k", clientvRev(old)...); err != nil {
		t.Fatalf("read at revision %d after compaction to %d: %v", old, aRev, err)
	}
	bTime2, _, err := Step(ctx, c, bTime-1, 0)
	if err != nil || bTime2 != 2 {
		t.Fatalf("stale B: time %d err %v, want 2", bTime2, err)
	}
}

func TestCompactorStops(t *testing.T) {
	ctx := context.Background()
	e, err := embedded.Start(ctx, embedded.Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	check := leakcheck.Check(t)
	comp := Start(e.Client(), 10*time.Millisecond, nil)
	deadline := time.Now().Add(10 * time.Second)
	for {
		r, err := e.Client().Get(ctx, RevKey)
		if err != nil {
			t.Fatal(err)
		}
		if len(r.Kvs) == 1 && r.Kvs[0].Version >= 3 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("compactor did not advance compact_rev_key")
		}
		time.Sleep(10 * time.Millisecond)
	}
	comp.Stop()
	comp.Stop()
	check()
	Start(e.Client(), 0, nil).Stop()
}
