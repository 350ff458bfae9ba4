package prober

import (
	"context"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
)

// TestFailedHTTPFallbackNotReported: an HTTPS hook answered in plain HTTP
// whose retry over HTTP fails too fails with the HTTPS request's error,
// and the fallback is not reported (no LifecycleHTTPFallback event, no
// count in kubelet_lifecycle_handler_http_fallbacks_total), as upstream's
// handler runner reports only a fallback that succeeded. The server
// answers the first connection in plain HTTP and drops every later one
// unanswered.
func TestFailedHTTPFallbackNotReported(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		for first := true; ; first = false {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			if first {
				// The TLS client hello read, a plain HTTP answer.
				_, _ = c.Read(make([]byte, 4096))
				_, _ = io.WriteString(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n")
			}
			_ = c.Close()
		}
	}()
	defer func() {
		_ = ln.Close()
		wg.Wait()
	}()

	req, err := http.NewRequestWithContext(context.Background(), http.MethodGet, "https://"+ln.Addr().String()+"/hook", nil)
	if err != nil {
		t.Fatal(err)
	}
	var reported []string
	err = sendHook(context.Background(), req, func(host string) { reported = append(reported, host) })
	if !answeredOverHTTP(err) {
		t.Errorf("error %v, want the HTTPS request's (server gave HTTP response to HTTPS client)", err)
	}
	if len(reported) != 0 {
		t.Errorf("failed fallback reported as a fallback to %v, want not reported", reported)
	}
}
