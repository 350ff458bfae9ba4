package fakecri

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// This file is the fake runtime's streaming server, as containerd's: CRI
// Exec and Attach return a one-time URL (http://127.0.0.1:PORT/exec/TOKEN)
// on a loopback HTTP server; the kubelet proxies the client's upgraded
// connection there, and the session runs on the served runtime's own Exec
// and Attach (the simulation's) through the kubelet API's protocol code.
// The server starts on the first Exec or Attach; StopStreaming stops it.

// directStreamer is the served runtime's interactive exec and attach.
type directStreamer = server.DirectStreamingRuntime

// tokenTTL is how long a streaming URL stays valid unused (containerd's
// default stream idle timeout is longer; a minute is plenty in tests).
const tokenTTL = time.Minute

type pendingSession struct {
	attach    bool
	container string
	cmd       []string
	opts      server.StreamOptions
	expires   time.Time
}

// streaming is one Server's streaming server.
type streaming struct {
	mu       sync.Mutex
	srv      *http.Server
	base     string
	served   chan struct{} // closed when Serve returned
	sessions map[string]pendingSession
}

// streamings holds each Server's streaming server (kept beside the Server
// so that the stats and image parts of the fake can grow independently).
var streamings sync.Map // *Server -> *streaming

func (s *Server) streaming() *streaming {
	st, _ := streamings.LoadOrStore(s, &streaming{sessions: map[string]pendingSession{}})
	return st.(*streaming)
}

// Exec implements CRI: a URL for an exec session in a running container.
func (s *Server) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if len(req.Cmd) == 0 {
		return nil, status.Error(codes.InvalidArgument, "cmd is required")
	}
	if !req.Stdin && !req.Stdout && !req.Stderr {
		return nil, status.Error(codes.InvalidArgument, "one of stdin, stdout, or stderr must be set")
	}
	if req.Tty && req.Stderr {
		return nil, status.Error(codes.InvalidArgument, "tty and stderr cannot both be true")
	}
	u, err := s.newSession(ctx, pendingSession{container: req.ContainerId, cmd: req.Cmd,
		opts: server.StreamOptions{Stdin: req.Stdin, Stdout: req.Stdout, Stderr: req.Stderr, TTY: req.Tty}})
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ExecResponse{Url: u}, nil
}

// Attach implements CRI: a URL for attaching to a running container.
func (s *Server) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if !req.Stdin && !req.Stdout && !req.Stderr {
		return nil, status.Error(codes.InvalidArgument, "one of stdin, stdout, and stderr must be set")
	}
	u, err := s.newSession(ctx, pendingSession{attach: true, container: req.ContainerId,
		opts: server.StreamOptions{Stdin: req.Stdin, Stdout: req.Stdout, Stderr: req.Stderr && !req.Tty, TTY: req.Tty}})
	if err != nil {
		return nil, err
	}
	return &runtimeapi.AttachResponse{Url: u}, nil
}

// newSession checks the container runs, starts the streaming server if
// needed and returns the session's one-time URL.
func (s *Server) newSession(ctx context.Context, p pendingSession) (string, error) {
	if _, ok := s.rt.(directStreamer); !ok {
		return "", status.Errorf(codes.Unimplemented, "the %s runtime does not stream", s.rt.Type())
	}
	cs, err := s.rt.ListContainers(ctx, &runtimeapi.ContainerFilter{Id: p.container})
	if err != nil {
		return "", grpcErr(err)
	}
	if len(cs) == 0 {
		return "", status.Errorf(codes.NotFound, "container %q not found", p.container)
	}
	if cs[0].State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		return "", status.Errorf(codes.FailedPrecondition, "container %s is in %s state", p.container, cs[0].State)
	}
	st := s.streaming()
	base, err := st.start(s.rt.(directStreamer))
	if err != nil {
		return "", status.Error(codes.Internal, err.Error())
	}
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	token := hex.EncodeToString(b)
	p.expires = time.Now().Add(tokenTTL)
	st.mu.Lock()
	defer st.mu.Unlock()
	for t, old := range st.sessions {
		if time.Now().After(old.expires) {
			delete(st.sessions, t)
		}
	}
	st.sessions[token] = p
	kind := "exec"
	if p.attach {
		kind = "attach"
	}
	return base + "/" + kind + "/" + token, nil
}

// start runs the HTTP server once and returns its base URL.
func (st *streaming) start(rt directStreamer) (string, error) {
	st.mu.Lock()
	defer st.mu.Unlock()
	if st.srv != nil {
		return st.base, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("streaming server: %w", err)
	}
	st.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { st.serve(w, r, rt) }),
		ReadHeaderTimeout: 10 * time.Second}
	st.base = "http://" + ln.Addr().String()
	st.served = make(chan struct{})
	go func() {
		defer close(st.served)
		_ = st.srv.Serve(ln)
	}()
	return st.base, nil
}

// serve runs the session a token names, once.
func (st *streaming) serve(w http.ResponseWriter, r *http.Request, rt directStreamer) {
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	st.mu.Lock()
	var p pendingSession
	ok := len(parts) == 2
	if ok {
		p, ok = st.sessions[parts[1]]
		delete(st.sessions, parts[1])
	}
	st.mu.Unlock()
	if !ok || p.attach != (parts[0] == "attach") || time.Now().After(p.expires) {
		http.Error(w, "unknown or expired streaming session", http.StatusNotFound)
		return
	}
	server.ServeStreams(w, r, p.opts, p.cmd, 30*time.Second,
		func(ctx context.Context, stdin io.Reader, stdout, stderr io.WriteCloser, resize <-chan remotecommand.TerminalSize) error {
			if p.attach {
				return rt.Attach(ctx, p.container, stdin, stdout, stderr, p.opts.TTY, resize)
			}
			return rt.Exec(ctx, p.container, p.cmd, stdin, stdout, stderr, p.opts.TTY, resize)
		})
}

// StopStreaming stops the streaming server (if it started), ending the
// sessions it serves.
func (s *Server) StopStreaming() error {
	v, ok := streamings.LoadAndDelete(s)
	if !ok {
		return nil
	}
	st := v.(*streaming)
	st.mu.Lock()
	srv, served := st.srv, st.served
	st.mu.Unlock()
	if srv == nil {
		return nil
	}
	err := srv.Close()
	<-served
	if errors.Is(err, http.ErrServerClosed) {
		err = nil
	}
	return err
}
