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
	clientremotecommand "k8s.io/client-go/tools/remotecommand"
	"k8s.io/klog/v2"
)

// This file is the remote command protocol of exec and attach, as the
// kubelet's (and a CRI runtime's) streaming server speaks it to client-go's
// executors:
//
//   - WebSocket, v5.channel.k8s.io and v4.channel.k8s.io: one binary
//     message per chunk, its first byte the channel: 0 stdin, 1 stdout,
//     2 stderr, 3 error (the final metav1.Status), 4 resize (JSON
//     TerminalSize). v5 adds the close signal: a message on channel 255
//     naming channel 0 half-closes stdin.
//   - SPDY/3.1, v5.channel.k8s.io and v4.channel.k8s.io (the same over
//     SPDY): the client opens one stream per channel, named by its
//     streamType header; it half-closes the stdin stream at EOF; the resize
//     stream carries a sequence of JSON TerminalSize objects.
//
// With a TTY there is no separate stderr (upstream drops it: the terminal
// merges both), and resize events are delivered.

// StreamOptions are the streams an exec or attach session asks for.
type StreamOptions struct {
	Stdin, Stdout, Stderr, TTY bool
}

// Session runs an exec or attach on the client's streams: stdin is nil
// unless requested, stdout and stderr nil when not requested (stderr is
// always nil with a TTY); resize delivers the terminal's size changes with
// a TTY (and is closed when the session's connection ends). Its error is
// the outcome: nil (Success), an error with an ExitStatus() int method (a
// non-zero exit code, e.g. k8s.io/client-go/util/exec.CodeExitError), or
// any other failure.
type Session func(ctx context.Context, stdin io.Reader, stdout, stderr io.WriteCloser, resize <-chan clientremotecommand.TerminalSize) error

// streamProtocols are the subprotocols served, preferred first.
var streamProtocols = []string{remotecommand.StreamProtocolV5Name, remotecommand.StreamProtocolV4Name}

// ServeStreams upgrades req to WebSocket or SPDY (whichever the client
// asked for), runs session on the streams and writes the session's outcome
// as a metav1.Status on the error channel (cmd names the command in a
// non-zero exit's message; nil for attach). A request that is no upgrade
// gets a 400 Status. creationTimeout bounds how long the client may take
// to open its SPDY streams.
func ServeStreams(w http.ResponseWriter, req *http.Request, opts StreamOptions, cmd []string, creationTimeout time.Duration, session Session) {
	if opts.TTY {
		opts.Stderr = false
	}
	switch {
	case wsstream.IsWebSocketRequest(req):
		serveWebSocket(w, req, opts, cmd, session)
	case httpstream.IsUpgradeRequest(req):
		serveSPDY(w, req, opts, cmd, creationTimeout, session)
	default:
		writeStatusError(w, http.StatusBadRequest, "the request must be upgraded to WebSocket or SPDY/3.1")
	}
}

// writeStatusError answers a request that cannot be upgraded with a
// Status, as upstream's streaming server does; client-go shows its message.
func writeStatusError(w http.ResponseWriter, code int, msg string) {
	st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure,
		Code: int32(code), Message: msg}
	switch code {
	case http.StatusNotFound:
		st.Reason = metav1.StatusReasonNotFound
	case http.StatusBadRequest:
		st.Reason = metav1.StatusReasonBadRequest
	default:
		st.Reason = metav1.StatusReasonInternalError
	}
	b, _ := json.Marshal(st)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(b)
}

// exitStatuser is the exit-code error of a command (client-go's and
// k8s.io/utils' exec.ExitError).
type exitStatuser interface{ ExitStatus() int }

// writeExecStatus writes a session's outcome as upstream does on the v4/v5
// error stream: Success, NonZeroExitCode with an ExitCode cause, or a
// Failure carrying the error.
func writeExecStatus(w io.Writer, cmd []string, err error) {
	st := metav1.Status{TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusSuccess}
	var exit exitStatuser
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.ExitStatus() != 0:
		code := exit.ExitStatus()
		st.Status, st.Reason = metav1.StatusFailure, remotecommand.NonZeroExitCodeReason
		st.Message = fmt.Sprintf("command terminated with non-zero exit code: error executing command %v, exit code %d", cmd, code)
		st.Details = &metav1.StatusDetails{Causes: []metav1.StatusCause{{
			Type: remotecommand.ExitCodeCauseType, Message: strconv.Itoa(code),
		}}}
	case errors.As(err, &exit):
	default:
		st.Status, st.Reason, st.Code = metav1.StatusFailure, metav1.StatusReasonInternalError, http.StatusInternalServerError
		st.Message = fmt.Sprintf("error executing command in container: %v", err)
	}
	b, _ := json.Marshal(st)
	_, _ = w.Write(b)
}

// nopWriteCloser lets a session close a stream it must not end early.
type nopWriteCloser struct{ io.Writer }

func (nopWriteCloser) Close() error { return nil }

// decodeResizes reads JSON TerminalSize objects from r until it fails,
// delivering each on the returned channel (closed at the end); done stops
// it when nobody listens any more.
func decodeResizes(r io.Reader, done <-chan struct{}) <-chan clientremotecommand.TerminalSize {
	ch := make(chan clientremotecommand.TerminalSize)
	go func() {
		defer close(ch)
		dec := json.NewDecoder(r)
		for {
			var size clientremotecommand.TerminalSize
			if err := dec.Decode(&size); err != nil {
				return
			}
			select {
			case ch <- size:
			case <-done:
				return
			}
		}
	}()
	return ch
}

