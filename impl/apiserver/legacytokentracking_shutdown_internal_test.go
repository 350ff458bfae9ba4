package apiserver

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"net"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
)

// TestLegacyTokenTrackingRunWaitsForItsWorker: run returns only once its
// worker has ended (and its informer), not as soon as its context does:
// its caller closes the client's connections after it, which must not be
// in use by a request still in flight.
func TestLegacyTokenTrackingRunWaitsForItsWorker(t *testing.T) {
	client := fake.NewClientset()
	inCreate := make(chan struct{})
	release := make(chan struct{})
	client.PrependReactor("create", "configmaps", func(clienttesting.Action) (bool, runtime.Object, error) {
		close(inCreate)
		<-release
		return false, nil, nil
	})
	c := newLegacyTokenTracking(client, clock.RealClock{}, newLegacyTrackingLimiter(), slog.New(slog.DiscardHandler))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		c.run(ctx)
	}()
	select {
	case <-inCreate:
	case <-time.After(10 * time.Second):
		t.Fatal("the first sync did not create the ConfigMap")
	}
	cancel()
	select {
	case <-done:
		close(release)
		t.Fatal("run returned while its worker was still creating the ConfigMap")
	case <-time.After(200 * time.Millisecond):
	}
	close(release)
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("run did not return once its worker had ended")
	}
}

// TestDialedConnsCloseAll: closeAll closes every connection dialed and
// still open (the peer reads EOF), and later dials are refused.
func TestDialedConnsCloseAll(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 3)
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			accepted <- c
		}
	}()
	d := &dialedConns{dialer: &net.Dialer{}}
	ctx := context.Background()
	var peers []net.Conn
	for range 3 {
		if _, err := d.dial(ctx, "tcp", ln.Addr().String()); err != nil {
			t.Fatal(err)
		}
		peers = append(peers, <-accepted)
	}
	d.closeAll()
	for i, p := range peers {
		_ = p.SetReadDeadline(time.Now().Add(10 * time.Second))
		if _, err := p.Read(make([]byte, 1)); !errors.Is(err, io.EOF) {
			t.Errorf("connection %d: peer read %v, want EOF", i, err)
		}
		p.Close()
	}
	if c, err := d.dial(ctx, "tcp", ln.Addr().String()); !errors.Is(err, net.ErrClosed) {
		t.Errorf("dial after closeAll: %v %v, want net.ErrClosed", c, err)
	}
}
