package embedded

import (
	"context"
	"net"
	"strings"
	"testing"
	"time"

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
