package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"sync"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
)

// PortForwarder is implemented by kubelets that can forward a pod's ports
// (*kubelet.Kubelet does, through its runtime).
type PortForwarder interface {
	PortForward(ctx context.Context, namespace, pod string, port int32, stream io.ReadWriteCloser) error
}

// portForwardProtocolV1 is the SPDY subprotocol of port forwarding.
const portForwardProtocolV1 = "portforward.k8s.io"

// servePortForward serves /portForward/{namespace}/{pod} over SPDY/3.1 as
// upstream's streaming server does: the client opens a pair of streams
// (streamType error and data, same requestID, a port header) per
// connection it forwards; the data stream is connected to the port and
// any failure is written to the error stream.
func (m *Mux) servePortForward(w http.ResponseWriter, req *http.Request, namespace, pod string) {
	k, _, ok := m.kubeletFor(namespace, pod)
	if !ok {
		writeStatusError(w, http.StatusNotFound, fmt.Sprintf("pod %q does not exist", pod))
		return
	}
	pf, ok := k.(PortForwarder)
	if !ok {
		writeStatusError(w, http.StatusBadRequest, "this kubelet does not support port forwarding")
		return
	}
	if !httpstream.IsUpgradeRequest(req) {
		writeStatusError(w, http.StatusBadRequest, "port forwarding requires a SPDY/3.1 upgrade")
		return
	}
	if _, err := httpstream.Handshake(req, w, []string{portForwardProtocolV1}); err != nil {
		return // Handshake wrote the error
	}
	ctx := req.Context()
	// Forwarded connections end when the SPDY connection closes (their
	// streams are reset), so wait for them only after closing it.
	var wg sync.WaitGroup
	defer wg.Wait()
	streams := make(chan httpstream.Stream, 16)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, req, func(s httpstream.Stream, _ <-chan struct{}) error {
		if _, err := strconv.ParseUint(s.Headers().Get(v1.PortHeader), 10, 16); err != nil {
			return fmt.Errorf("invalid port header %q", s.Headers().Get(v1.PortHeader))
		}
		if s.Headers().Get(v1.PortForwardRequestIDHeader) == "" {
			return fmt.Errorf("missing %s header", v1.PortForwardRequestIDHeader)
		}
		select {
		case streams <- s:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	})
	if conn == nil {
		return // the upgrader wrote the error
	}
	defer conn.Close()
	conn.SetIdleTimeout(4 * time.Hour)

	type pair struct{ data, errs httpstream.Stream }
	pairs := map[string]*pair{}
	for {
		select {
		case <-conn.CloseChan():
			return
		case <-ctx.Done():
			return
		case s := <-streams:
			id := s.Headers().Get(v1.PortForwardRequestIDHeader)
			p := pairs[id]
			if p == nil {
				p = &pair{}
				pairs[id] = p
			}
			switch s.Headers().Get(v1.StreamType) {
			case v1.StreamTypeData:
				p.data = s
			case v1.StreamTypeError:
				p.errs = s
			default:
				_ = s.Reset()
				continue
			}
			if p.data == nil || p.errs == nil {
				continue
			}
			delete(pairs, id)
			port, _ := strconv.ParseUint(p.data.Headers().Get(v1.PortHeader), 10, 16)
			wg.Add(1)
			go func(p *pair) {
				defer wg.Done()
				defer p.errs.Close()
				if err := pf.PortForward(ctx, namespace, pod, int32(port), p.data); err != nil {
					msg := fmt.Sprintf("error forwarding port %d to pod %s: %v", port, pod, err)
					m.log.Debug("port forward", "err", msg)
					_, _ = io.WriteString(p.errs, msg)
				}
			}(p)
		}
	}
}
