package cluster

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"sync/atomic"
	"time"
)

// componentHealthz is the secure /healthz endpoint of a component run
// in-process (the controller manager, the scheduler), which
// kube-apiserver's componentstatuses probe as kube-controller-manager's and
// kube-scheduler's: "ok" (200) while the component runs, 500 "healthz
// check failed" before it starts, between restarts and after it stops.
type componentHealthz struct {
	name    string
	ln      net.Listener
	running atomic.Bool
}

// listenHealthz binds the health endpoint of component name at addr or,
// when that port is taken (another kubeproof up, a standalone component),
// at an ephemeral port of the same host, so that this cluster's API server
// probes its own component. Empty addr: no endpoint (nil).
func listenHealthz(name, addr string, log *slog.Logger) (*componentHealthz, error) {
	if addr == "" {
		return nil, nil
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		host, _, splitErr := net.SplitHostPort(addr)
		if splitErr != nil {
			return nil, fmt.Errorf("listening for the %s's /healthz on %s: %w", name, addr, err)
		}
		if ln, err = net.Listen("tcp", net.JoinHostPort(host, "0")); err != nil {
			return nil, fmt.Errorf("listening for the %s's /healthz on %s: %w", name, host, err)
		}
		log.Info("component health port taken; serving /healthz on another", "component", name, "wanted", addr, "address", ln.Addr().String())
	}
	return &componentHealthz{name: name, ln: ln}, nil
}

// URL is where the endpoint answers ("" for none).
func (h *componentHealthz) URL() string {
	if h == nil {
		return ""
	}
	return "https://" + h.ln.Addr().String() + "/healthz"
}

// close releases the endpoint's port when it is not served (serve closes
// it otherwise).
func (h *componentHealthz) close() {
	if h != nil {
		_ = h.ln.Close()
	}
}

// ServeHTTP answers /healthz.
func (h *componentHealthz) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/healthz" {
		http.NotFound(w, r)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	if !h.running.Load() {
		w.WriteHeader(http.StatusInternalServerError)
		_, _ = fmt.Fprintf(w, "[-]%s failed: not running\nhealthz check failed\n", h.name)
		return
	}
	_, _ = w.Write([]byte("ok"))
}

// serve serves the endpoint over TLS with cert until ctx ends.
func (h *componentHealthz) serve(ctx context.Context, cert tls.Certificate) error {
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second,
		TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}}
	served := make(chan error, 1)
	go func() { served <- srv.ServeTLS(h.ln, "", "") }()
	select {
	case err := <-served:
		return fmt.Errorf("serving the %s's /healthz: %w", h.name, err)
	case <-ctx.Done():
	}
	shutdownCtx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	_ = srv.Shutdown(shutdownCtx)
	if err := <-served; !errors.Is(err, http.ErrServerClosed) {
		return fmt.Errorf("serving the %s's /healthz: %w", h.name, err)
	}
	return nil
}

// track makes the endpoint healthy while run runs.
func (h *componentHealthz) track(run func() error) func() error {
	if h == nil {
		return run
	}
	return func() error {
		h.running.Store(true)
		defer h.running.Store(false)
		return run()
	}
}
