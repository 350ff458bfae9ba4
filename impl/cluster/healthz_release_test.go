package cluster

import (
	"context"
	"net"
	"testing"
)

// TestStartFailureReleasesHealthzPort: when Start fails after binding the
// controller manager's /healthz (here: the scheduler's address cannot be
// listened on), the controller manager's port is released, not left bound
// by a listener nothing serves or closes.
func TestStartFailureReleasesHealthzPort(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	_, err = Start(context.Background(), Config{DataDir: t.TempDir(), BindAddress: "127.0.0.1:0", UnsafeNoFsync: true, CompactionInterval: -1,
		ControllerManager: true, Scheduler: true,
		ControllerManagerHealthzAddress: addr, SchedulerHealthzAddress: "256.0.0.1:10259"})
	if err == nil {
		t.Fatal("Start with an address no one can listen on succeeded")
	}
	again, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatalf("the controller manager's /healthz port %s still bound after Start failed: %v", addr, err)
	}
	again.Close()
}