// serveWebSocket serves the v5 and v4 channel protocols over WebSocket.
func serveWebSocket(w http.ResponseWriter, req *http.Request, opts StreamOptions, cmd []string, session Session) {
	pick := func(wanted bool, typ wsstream.ChannelType) wsstream.ChannelType {
		if wanted {
			return typ
		}
		return wsstream.IgnoreChannel
	}
	channels := []wsstream.ChannelType{
		pick(opts.Stdin, wsstream.ReadChannel),
		pick(opts.Stdout, wsstream.WriteChannel),
		pick(opts.Stderr, wsstream.WriteChannel),
		wsstream.WriteChannel,
		pick(opts.TTY, wsstream.ReadChannel),
	}
	protocols := map[string]wsstream.ChannelProtocolConfig{}
	for _, p := range streamProtocols {
		protocols[p] = wsstream.ChannelProtocolConfig{Binary: true, Channels: channels}
	}
	conn := wsstream.NewConn(protocols)
	conn.SetIdleTimeout(4 * time.Hour)
	// The connection's reader logs through the request's klog logger; it
	// would report our own close at the end of every session as an error.
	req = req.WithContext(klog.NewContext(req.Context(), logr.Discard()))
	_, streams, err := conn.Open(w, req)
	if err != nil {
		return // Open wrote the error
	}
	defer conn.Close()
	done := make(chan struct{})
	defer close(done)
	var (
		stdin          io.Reader
		stdout, stderr io.WriteCloser
		resize         <-chan clientremotecommand.TerminalSize
	)
	if opts.Stdin {
		stdin = streams[remotecommand.StreamStdIn]
	}
	if opts.Stdout {
		stdout = nopWriteCloser{streams[remotecommand.StreamStdOut]}
	}
	if opts.Stderr {
		stderr = nopWriteCloser{streams[remotecommand.StreamStdErr]}
	}
	if opts.TTY {
		resize = decodeResizes(streams[remotecommand.StreamResize], done)
	}
	err = session(req.Context(), stdin, stdout, stderr, resize)
	writeExecStatus(streams[remotecommand.StreamErr], cmd, err)
}

// serveSPDY serves v5.channel.k8s.io and v4.channel.k8s.io over SPDY/3.1.
func serveSPDY(w http.ResponseWriter, req *http.Request, opts StreamOptions, cmd []string, creationTimeout time.Duration, session Session) {
	if _, err := httpstream.Handshake(req, w, streamProtocols); err != nil {
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
			return errors.New("the session is over")
		}
	})
	if conn == nil {
		return // the upgrader wrote the error
	}
	defer conn.Close()
	conn.SetIdleTimeout(4 * time.Hour)

	wanted := map[string]bool{
		v1.StreamTypeError: true, v1.StreamTypeStdin: opts.Stdin, v1.StreamTypeStdout: opts.Stdout,
		v1.StreamTypeStderr: opts.Stderr, v1.StreamTypeResize: opts.TTY,
	}
	expected := 0
	for _, w := range wanted {
		if w {
			expected++
		}
	}
	got := map[string]httpstream.Stream{}
	var replies []<-chan struct{}
	timeout := time.NewTimer(creationTimeout)
	defer timeout.Stop()
	for len(got) < expected {
		select {
		case ns := <-streamCh:
			typ := ns.stream.Headers().Get(v1.StreamType)
			if !wanted[typ] || got[typ] != nil {
				ns.stream.Reset() // a stream the request did not ask for
				continue
			}
			got[typ] = ns.stream
			replies = append(replies, ns.replySent)
		case <-timeout.C:
			return
		case <-conn.CloseChan():
			return
		case <-req.Context().Done():
			return
		}
	}
	for _, r := range replies {
		<-r
	}
	var (
		stdin          io.Reader
		stdout, stderr io.WriteCloser
		resize         <-chan clientremotecommand.TerminalSize
	)
	if s := got[v1.StreamTypeStdin]; s != nil {
		stdin = s
	}
	if s := got[v1.StreamTypeStdout]; s != nil {
		stdout = nopWriteCloser{s}
	}
	if s := got[v1.StreamTypeStderr]; s != nil {
		stderr = nopWriteCloser{s}
	}
	if s := got[v1.StreamTypeResize]; s != nil {
		resize = decodeResizes(s, done)
	}
	// The session ends when the client's connection does (the request's
	// context outlives a hijacked connection).
	ctx, cancel := context.WithCancel(req.Context())
	defer cancel()
	go func() {
		select {
		case <-conn.CloseChan():
			cancel()
		case <-ctx.Done():
		}
	}()
	err := session(ctx, stdin, stdout, stderr, resize)
	writeExecStatus(got[v1.StreamTypeError], cmd, err)
	for _, typ := range []string{v1.StreamTypeStdout, v1.StreamTypeStderr, v1.StreamTypeError} {
		if s := got[typ]; s != nil {
			_ = s.Close()
		}
	}
}
