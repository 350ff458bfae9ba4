package embedded

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"
	"testing"
	"time"

	"go.etcd.io/etcd/api/v3/v3rpc/rpctypes"
	clientv3 "go.etcd.io/etcd/client/v3"

	"github.com/kubeproof/kubeproof/impl/storage/internal/leakcheck"
)

func TestRestartKeepsDataAndReleasesPort(t *testing.T) {
	defer leakcheck.CheckAll(t)()
	ctx := context.Background()
	dir := t.TempDir()

	e, err := Start(ctx, Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := e.Client().Put(ctx, "/registry/x", "hello"); err != nil {
		t.Fatal(err)
	}
	endpoint := e.Endpoints()[0]
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// The port is free again once Close returns.
	host := strings.TrimPrefix(endpoint, "http://")
	l, err := net.Listen("tcp", host)
	if err != nil {
		t.Fatalf("port %s still in use after Close: %v", host, err)
	}
	l.Close()

	e2, err := Start(ctx, Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e2.Close()
	cctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	resp, err := e2.Client().Get(cctx, "/registry/x")
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != 1 || string(resp.Kvs[0].Value) != "hello" {
		t.Fatalf("after restart got %v, want the key written before", resp.Kvs)
	}
}

// TestInProcessClientSeesTheSameData writes through the in-process client
// and reads through gRPC and back, watches through a watcher of the
// in-process client, and leaves no goroutine behind after Close.
func TestInProcessClientSeesTheSameData(t *testing.T) {
	defer leakcheck.CheckAll(t)()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	e, err := Start(ctx, Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	in := e.InProcessClient()

	w := e.NewWatcher()
	defer w.Close()
	events := w.Watch(ctx, "/registry/", clientv3.WithPrefix(), clientv3.WithPrevKV())

	put, err := in.Put(ctx, "/registry/a", "from in-process")
	if err != nil {
		t.Fatal(err)
	}
	got, err := e.Client().Get(ctx, "/registry/a")
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Kvs) != 1 || string(got.Kvs[0].Value) != "from in-process" || got.Kvs[0].ModRevision != put.Header.Revision {
		t.Fatalf("gRPC client read %v, want the in-process write at revision %d", got.Kvs, put.Header.Revision)
	}
	if _, err := e.Client().Put(ctx, "/registry/a", "from gRPC"); err != nil {
		t.Fatal(err)
	}
	// A create Txn that finds the key answers Succeeded=false, as over gRPC.
	txn, err := in.Txn(ctx).If(clientv3.Compare(clientv3.ModRevision("/registry/a"), "=", 0)).
		Then(clientv3.OpPut("/registry/a", "again")).Commit()
	if err != nil {
		t.Fatal(err)
	}
	if txn.Succeeded {
		t.Fatal("create Txn on an existing key succeeded")
	}

	var seen []string
	for len(seen) < 2 {
		select {
		case wr := <-events:
			if err := wr.Err(); err != nil {
				t.Fatal(err)
			}
			for _, ev := range wr.Events {
				seen = append(seen, string(ev.Kv.Value))
			}
		case <-ctx.Done():
			t.Fatalf("watch saw %v, want both writes", seen)
		}
	}
	if seen[0] != "from in-process" || seen[1] != "from gRPC" {
		t.Fatalf("watch saw %v", seen)
	}

	// Compacted revisions are refused with etcd's usual error.
	if _, err := in.Compact(ctx, put.Header.Revision+1); err != nil {
		t.Fatal(err)
	}
	if _, err := in.Get(ctx, "/registry/a", clientv3.WithRev(put.Header.Revision)); !errors.Is(err, rpctypes.ErrCompacted) {
		t.Fatalf("read at a compacted revision: %v, want %v", err, rpctypes.ErrCompacted)
	}
}

// A free port can be taken by another process between being chosen and
// etcd listening on it; Start then chooses again instead of failing.
func TestStartChoosesAgainWhenAChosenPortIsTaken(t *testing.T) {
	defer leakcheck.CheckAll(t)()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	takenPort := taken.Addr().(*net.TCPAddr).Port

	choose := freeLoopbackPort
	handedOut := 0
	freeLoopbackPort = func() (int, error) {
		handedOut++
		if handedOut <= 2 { // the first attempt's client and peer ports
			return takenPort, nil
		}
		return choose()
	}
	defer func() { freeLoopbackPort = choose }()

	e, err := Start(context.Background(), Config{DataDir: t.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		t.Fatalf("Start with a taken port chosen first: %v", err)
	}
	defer e.Close()
	if handedOut < 4 {
		t.Errorf("ports handed out = %d, want a second choice of both", handedOut)
	}
	if strings.Contains(e.Endpoints()[0], fmt.Sprintf(":%d", takenPort)) {
		t.Errorf("endpoint %s uses the taken port", e.Endpoints()[0])
	}

	// A port the caller asked for is not replaced.
	_, err = Start(context.Background(), Config{DataDir: t.TempDir(), UnsafeNoFsync: true, ClientPort: takenPort, PeerPort: takenPort})
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Fatalf("Start on a taken, requested port: err = %v, want EADDRINUSE", err)
	}
}

// The single member keeps CatchUpEntries raft entries for followers, not
// etcd's default 5,000 (what etcd was configured with, read back from the
// running server), and what it wrote over many of its log compactions
// (one every 100 applied entries) is all there after a restart.
func TestSingleMemberKeepsFewCatchUpEntries(t *testing.T) {
	defer leakcheck.CheckAll(t)()
	ctx := context.Background()
	dir := t.TempDir()
	e, err := Start(ctx, Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	if got := e.server.Server.Cfg.SnapshotCatchUpEntries; got != CatchUpEntries {
		t.Errorf("etcd keeps %d catch-up entries, want %d", got, CatchUpEntries)
	}
	const n = 20 * CatchUpEntries
	for i := range n {
		if _, err := e.InProcessClient().Put(ctx, fmt.Sprintf("/registry/k%05d", i), fmt.Sprint(i)); err != nil {
			t.Fatal(err)
		}
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	e, err = Start(ctx, Config{DataDir: dir, UnsafeNoFsync: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	resp, err := e.Client().Get(ctx, "/registry/k", clientv3.WithPrefix())
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.Kvs) != n {
		t.Fatalf("after restart %d keys, want %d", len(resp.Kvs), n)
	}
	for i, kv := range resp.Kvs {
		if string(kv.Value) != fmt.Sprint(i) {
			t.Fatalf("after restart %s = %q, want %q", kv.Key, kv.Value, fmt.Sprint(i))
		}
	}
}

// BenchmarkPut is one 1 KiB put through the in-process client; its B/op
// and allocs/op include the server's apply and raft log (the whole
// process's allocations).
func BenchmarkPut(b *testing.B) {
	e, err := Start(context.Background(), Config{DataDir: b.TempDir(), UnsafeNoFsync: true})
	if err != nil {
		b.Fatal(err)
	}
	defer e.Close()
	kv := e.InProcessClient()
	value := strings.Repeat("x", 1024)
	ctx := context.Background()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if _, err := kv.Put(ctx, fmt.Sprintf("/registry/configmaps/ns/cm%d", i%10000), value); err != nil {
			b.Fatal(err)
		}
	}
}
