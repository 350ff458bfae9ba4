package kubelet

import (
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestPostStartHookWaitingMessage: a failed postStart hook's waiting
// message is the one upstream's handler runner builds: for an exec hook
// "Exec lifecycle hook ([argv]) for Container "c" in Pod "name_ns(uid)"
// failed - error: <the runtime's error>, message: <quoted stdout+stderr>",
// the error for a non-zero exit as upstream's CRI client words it
// ("command 'argv' exited with N: <stderr>"); for an HTTP hook "HTTP
// lifecycle hook (path) for Container ... failed - error: <the HTTP
// client's error>". The kubelet logs upstream's "Failed to execute
// PostStartHook" at error level with the error. Before, the message was
// "PostStartHook failed: <error>" and nothing was logged.
func TestPostStartHookWaitingMessage(t *testing.T) {
	var buf syncBuffer
	h := newHarness(t, func(c *Config) {
		c.Logger = slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelError}))
	})
	p := h.create(h.pod("badstart", func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{Exec: &v1.ExecAction{
			Command: []string{"sh", "-c", "echo out; cat /missing"}}}}
	}))
	cs := cstatus(h.sync(p), "app")
	want := `Exec lifecycle hook ([sh -c echo out; cat /missing]) for Container "app" in Pod "badstart_default(uid-badstart)" failed - ` +
		`error: command 'sh -c echo out; cat /missing' exited with 1: cat: /missing: No such file or directory` + "\n" +
		`, message: "out\ncat: /missing: No such file or directory\n"`
	if w := cs.State.Waiting; w == nil || w.Reason != "PostStartHookError" || w.Message != want {
		t.Errorf("waiting after a failed exec hook: %+v\nwant message %q", cs.State.Waiting, want)
	}
	if got := buf.String(); !strings.Contains(got, `level=ERROR msg="Failed to execute PostStartHook"`) ||
		!strings.Contains(got, `containerName=app`) || !strings.Contains(got, `exited with 1`) {
		t.Errorf("log %q, want upstream's Failed to execute PostStartHook with the error", got)
	}

	// An HTTP hook whose port refuses the connection.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	h2 := newHarness(t, nil)
	h2.krt = sandboxIPRuntime{Runtime: h2.rt, ip: "127.0.0.1"}
	h2.k = h2.newKubelet(nil)
	p2 := h2.create(h2.pod("refused", func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/started", Port: intstr.FromInt32(int32(port))}}}
	}))
	cs = cstatus(h2.sync(p2), "app")
	wantPrefix := `HTTP lifecycle hook (/started) for Container "app" in Pod "refused_default(uid-refused)" failed - error: Get "http://127.0.0.1:` + strconv.Itoa(port) + `/started": dial tcp 127.0.0.1:`
	if w := cs.State.Waiting; w == nil || w.Reason != "PostStartHookError" || !strings.HasPrefix(w.Message, wantPrefix) || strings.Contains(w.Message, "message:") {
		t.Errorf("waiting after a failed HTTP hook: %+v\nwant message starting %q", cs.State.Waiting, wantPrefix)
	}
}

// TestHTTPHookIgnoresStatusCode: upstream's handler runner fails an HTTP
// lifecycle hook only when the request fails; any response, a 500 too,
// is success (a probe, unlike a hook, checks the code). Before, a code
// of 400 or more failed the postStart hook and killed the container.
func TestHTTPHookIgnoresStatusCode(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Error(w, "not yet", http.StatusInternalServerError)
	}))
	defer srv.Close()
	port := srv.Listener.Addr().(*net.TCPAddr).Port
	h := newHarness(t, nil)
	h.krt = sandboxIPRuntime{Runtime: h.rt, ip: "127.0.0.1"}
	h.k = h.newKubelet(nil)
	p := h.create(h.pod("hooked", func(p *v1.Pod) {
		p.Spec.Containers[0].Lifecycle = &v1.Lifecycle{PostStart: &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/started", Port: intstr.FromInt32(int32(port))}}}
	}))
	if cs := cstatus(h.sync(p), "app"); cs.State.Running == nil {
		t.Errorf("container after a hook answered 500: %+v, want running", cs.State)
	}
}
