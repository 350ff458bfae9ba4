package apiproxy

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"time"

	"k8s.io/apimachinery/pkg/util/httpstream/spdy"
	"k8s.io/apimachinery/pkg/util/httpstream/wsstream"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kubeproof/kubeproof/impl/kubelet/server"
)

// Stream translation, as kube-apiserver's StreamTranslator: a client
// speaking WebSocket v5.channel.k8s.io (kubectl since 1.30) is served here,
// and its session is carried to the kubelet over SPDY. Kubelets and the
// container runtimes' streaming servers behind them (containerd 1.6 and
// 1.7) may not speak v5 over WebSocket; on v4 the client's stdin EOF would
// never reach the process (`kubectl exec -i … -- cat` would hang), while
// over SPDY it is the stdin stream's half-close, which every runtime
// understands.

// translateCreationTimeout bounds how long the client may take to open its
// streams.
const translateCreationTimeout = 30 * time.Second

// wantsTranslation reports whether an exec or attach request is to be
// translated: a WebSocket upgrade offering the v5 protocol.
func wantsTranslation(r *http.Request) bool {
	return wsstream.IsWebSocketRequestWithStreamCloseProtocol(r)
}

// streamOptions are the streams the (validated) kubelet query asks for.
func streamOptions(kq url.Values) server.StreamOptions {
	flag := func(n string) bool { b, _ := strconv.ParseBool(kq.Get(n)); return b }
	return server.StreamOptions{Stdin: flag("stdin"), Stdout: flag("stdout"), Stderr: flag("stderr"), TTY: flag("tty")}
}

// translate serves the client's WebSocket session and runs it as an SPDY
// session against the kubelet URL u. A failure of the kubelet (its refusal
// of the upgrade included) ends the client's session with a Failure
// Status carrying the kubelet's message; the command's exit code comes
// back as NonZeroExitCode with its ExitCode cause.
func (p *Proxy) translate(w http.ResponseWriter, r *http.Request, u *url.URL, opts server.StreamOptions, cmd []string) error {
	rt, err := spdy.NewRoundTripperWithConfig(spdy.RoundTripperConfig{TLS: p.transport.TLSClientConfig, PingPeriod: 5 * time.Second})
	if err != nil {
		return fmt.Errorf("connecting to the kubelet: %w", err)
	}
	ex, err := remotecommand.NewSPDYExecutorForTransports(rt, rt, http.MethodPost, u)
	if err != nil {
		return fmt.Errorf("connecting to the kubelet: %w", err)
	}
	server.ServeStreams(Hijackable{w}, r, opts, cmd, translateCreationTimeout,
		func(ctx context.Context, stdin io.Reader, stdout, stderr io.WriteCloser, resize <-chan remotecommand.TerminalSize) error {
			// A failed write to the client means it went away: end the
			// kubelet's session too (an abandoned attach would otherwise
			// last as long as the container).
			ctx, cancel := context.WithCancel(ctx)
			defer cancel()
			so := remotecommand.StreamOptions{Stdin: stdin, Tty: opts.TTY}
			if stdout != nil {
				so.Stdout = cancelOnError{stdout, cancel}
			}
			if stderr != nil {
				so.Stderr = cancelOnError{stderr, cancel}
			}
			if resize != nil {
				so.TerminalSizeQueue = sizeQueue(resize)
			}
			return ex.StreamWithContext(ctx, so)
		})
	return nil
}

// sizeQueue hands the SPDY executor the client's resizes.
type sizeQueue <-chan remotecommand.TerminalSize

func (q sizeQueue) Next() *remotecommand.TerminalSize {
	s, ok := <-q
	if !ok {
		return nil
	}
	return &s
}

// cancelOnError is a client stream whose first failed write cancels the
// session.
type cancelOnError struct {
	w      io.Writer
	cancel context.CancelFunc
}

func (c cancelOnError) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.cancel()
	}
	return n, err
}
