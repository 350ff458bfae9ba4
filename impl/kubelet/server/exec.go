package server

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/proxy"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime"
)

// DirectStreamingRuntime is a runtime that runs exec and attach sessions
// itself (the simulation): the kubelet serves the remote command protocol
// and hands it the client's streams. The shape is upstream's
// streaming.Runtime: the outcome is nil, an error with ExitStatus() int
// (the command's non-zero exit code), or a failure.
type DirectStreamingRuntime interface {
	Exec(ctx context.Context, containerID string, cmd []string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error
	Attach(ctx context.Context, containerID string, stdin io.Reader, stdout, stderr io.WriteCloser, tty bool, resize <-chan remotecommand.TerminalSize) error
}

// IndirectStreamingRuntime is a CRI runtime: its Exec and Attach return the
// URL of the runtime's own streaming server, and the kubelet proxies the
// client's upgraded connection there (upstream's default,
// --redirect-container-streaming having been removed).
type IndirectStreamingRuntime interface {
	GetExec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	GetAttach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
}

// streamRequest is the query of /exec or /attach.
type streamRequest struct {
	command []string
	opts    StreamOptions
}

// parseStreamRequest parses the query of /exec (withCommand) or /attach as
// upstream's kubelet (remotecommand NewOptions): a stream flag is set only
// by the value "1" (what kube-apiserver sends; "true" is not set); at
// least one stream, and with a TTY no separate stderr (upstream drops it
// rather than failing).
func parseStreamRequest(req *http.Request, withCommand bool) (streamRequest, error) {
	q := req.URL.Query()
	sr := streamRequest{command: q["command"]}
	o := &sr.opts
	o.Stdin, o.Stdout, o.Stderr, o.TTY = q.Get("stdin") == "1", q.Get("stdout") == "1", q.Get("stderr") == "1", q.Get("tty") == "1"
	if o.TTY {
		o.Stderr = false
	}
	switch {
	case withCommand && len(sr.command) == 0:
		return sr, errors.New("you must specify at least one command for the container")
	case !o.Stdin && !o.Stdout && !o.Stderr:
		return sr, errors.New("you must specify at least 1 of stdin, stdout, stderr")
	}
	return sr, nil
}

// serveExec serves /exec/{namespace}/{pod}/{container}: through the CRI
// runtime's streaming server (proxied), or the simulation's Exec on the
// streams this kubelet serves.
func (m *Mux) serveExec(w http.ResponseWriter, req *http.Request, namespace, pod, container string) {
	sr, err := parseStreamRequest(req, true)
	if err != nil {
		writeStatusError(w, http.StatusBadRequest, err.Error())
		return
	}
	k, p, _, ok := m.lookupContainer(func(code int, msg string) { writeStatusError(w, code, msg) }, namespace, pod, container)
	if !ok {
		return
	}
	rt := k.Runtime()
	id, err := runningContainerID(req.Context(), rt, p, container)
	if err != nil {
		writeStatusError(w, http.StatusInternalServerError, err.Error())
		return
	}
	if id == "" {
		writeStatusError(w, http.StatusBadRequest, fmt.Sprintf("container not found (%q)", container))
		return
	}
	switch s := rt.(type) {
	case IndirectStreamingRuntime:
		resp, err := s.GetExec(req.Context(), &runtimeapi.ExecRequest{ContainerId: id, Cmd: sr.command,
			Stdin: sr.opts.Stdin, Stdout: sr.opts.Stdout, Stderr: sr.opts.Stderr, Tty: sr.opts.TTY})
		if err != nil {
			writeStatusError(w, http.StatusInternalServerError, fmt.Sprintf("exec in container %s: %v", container, err))
			return
		}
		m.proxyStream(w, req, resp.GetUrl())
	case DirectStreamingRuntime:
		ServeStreams(w, req, sr.opts, sr.command, m.opts.StreamCreationTimeout,
			func(ctx context.Context, stdin io.Reader, stdout, stderr io.WriteCloser, resize <-chan remotecommand.TerminalSize) error {
				return s.Exec(ctx, id, sr.command, stdin, stdout, stderr, sr.opts.TTY, resize)
			})
	default:
		writeStatusError(w, http.StatusBadRequest, "container runtime does not support exec")
	}
}

// runningContainerID returns the id of the running instance of the pod's
// container ("" if none runs), found by the labels the kubelet puts on it.
func runningContainerID(ctx context.Context, rt runtime.Runtime, pod *v1.Pod, container string) (string, error) {
	cs, err := rt.ListContainers(ctx, &runtimeapi.ContainerFilter{
		State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		LabelSelector: map[string]string{
			runtime.LabelPodUID: string(pod.UID), runtime.LabelContainerName: container,
		},
	})
	if err != nil {
		return "", fmt.Errorf("listing the containers of pod %s: %w", pod.Name, err)
	}
	var newest *runtimeapi.Container
	for _, c := range cs {
		if newest == nil || c.CreatedAt > newest.CreatedAt {
			newest = c
		}
	}
	if newest == nil {
		return "", nil
	}
	return newest.Id, nil
}

// proxyStream proxies the client's upgrade request to the runtime's
// streaming URL and copies the upgraded connection both ways, as
// upstream's kubelet does for CRI runtimes.
func (m *Mux) proxyStream(w http.ResponseWriter, req *http.Request, rawURL string) {
	u, err := url.Parse(rawURL)
	if err != nil || u.Host == "" {
		writeStatusError(w, http.StatusInternalServerError, fmt.Sprintf("the runtime returned an invalid streaming URL %q", rawURL))
		return
	}
	h := proxy.NewUpgradeAwareHandler(u, nil, false, true, streamProxyResponder{})
	h.ServeHTTP(w, req)
}

// streamProxyResponder writes a failure to reach the runtime's streaming
// server as a Status.
type streamProxyResponder struct{}

func (streamProxyResponder) Error(w http.ResponseWriter, _ *http.Request, err error) {
	writeStatusError(w, http.StatusInternalServerError, fmt.Sprintf("error proxying to the container runtime's streaming server: %v", err))
}
