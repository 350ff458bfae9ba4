package server_test

import (
	"bytes"
	"net/url"
	"strings"
	"sync"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// syncBuffer is a bytes.Buffer safe for the executor's writer goroutine
// and the test reading it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Attach streams what the container writes after the attach, over both
// transports, and ends cleanly when the container stops.
func TestAttach(t *testing.T) {
	for _, transport := range []string{"spdy", "websocket"} {
		t.Run(transport, func(t *testing.T) {
			e := newEnv(t, "node-a")
			e.runPod("node-a", "web", map[string]string{sim.AnnotationLogs: "before-attach"})
			q := url.Values{"stdout": {"true"}}
			ex := executors(t, e, "/attach/default/web/app?"+q.Encode())[transport]
			var stdout syncBuffer
			done := make(chan error, 1)
			go func() { done <- ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: &stdout}) }()
			e.eventually(func() bool {
				e.rts["node-a"].appendAll(e.ctx, "after-attach")
				return strings.Contains(stdout.String(), "after-attach\n")
			}, "attached output")
			if err := e.client.CoreV1().Pods("default").Delete(e.ctx, "web", metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			if err := <-done; err != nil {
				t.Fatalf("attach ended with %v", err)
			}
			if strings.Contains(stdout.String(), "before-attach") {
				t.Errorf("output from before the attach was replayed: %q", stdout.String())
			}
		})
	}
}

func TestAttachRefusals(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", nil)
	for name, tc := range map[string]struct{ path, want string }{
		"stdin":             {"/attach/default/web/app?stdout=true&stdin=true", "stdin and tty are not supported"},
		"unknown container": {"/attach/default/web/nope?stdout=true", `container "nope" not found in pod "web"`},
		"unknown pod":       {"/attach/default/gone/app?stdout=true", `pod "gone" does not exist`},
	} {
		for transport, ex := range executors(t, e, tc.path) {
			err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: &syncBuffer{}})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s over %s: %v, want %q", name, transport, err, tc.want)
			}
		}
	}
}
