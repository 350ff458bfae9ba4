package apiserver_test

import (
	"context"
	"errors"
	"net"
	"path/filepath"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/apiserver"
	"github.com/kubeproof/kubeproof/impl/registry"
	"github.com/kubeproof/kubeproof/impl/storage/storagebackend"
)

// TestRunClosesGivenListenerOnError: a listener handed to the server
// (kubeproof apiserver listens itself since 492100bc, to print the port
// --secure-port 0 picked) is closed when Run fails before serving, here
// on a serving certificate that cannot be loaded; it stayed open, the
// port bound, until the process ended.
func TestRunClosesGivenListenerOnError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	missing := filepath.Join(t.TempDir(), "missing")
	srv, err := apiserver.New(apiserver.Config{
		StorageFactory: storagebackend.NewFactory(storagebackend.Config{Client: etcdServer.Client(), Prefix: "/run-listener"}),
		Resources:      registry.All(),
		CertFile:       missing + ".crt", KeyFile: missing + ".key",
		Listener: ln,
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := srv.Run(ctx); err == nil {
		t.Fatal("Run with a missing serving certificate succeeded")
	}
	if err := ln.(*net.TCPListener).SetDeadline(time.Now().Add(100 * time.Millisecond)); err != nil && !errors.Is(err, net.ErrClosed) {
		t.Fatal(err)
	}
	if _, err := ln.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Fatalf("after Run failed, Accept: %v, want the listener closed", err)
	}
}
