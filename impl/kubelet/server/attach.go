package server

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"time"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// serveAttach attaches to a running container's output: every line the
// container writes after the attach goes to the client's stdout or stderr
// stream (as the container wrote it), until the container stops running or
// the client goes away; then a Success status ends the session on the
// error stream. Output already written is not replayed (that is `logs`).
func (m *Mux) serveAttach(w http.ResponseWriter, req *http.Request, namespace, pod, container string) {
	er, err := parseStreamRequest(req, false)
	if err != nil {
		writeStatusError(w, http.StatusBadRequest, err.Error())
		return
	}
	k, ok := m.lookupContainer(func(code int, msg string) { writeStatusError(w, code, msg) }, namespace, pod, container)
	if !ok {
		return
	}
	if !k.ContainerRunning(req.Context(), namespace, pod, container) {
		writeStatusError(w, http.StatusBadRequest, fmt.Sprintf("container %s is not running in pod %s", container, pod))
		return
	}
	// The output written so far is where the attached stream starts.
	start, err := k.ContainerLogs(req.Context(), namespace, pod, container, false, runtime.LogOptions{})
	if err != nil {
		writeStatusError(w, http.StatusInternalServerError, err.Error())
		return
	}
	sent := len(start)
	run := func(ctx context.Context, s execStreams) {
		err := m.streamOutput(ctx, k, namespace, pod, container, sent, s)
		writeExecStatus(s.errorStream, nil, 0, err)
	}
	m.serveStreams(w, req, er, "attach", run)
}

// streamOutput copies the container's output lines after the first sent
// ones to the streams, polling the runtime, until the container stops.
func (m *Mux) streamOutput(ctx context.Context, k Kubelet, namespace, pod, container string, sent int, s execStreams) error {
	ticker := time.NewTicker(m.opts.FollowPollInterval)
	defer ticker.Stop()
	for {
		running := k.ContainerRunning(ctx, namespace, pod, container)
		lines, err := k.ContainerLogs(ctx, namespace, pod, container, false, runtime.LogOptions{})
		if err != nil {
			if ctx.Err() != nil || !running || !k.ContainerRunning(ctx, namespace, pod, container) {
				return nil // the client left, or the container (and its pod) is gone
			}
			return fmt.Errorf("reading the output of container %s: %w", container, err)
		}
		for _, l := range lines[min(sent, len(lines)):] {
			var out io.Writer = s.stdout
			if l.Stream == "stderr" {
				out = s.stderr
			}
			if out == nil {
				continue
			}
			if _, err := io.WriteString(out, l.Text+"\n"); err != nil {
				return nil // the client went away
			}
		}
		sent = max(sent, len(lines))
		if !running {
			return nil
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}
