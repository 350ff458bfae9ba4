package server

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// serveAttach serves /attach/{namespace}/{pod}/{container}: the client's
// streams are connected to the running container's own stdio. As upstream,
// whether the session has a TTY is the container's setting (spec.tty: a
// process's terminal cannot change after it started); stdin can only be
// attached to a container created with stdin: true.
func (m *Mux) serveAttach(w http.ResponseWriter, req *http.Request, namespace, pod, container string) {
	sr, err := parseStreamRequest(req, false)
	if err != nil {
		writeStatusError(w, http.StatusBadRequest, err.Error())
		return
	}
	k, p, spec, ok := m.lookupContainer(func(code int, msg string) { writeStatusError(w, code, msg) }, namespace, pod, container)
	if !ok {
		return
	}
	if sr.opts.Stdin && !spec.Stdin {
		writeStatusError(w, http.StatusBadRequest, fmt.Sprintf(
			"cannot attach to the stdin of container %s in pod %s: the container does not accept stdin (set stdin: true in its spec)", container, pod))
		return
	}
	rt := k.Runtime()
	id, err := runningContainerID(req.Context(), rt, p, container)
	if err != nil {
		writeStatusError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if id == "" {
		writeStatusError(w, http.StatusBadRequest, fmt.Sprintf("container %s is not running in pod %s", container, pod))
		return
	}
	switch s := rt.(type) {
	case IndirectStreamingRuntime:
		resp, err := s.GetAttach(req.Context(), &runtimeapi.AttachRequest{ContainerId: id,
			Stdin: sr.opts.Stdin, Stdout: sr.opts.Stdout, Stderr: sr.opts.Stderr, Tty: spec.TTY})
		if err != nil {
			writeStatusError(w, http.StatusInternalServerError, fmt.Sprintf("attach to container %s: %v", container, err))
			return
		}
		m.proxyStream(w, req, resp.GetUrl())
	case DirectStreamingRuntime:
		ServeStreams(w, req, sr.opts, nil, m.opts.StreamCreationTimeout,
			func(ctx context.Context, stdin io.Reader, stdout, stderr io.WriteCloser, resize <-chan remotecommand.TerminalSize) error {
				return s.Attach(ctx, id, stdin, stdout, stderr, spec.TTY, resize)
			})
	default:
		writeStatusError(w, http.StatusBadRequest, "container runtime does not support attach")
	}
}
