package sim

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

var _ runtime.PortForwarder = (*Runtime)(nil)

// PortForward implements runtime.PortForwarder. A simulated pod serves
// HTTP/1.1 on every port from its oldest running container: each request
// gets that container's http-status annotation (default 200) and a one-line
// body naming the container and port, as httpGet probes see it. A sandbox
// without a running container refuses the connection.
func (r *Runtime) PortForward(ctx context.Context, sandboxID string, port int32, stream io.ReadWriteCloser) error {
	defer stream.Close()
	br := bufio.NewReader(stream)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || ctx.Err() != nil {
				return nil
			}
			return fmt.Errorf("port %d: reading HTTP request: %w", port, err)
		}
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
		name, status, err := r.portServer(sandboxID)
		if err != nil {
			return fmt.Errorf("failed to connect to localhost:%d inside namespace of sandbox %s: connection refused", port, sandboxID)
		}
		body := fmt.Sprintf("kubeproof simulated container %s on port %d: %s %s\n", name, port, req.Method, req.URL.RequestURI())
		resp := &http.Response{
			StatusCode: status, ProtoMajor: 1, ProtoMinor: 1, Request: req,
			Header:        http.Header{"Content-Type": {"text/plain; charset=utf-8"}, "Content-Length": {strconv.Itoa(len(body))}},
			ContentLength: int64(len(body)), Body: io.NopCloser(strings.NewReader(body)),
			Close: req.Close,
		}
		if err := resp.Write(stream); err != nil {
			return nil // the client went away
		}
		if req.Close {
			return nil
		}
	}
}

// portServer is the container answering on the sandbox's ports.
func (r *Runtime) portServer(sandboxID string) (string, int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	var best *container
	seq, ok := r.ids.seq(sandboxID)
	for _, c := range r.containers {
		if ok && c.sandboxSeq == seq && c.state == runtimeapi.ContainerState_CONTAINER_RUNNING && (best == nil || c.seq < best.seq) {
			best = c
		}
	}
	if best == nil {
		return "", 0, errors.New("no running container")
	}
	return best.meta.Name, best.faults.httpStatus, nil
}
