package h2sched

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"

	"golang.org/x/net/http2"
)

// New must use this package's scheduler with the x/net in go.mod; if this
// fails, x/net changed FrameWriteRequest and New fell back to the random
// scheduler.
func TestFrameWriteRequestLayout(t *testing.T) {
	if !layoutKnown {
		t.Fatal("http2.FrameWriteRequest has no stream pointer at field 1")
	}
	if _, ok := New().(adapter); !ok {
		t.Fatalf("New returned %T, want this package's scheduler", New())
	}
	// The zero request has no stream: a connection frame.
	if !frameIsControl(http2.FrameWriteRequest{}) {
		t.Fatal("a request without a stream is not a control frame")
	}
	if n := testing.AllocsPerRun(100, func() { frameIsControl(http2.FrameWriteRequest{}) }); n != 0 {
		t.Fatalf("frameIsControl allocates %.0f times", n)
	}
}

// The scheduler behind x/net's real server: many idle streams open on one
// connection while large responses (beyond the 64 KiB initial window, so
// flow control blocks and WINDOW_UPDATEs resume them) are sent whole,
// a panicking handler's stream is reset and a client that gives up
// mid-response does not stop the others.
func TestServesThroughXNetServer(t *testing.T) {
	const (
		idle  = 300
		large = 20
		size  = 1 << 20
	)
	body := bytes.Repeat([]byte("0123456789abcdef"), size/16)
	release := make(chan struct{})
	var idleStarted sync.WaitGroup
	idleStarted.Add(idle)
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.ProtoMajor != 2 {
			http.Error(w, "not HTTP/2", http.StatusHTTPVersionNotSupported)
			return
		}
		switch r.URL.Path {
		case "/idle":
			w.WriteHeader(http.StatusOK)
			w.(http.Flusher).Flush()
			idleStarted.Done()
			select {
			case <-release:
			case <-r.Context().Done():
			}
		case "/large":
			_, _ = w.Write(body)
		case "/panic":
			panic(http.ErrAbortHandler)
		}
	})
	var schedulers atomic.Int32
	ts := httptest.NewUnstartedServer(handler)
	if err := http2.ConfigureServer(ts.Config, &http2.Server{
		MaxConcurrentStreams: 1000,
		NewWriteScheduler: func() http2.WriteScheduler {
			schedulers.Add(1)
			return &classifyCheck{WriteScheduler: New(), t: t}
		},
	}); err != nil {
		t.Fatal(err)
	}
	ts.TLS = ts.Config.TLSConfig
	ts.StartTLS()
	defer ts.Close()
	defer close(release)

	roots := x509.NewCertPool()
	roots.AddCert(ts.Certificate())
	tr := &http2.Transport{TLSClientConfig: &tls.Config{RootCAs: roots}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	get := func(ctx context.Context, path string) (*http.Response, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, ts.URL+path, nil)
		if err != nil {
			return nil, err
		}
		return client.Do(req)
	}

	// One request first, so that the client has the server's SETTINGS
	// (1,000 streams) and puts every later stream on this connection.
	resp, err := get(ctx, "/large")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	errs := make(chan error, idle+large+2)
	var wg sync.WaitGroup
	for range idle {
		wg.Go(func() {
			resp, err := get(ctx, "/idle")
			if err != nil {
				errs <- err
				return
			}
			// Held open until the test ends.
			go func() { _, _ = io.Copy(io.Discard, resp.Body); resp.Body.Close() }()
		})
	}
	wg.Wait()
	idleStarted.Wait()

	for range large {
		wg.Go(func() {
			resp, err := get(ctx, "/large")
			if err != nil {
				errs <- err
				return
			}
			defer resp.Body.Close()
			got, err := io.ReadAll(resp.Body)
			if err != nil {
				errs <- err
			} else if !bytes.Equal(got, body) {
				errs <- errors.New("a large response arrived changed")
			}
		})
	}
	wg.Go(func() {
		if resp, err := get(ctx, "/panic"); err == nil {
			_, err = io.ReadAll(resp.Body)
			resp.Body.Close()
			if err == nil {
				errs <- errors.New("a panicking handler's stream was not reset")
			}
		}
	})
	wg.Go(func() {
		gctx, giveUp := context.WithCancel(ctx)
		defer giveUp()
		resp, err := get(gctx, "/large")
		if err != nil {
			errs <- err
			return
		}
		_, _ = resp.Body.Read(make([]byte, 1024))
		giveUp()
		resp.Body.Close()
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := schedulers.Load(); n != 1 {
		t.Fatalf("%d connections' schedulers, want all streams on one", n)
	}
}

// classifyCheck checks frameIsControl on the server's real frames: every
// connection frame (stream 0) is a control frame, no DATA frame is.
type classifyCheck struct {
	http2.WriteScheduler
	t *testing.T
}

func (c *classifyCheck) Push(wr http2.FrameWriteRequest) {
	if wr.StreamID() == 0 && !frameIsControl(wr) {
		c.t.Errorf("connection frame %v taken for a stream's", wr)
	}
	if wr.DataSize() > 0 && frameIsControl(wr) {
		c.t.Errorf("DATA frame %v taken for a control frame", wr)
	}
	c.WriteScheduler.Push(wr)
}
