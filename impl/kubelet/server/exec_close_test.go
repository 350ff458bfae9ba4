package server_test

import (
	"crypto/tls"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/remotecommand"
)

// TestExecWebSocketEndsWithStatusThenNormalClose pins how an exec session
// must end for client-go (kubectl) to report the command's exit code: the
// Status with the ExitCode cause on channel 3, then a normal (1000) close
// frame. client-go turns any other end — the connection dropped without a
// close frame, or closed before the status — into an error reading the
// error stream, and kubectl exits 1 instead of the command's code. The
// client here reads only after the server has finished and closed its
// side, the order a loaded machine produces.
func TestExecWebSocketEndsWithStatusThenNormalClose(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", nil)
	tlsCfg := &tls.Config{InsecureSkipVerify: true} //nolint:gosec // test server's self-signed certificate
	cert, err := tls.X509KeyPair(e.rest.TLSClientConfig.CertData, e.rest.TLSClientConfig.KeyData)
	if err != nil {
		t.Fatal(err)
	}
	tlsCfg.Certificates = []tls.Certificate{cert}
	for _, proto := range []string{remotecommand.StreamProtocolV5Name, remotecommand.StreamProtocolV4Name} {
		t.Run(proto, func(t *testing.T) {
			d := websocket.Dialer{TLSClientConfig: tlsCfg, Subprotocols: []string{proto}}
			url := "wss" + strings.TrimPrefix(e.base, "https") + execQuery("app", "sh", "-c", "echo out; exit 3")
			conn, resp, err := d.DialContext(e.ctx, url, nil)
			if err != nil {
				t.Fatalf("dial: %v (%v)", err, resp)
			}
			defer conn.Close()
			if conn.Subprotocol() != proto {
				t.Fatalf("negotiated %q, want %q", conn.Subprotocol(), proto)
			}
			// Let the server run the command, write everything and close
			// before anything is read.
			time.Sleep(200 * time.Millisecond)
			_ = conn.SetReadDeadline(time.Now().Add(10 * time.Second))
			var stdout string
			var status *metav1.Status
			for {
				typ, msg, err := conn.ReadMessage()
				if err != nil {
					var ce *websocket.CloseError
					if !errors.As(err, &ce) || ce.Code != websocket.CloseNormalClosure {
						t.Fatalf("session ended with %v, want a normal close frame", err)
					}
					break
				}
				if typ != websocket.BinaryMessage || len(msg) == 0 {
					t.Fatalf("unexpected message type %d %q", typ, msg)
				}
				switch msg[0] {
				case remotecommand.StreamStdOut:
					stdout += string(msg[1:])
				case remotecommand.StreamErr:
					if len(msg) == 1 {
						continue
					}
					if status != nil {
						t.Fatalf("a second status: %q", msg[1:])
					}
					status = &metav1.Status{}
					if err := json.Unmarshal(msg[1:], status); err != nil {
						t.Fatalf("status %q: %v", msg[1:], err)
					}
				}
			}
			if stdout != "out\n" {
				t.Errorf("stdout %q", stdout)
			}
			if status == nil || status.Reason != remotecommand.NonZeroExitCodeReason || status.Details == nil ||
				len(status.Details.Causes) != 1 || status.Details.Causes[0].Type != remotecommand.ExitCodeCauseType || status.Details.Causes[0].Message != "3" {
				t.Errorf("status before the close: %+v, want NonZeroExitCode with ExitCode cause 3", status)
			}
		})
	}
}
