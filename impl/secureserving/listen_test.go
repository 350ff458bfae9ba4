package secureserving

import (
	"context"
	"crypto/tls"
	"encoding/binary"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
)

// TestPermitPortSharing: with --permit-port-sharing two servers bind the
// same address and port (SO_REUSEPORT); without, the second fails.
func TestPermitPortSharing(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	_ = ln.Close()
	bind := func(share bool) (*Server, error) {
		o := NewOptions(port, "kube-scheduler")
		o.BindAddress, o.PermitPortSharing = "127.0.0.1", share
		return New(context.Background(), o, slog.New(slog.DiscardHandler))
	}
	first, err := bind(true)
	if err != nil {
		t.Fatal(err)
	}
	defer first.Close()
	second, err := bind(true)
	if err != nil {
		t.Fatalf("second server with --permit-port-sharing: %v", err)
	}
	_ = second.Close()
	if third, err := bind(false); err == nil {
		_ = third.Close()
		t.Error("a server without --permit-port-sharing bound a shared port")
	} else if !strings.Contains(err.Error(), "address already in use") {
		t.Errorf("without --permit-port-sharing: %v", err)
	}
}

// maxConcurrentStreams is the SETTINGS_MAX_CONCURRENT_STREAMS an HTTP/2
// server at base announces in its first SETTINGS frame.
func maxConcurrentStreams(t *testing.T, base string) uint32 {
	t.Helper()
	conn, err := tls.Dial("tcp", strings.TrimPrefix(base, "https://"), &tls.Config{InsecureSkipVerify: true, NextProtos: []string{"h2"}}) //nolint:gosec // test
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if p := conn.ConnectionState().NegotiatedProtocol; p != "h2" {
		t.Fatalf("negotiated %q, want h2", p)
	}
	// The client preface and an empty SETTINGS frame.
	if _, err := conn.Write(append([]byte("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"), 0, 0, 0, 4, 0, 0, 0, 0, 0)); err != nil {
		t.Fatal(err)
	}
	header := make([]byte, 9)
	if _, err := io.ReadFull(conn, header); err != nil {
		t.Fatal(err)
	}
	length := int(header[0])<<16 | int(header[1])<<8 | int(header[2])
	if header[3] != 4 {
		t.Fatalf("first frame type %d, want SETTINGS", header[3])
	}
	payload := make([]byte, length)
	if _, err := io.ReadFull(conn, payload); err != nil {
		t.Fatal(err)
	}
	for i := 0; i+6 <= len(payload); i += 6 {
		if binary.BigEndian.Uint16(payload[i:]) == 3 {
			return binary.BigEndian.Uint32(payload[i+2:])
		}
	}
	t.Fatal("no SETTINGS_MAX_CONCURRENT_STREAMS")
	return 0
}

// TestHTTP2MaxStreams: HTTP/2 connections get upstream's limit of 100
// concurrent streams, or --http2-max-streams-per-connection's.
func TestHTTP2MaxStreams(t *testing.T) {
	if got := maxConcurrentStreams(t, start(t, NewOptions(10259, "kube-scheduler"), nil)); got != 100 {
		t.Errorf("default: %d streams, want 100", got)
	}
	o := NewOptions(10259, "kube-scheduler")
	o.HTTP2MaxStreamsPerConnection = 7
	if got := maxConcurrentStreams(t, start(t, o, nil)); got != 7 {
		t.Errorf("--http2-max-streams-per-connection 7: %d streams", got)
	}
}
