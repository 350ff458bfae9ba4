package server

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/go-logr/logr"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/httpstream"
	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/apimachinery/pkg/util/remotecommand"
	"k8s.io/klog/v2"
)

// execRequest is the query of /exec.
type execRequest struct {
	command                    []string
	stdin, stdout, stderr, tty bool
}

func parseExecRequest(req *http.Request) (execRequest, error) {
	return parseStreamRequest(req, true)
}

// parseStreamRequest parses the query of /exec (withCommand) or /attach.
func parseStreamRequest(req *http.Request, withCommand bool) (execRequest, error) {
	q := req.URL.Query()
	er := execRequest{command: q["command"]}
	for name, out := range map[string]*bool{"stdin": &er.stdin, "stdout": &er.stdout, "stderr": &er.stderr, "tty": &er.tty} {
		if v := q.Get(name); v != "" {
			b, err := strconv.ParseBool(v)
			if err != nil {
				return er, fmt.Errorf("%s: %q is not a boolean", name, v)
			}
			*out = b
		}
	}
	switch {
	case withCommand && len(er.command) == 0:
		return er, errors.New("you must specify at least one command for the container")
	case !er.stdin && !er.stdout && !er.stderr:
		return er, errors.New("you must specify at least 1 of stdin, stdout, stderr")
	case er.stdin || er.tty:
		return er, errors.New("kubeproof's kubelet streams non-interactively: stdin and tty are not supported")
	}
	return er, nil
}

// execStreams are the client's streams once connected; stdout and stderr
// are nil when not requested.
type execStreams struct {
	stdout, stderr io.Writer
	errorStream    io.Writer
}

// serveExec upgrades the connection (WebSocket or SPDY), runs the command
// and reports its result on the error stream.
func (m *Mux) serveExec(w http.ResponseWriter, req *http.Request, namespace, pod, container string) {
	er, err := parseExecRequest(req)
	if err != nil {
		writeStatusError(w, http.StatusBadRequest, err.Error())
		return
	}
	k, ok := m.lookupContainer(func(code int, msg string) { writeStatusError(w, code, msg) }, namespace, pod, container)
	if !ok {
		return
	}
	run := func(ctx context.Context, s execStreams) {
		stdout, stderr, code, err := k.ExecInContainer(ctx, namespace, pod, container, er.command, 0)
		if err == nil {
			if s.stdout != nil {
				_, _ = s.stdout.Write(stdout)
			}
			if s.stderr != nil {
				_, _ = s.stderr.Write(stderr)
			}
		}
		writeExecStatus(s.errorStream, er.command, code, err)
	}
	m.serveStreams(w, req, er, "exec", run)
}

// serveStreams upgrades an exec or attach request to WebSocket or SPDY
// and runs the session on its streams.
func (m *Mux) serveStreams(w http.ResponseWriter, req *http.Request, er execRequest, what string, run func(context.Context, execStreams)) {
	if wsstream.IsWebSocketRequest(req) {
		m.execWebSocket(w, req, er, run)
		return
	}
	if httpstream.IsUpgradeRequest(req) {
		m.execSPDY(w, req, er, run)
		return
	}
	writeStatusError(w, http.StatusBadRequest, what+" requires a WebSocket or SPDY/3.1 upgrade")
}

// writeStatusError answers an exec request that cannot be upgraded with a
// Status, as upstream's streaming server does; client-go shows its message.
func writeStatusError(w http.ResponseWriter, code int, msg string) {
	st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: int32(code), Reason: metav1.StatusReasonBadRequest, Message: msg}
	if code == http.StatusNotFound {
		st.Reason = metav1.StatusReasonNotFound
	}
	b, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// writeExecStatus writes the command's outcome as upstream does on the
// v4/v5 error stream: Success, NonZeroExitCode with an ExitCode cause, or
// a Failure carrying the error.
func writeExecStatus(w io.Writer, cmd []string, code int32, err error) {
	st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}
	switch {
	case err != nil:
		st.Status, st.Reason, st.Code = metav1.StatusFailure, metav1.StatusReasonInternalError, http.StatusInternalServerError
		st.Message = fmt.Sprintf("error executing command in container: %v", err)
	case code != 0:
		st.Status, st.Reason = metav1.StatusFailure, remotecommand.NonZeroExitCodeReason
		st.Message = fmt.Sprintf("command terminated with non-zero exit code: error executing command %v, exit code %d", cmd, code)
		st.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{
			Type: remotecommand.ExitCodeCauseType, Message: strconv.Itoa(int(code)),
		}}}
	}
	b, _ := json.Marshal(st)
	_, _ = w.Write(b)
}

// execWebSocket serves the v5 and v4 channel protocols: channel 0 stdin,
// 1 stdout, 2 stderr, 3 error, 4 resize.
func (m *Mux) execWebSocket(w http.ResponseWriter, req *http.Request, er execRequest, run func(context.Context, execStreams)) {
	channel := func(wanted bool) wsstream.ChannelType {
		if wanted {
			return wsstream.WriteChannel
		}
		return wsstream.IgnoreChannel
	}
	channels := []wsstream.ChannelType{
		wsstream.IgnoreChannel, channel(er.stdout), channel(er.stderr), wsstream.WriteChannel, wsstream.IgnoreChannel,
	}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{
		remotecommand.StreamProtocolV5Name: {Binary: true, Channels: channels},
		remotecommand.StreamProtocolV4Name: {Binary: true, Channels: channels},
	})
	conn.SetIdleTimeout(4 * time.Hour)
	// The connection's reader logs through the request's klog logger; it
	// would report our own close at the end of every session as an error.
	req = req.WithContext(klog.NewContext(req.Context(), logr.Discard()))
	_, streams, err := conn.Open(w, req)
	if err != nil {
		m.log.Debug("exec: websocket upgrade failed", "err", err)
		return
	}
	defer conn.Close()
	s := execStreams{errorStream: streams[remotecommand.StreamErr]}
	if er.stdout {
		s.stdout = streams[remotecommand.StreamStdOut]
	}
	if er.stderr {
		s.stderr = streams[remotecommand.StreamStdErr]
	}
	run(req.Context(), s)
}

// execSPDY serves v4.channel.k8s.io over SPDY/3.1: the client opens one
// stream per channel, named by its streamType header.
func (m *Mux) execSPDY(w http.ResponseWriter, req *http.Request, er execRequest, run func(context.Context, execStreams)) {
	if _, err := httpstream.Handshake(req, w, []string{remotecommand.StreamProtocolV4Name}); err != nil {
		return // Handshake wrote the error
	}
	type newStream struct {
		stream    httpstream.Stream
		replySent <-chan struct{}
	}
	done := make(chan struct{})
	defer close(done)
	streamCh := make(chan newStream)
	conn := spdy.NewResponseUpgrader().UpgradeResponse(w, req, func(s httpstream.Stream, replySent <-chan struct{}) error {
		select {
		case streamCh <- newStream{s, replySent}:
			return nil
		case <-done:
			return errors.New("exec session is over")
		}
	})
	if conn == nil {
		return // the upgrader wrote the error
	}
	defer conn.Close()
	conn.SetIdleTimeout(4 * time.Hour)

	expected := 1 // the error stream
	if er.stdout {
		expected++
	}
	if er.stderr {
		expected++
	}
	var s execStreams
	var replies []<-chan struct{}
	timeout := time.NewTimer(m.opts.StreamCreationTimeout)
	defer timeout.Stop()
	for received := 0; received < expected; {
		select {
		case ns := <-streamCh:
			received++
			replies = append(replies, ns.replySent)
			switch ns.stream.Headers().Get(v1.StreamType) {
			case v1.StreamTypeError:
				s.errorStream = ns.stream
			case v1.StreamTypeStdout:
				s.stdout = ns.stream
			case v1.StreamTypeStderr:
				s.stderr = ns.stream
			default:
				m.log.Debug("exec: unexpected stream", "type", ns.stream.Headers().Get(v1.StreamType))
				received--
			}
		case <-timeout.C:
			m.log.Debug("exec: timed out waiting for the client's streams")
			return
		case <-conn.CloseChan():
			return
		case <-req.Context().Done():
			return
		}
	}
	if s.errorStream == nil || (er.stdout && s.stdout == nil) || (er.stderr && s.stderr == nil) {
		return
	}
	for _, r := range replies {
		<-r
	}
	run(req.Context(), s)
	for _, st := range []io.Writer{s.stdout, s.stderr, s.errorStream} {
		if c, ok := st.(io.Closer); ok {
			_ = c.Close()
		}
	}
}
