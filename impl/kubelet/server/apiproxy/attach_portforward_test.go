package apiproxy_test

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/httpstream"
	restclient "k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	"k8s.io/client-go/util/exec"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
	"github.com/kubeproof/kubeproof/impl/kubelet/server/streamtest"
)

func (e *env) executors(path string) map[string]remotecommand.Executor {
	e.t.Helper()
	return streamtest.Executors(e.t, &restclient.Config{Host: e.api.URL}, e.api.URL+path)
}

// runStdinPod runs a pod whose one container accepts stdin (stdin: true).
func (e *env) runStdinPod(name string) {
	e.t.Helper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name),
		Annotations: map[string]string{sim.AnnotationLogs: "before-attach"}},
		Spec: corev1.PodSpec{NodeName: "node-1", Containers: []corev1.Container{{Name: "app", Image: "busybox", Stdin: true}}}}
	if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	for deadline := time.Now().Add(10 * time.Second); !e.kubelet.ContainerRunning(e.ctx, "default", name, "app"); time.Sleep(5 * time.Millisecond) {
		if time.Now().After(deadline) {
			e.t.Fatalf("pod %s not running", name)
		}
	}
}

// Attach with stdin through the proxy: what the client sends reaches the
// container's main process (the simulation echoes it to its output),
// over both transports; output from before the attach is not replayed,
// and the session ends cleanly when the container stops.
func TestPodAttachThroughTheProxy(t *testing.T) {
	e := newEnv(t)
	e.waitNode()
	for _, transport := range []string{"spdy", "websocket"} {
		t.Run(transport, func(t *testing.T) {
			pod := "attach-" + transport
			e.runStdinPod(pod)
			ex := e.executors("/api/v1/namespaces/default/pods/" + pod + "/attach?stdin=true&stdout=true&stderr=true")[transport]
			stdinR, stdinW := io.Pipe()
			defer stdinW.Close()
			var stdout streamtest.Buffer
			done := streamtest.Start(e.ctx, ex, remotecommand.StreamOptions{Stdin: stdinR, Stdout: &stdout, Stderr: io.Discard})
			for deadline := time.Now().Add(10 * time.Second); !strings.Contains(stdout.String(), "after-attach\n"); time.Sleep(10 * time.Millisecond) {
				if time.Now().After(deadline) {
					t.Fatalf("attached output never arrived; got %q", stdout.String())
				}
				_, _ = io.WriteString(stdinW, "after-attach\n")
			}
			if err := e.client.CoreV1().Pods("default").Delete(e.ctx, pod, metav1.DeleteOptions{}); err != nil {
				t.Fatal(err)
			}
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("attach ended with %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("attach did not end after the pod was deleted")
			}
			if strings.Contains(stdout.String(), "before-attach") {
				t.Errorf("output from before the attach was replayed: %q", stdout.String())
			}
		})
	}
}

// exec -i and exec -it through the proxy: stdin, its EOF, the exit code,
// a TTY and its resizes all cross API server and kubelet.
func TestPodExecInteractiveThroughTheProxy(t *testing.T) {
	e := newEnv(t)
	e.waitNode()
	e.runPod("web", "node-1", nil, "app")
	const path = "/api/v1/namespaces/default/pods/web/exec?command=sh&stdin=true&stdout=true"
	for transport, ex := range e.executors(path + "&stderr=true") {
		var stdout, stderr streamtest.Buffer
		err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("echo in\ncat /nope\n"), Stdout: &stdout, Stderr: &stderr})
		var exit exec.CodeExitError
		if !errors.As(err, &exit) || exit.Code != 1 || stdout.String() != "in\n" || stderr.String() != "cat: /nope: No such file or directory\n" {
			t.Errorf("exec -i over %s: %v, stdout %q stderr %q", transport, err, stdout.String(), stderr.String())
		}
	}
	for transport, ex := range e.executors(path + "&tty=true") {
		tty := streamtest.StartTTY(e.ctx, ex, remotecommand.TerminalSize{Width: 90, Height: 20})
		for deadline := time.Now().Add(10 * time.Second); !strings.Contains(tty.Stdout.String(), "20 90\r\n"); time.Sleep(10 * time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("exec -it over %s: %q", transport, tty.Stdout.String())
			}
			tty.Type("stty size")
		}
		tty.Type("exit 0")
		if err := <-tty.Done; err != nil {
			t.Errorf("exec -it over %s ended with %v", transport, err)
		}
		tty.Close()
	}
}

func TestPodAttachRefusals(t *testing.T) {
	e := newEnv(t)
	e.waitNode()
	e.runPod("web", "node-1", nil, "app")
	e.runPod("multi", "node-1", nil, "a", "b")
	e.runPod("pending", "", nil, "app")
	done := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "done"},
		Spec:   corev1.PodSpec{NodeName: "node-9", Containers: []corev1.Container{{Name: "app", Image: "busybox"}}},
		Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}
	if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, done, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	const base = "/api/v1/namespaces/default/pods/"
	for name, tc := range map[string]struct {
		path, want string
		code       int
	}{
		"no streams":    {base + "web/attach", "you must specify at least 1 of stdin, stdout, stderr", 400},
		"false flags":   {base + "web/attach?stdout=FALSE&stderr=0", "you must specify at least 1 of stdin, stdout, stderr", 400},
		"which":         {base + "multi/attach?stdout=true", "a container name must be specified for pod multi, choose one of: [a b]", 400},
		"no container":  {base + "web/attach?stdout=true&container=nope", "container nope is not valid for pod web", 400},
		"no pod":        {base + "gone/attach?stdout=true", `pods "gone" not found`, 404},
		"not scheduled": {base + "pending/attach?stdout=true", "pod pending does not have a host assigned", 400},
		"completed":     {base + "done/attach?stdout=true", "cannot attach a container in a completed pod; current phase is Succeeded", 400},
	} {
		if code, body := e.get(tc.path); code != tc.code || body != tc.want {
			t.Errorf("%s: GET %s = %d %q, want %d %q", name, tc.path, code, body, tc.code, tc.want)
		}
	}
	// Through the streaming clients: a refusal by the proxy, and one by
	// the kubelet (stdin for a container without stdin: true), come back
	// as errors.
	for _, tc := range []struct{ path, want string }{
		{base + "multi/attach?stdout=true", "a container name must be specified for pod multi"},
		{base + "web/attach?stdout=true&stdin=true", "the container does not accept stdin"},
	} {
		for transport, ex := range e.executors(tc.path) {
			err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: io.Discard, Stdin: strings.NewReader("")})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s over %s: %v, want %q", tc.path, transport, err, tc.want)
			}
		}
	}
}

// forward runs a port forwarder to the pod's port through the proxy with
// dialer and returns the local port; the forwarder stops at cleanup.
func (e *env) forward(t *testing.T, dialer func(u *url.URL) (httpstream.Dialer, error), pod string, port int) int {
	t.Helper()
	u, _ := url.Parse(e.api.URL + "/api/v1/namespaces/default/pods/" + pod + "/portforward")
	d, err := dialer(u)
	if err != nil {
		t.Fatal(err)
	}
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(d, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", port)}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- fw.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("port forwarding failed: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("port forwarder not ready")
	}
	t.Cleanup(func() {
		close(stop)
		if err := <-errc; err != nil {
			t.Errorf("port forwarding ended with %v", err)
		}
	})
	ports, err := fw.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	return int(ports[0].Local)
}

// Port forwarding through the proxy reaches the simulated pod's HTTP
// answer, with kubectl's two dialers: SPDY, and WebSocket tunneling that
// falls back to SPDY when the server does not upgrade to it.
func TestPodPortForwardThroughTheProxy(t *testing.T) {
	e := newEnv(t)
	e.waitNode()
	e.runPod("web", "node-1", map[string]string{sim.AnnotationHTTPStatus: "203"}, "app")
	cfg := &restclient.Config{Host: e.api.URL}
	spdyDialer := func(u *url.URL) (httpstream.Dialer, error) {
		tr, upgrader, err := spdy.RoundTripperFor(cfg)
		if err != nil {
			return nil, err
		}
		return spdy.NewDialer(upgrader, &http.Client{Transport: tr}, http.MethodPost, u), nil
	}
	fallbackDialer := func(u *url.URL) (httpstream.Dialer, error) {
		primary, err := portforward.NewSPDYOverWebsocketDialer(u, cfg)
		if err != nil {
			return nil, err
		}
		secondary, err := spdyDialer(u)
		if err != nil {
			return nil, err
		}
		return portforward.NewFallbackDialer(primary, secondary, func(err error) bool { return true }), nil
	}
	for name, dialer := range map[string]func(*url.URL) (httpstream.Dialer, error){"spdy": spdyDialer, "websocket-fallback": fallbackDialer} {
		t.Run(name, func(t *testing.T) {
			local := e.forward(t, dialer, "web", 80)
			client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/hello", local))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if want := "kubeproof simulated container app on port 80: GET /hello\n"; resp.StatusCode != 203 || string(body) != want {
				t.Errorf("GET through the forwarded port = %d %q, want 203 %q", resp.StatusCode, body, want)
			}
		})
	}
}

func TestPodPortForwardRefusals(t *testing.T) {
	e := newEnv(t)
	e.waitNode()
	e.runPod("pending", "", nil, "app")
	const base = "/api/v1/namespaces/default/pods/"
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{base + "pending/portforward?ports=80", "pod pending does not have a host assigned", 400},
		{base + "gone/portforward", `pods "gone" not found`, 404},
		// The ports are decoded as kube-apiserver's query conversion
		// decodes them: a 400 with the parser's message, before the pod
		// is read; no range check (port 0 is not refused).
		{base + "pending/portforward?ports=0", "pod pending does not have a host assigned", 400},
		{base + "gone/portforward?ports=80,0&ports=443", `pods "gone" not found`, 404},
		{base + "gone/portforward?ports=80&ports=65536", `cannot convert to []int32: strconv.ParseUint: parsing "65536": value out of range`, 400},
		{base + "gone/portforward?ports=80,http", `cannot convert to []int32: strconv.ParseUint: parsing "http": invalid syntax`, 400},
		{base + "gone/portforward?ports=", `cannot convert to []int32: strconv.ParseUint: parsing "": invalid syntax`, 400},
		{base + "gone/portforward?ports=-1", `cannot convert to []int32: strconv.ParseUint: parsing "-1": invalid syntax`, 400},
	} {
		if code, body := e.get(tc.path); code != tc.code || body != tc.want {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.code, tc.want)
		}
	}
}

// A WebSocket v5 client's exec is carried to the kubelet over SPDY (the
// API server translates, as kube-apiserver's StreamTranslator): the
// kubelet sees a POST, the SPDY executor's method, where the WebSocket
// executor sends a GET; an SPDY client's exec is proxied as it is.
func TestPodExecWebSocketIsTranslatedToSPDY(t *testing.T) {
	e := newEnv(t)
	e.waitNode()
	e.runPod("web", "node-1", nil, "app")
	execs := func(method string) string {
		_, body := e.get("/api/v1/nodes/node-1/proxy/metrics")
		for _, l := range strings.Split(body, "\n") {
			if strings.HasPrefix(l, `kubelet_http_requests_total{method="`+method+`",path="exec"}`) {
				return strings.Fields(l)[1]
			}
		}
		return "0"
	}
	ex := e.executors("/api/v1/namespaces/default/pods/web/exec?command=cat&stdin=true&stdout=true")["websocket"]
	var stdout streamtest.Buffer
	if err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("through\n"), Stdout: &stdout}); err != nil || stdout.String() != "through\n" {
		t.Fatalf("exec -i over websocket: %v, %q", err, stdout.String())
	}
	if get, post := execs("GET"), execs("POST"); get != "0" || post != "1" {
		t.Errorf("the kubelet saw %s GET and %s POST exec requests, want 0 and 1", get, post)
	}
}

// TestStreamOptionsAsKubeApiserver: pods/exec and pods/attach decode their
// boolean options as kube-apiserver's query conversion does (true for any
// value but "0" and "false" in any case, an empty value too; never a
// 400 for the value), and the kubelet is asked with upstream's "1".
func TestStreamOptionsAsKubeApiserver(t *testing.T) {
	e := newEnv(t)
	e.waitNode()
	e.runPod("web", "node-1", nil, "app")
	e.runPod("pending", "", nil, "app")
	const base = "/api/v1/namespaces/default/pods/"
	for _, tc := range []struct {
		path, want string
		code       int
	}{
		{base + "pending/attach?stdout=maybe", "pod pending does not have a host assigned", 400},
		{base + "pending/attach?stdout=", "pod pending does not have a host assigned", 400},
		{base + "pending/attach?stdin=yes&stdin=false", "pod pending does not have a host assigned", 400},
		{base + "pending/attach?stdout=False&stderr=0&stdin=", "pod pending does not have a host assigned", 400},
		{base + "pending/attach?stdout=False&stderr=0&tty=1", "you must specify at least 1 of stdin, stdout, stderr", 400},
		{base + "pending/exec?command=ls&tty=maybe&stderr=off", "pod pending does not have a host assigned", 400},
		{base + "pending/exec?command=ls&stdout=0", "you must specify at least 1 of stdin, stdout, stderr", 400},
	} {
		if code, body := e.get(tc.path); code != tc.code || body != tc.want {
			t.Errorf("GET %s = %d %q, want %d %q", tc.path, code, body, tc.code, tc.want)
		}
	}
	// An exec whose flags are spelled "yes" and "" runs, with those
	// streams: the kubelet was asked for them.
	q := url.Values{"command": {"sh", "-c", "echo out; cat /nope"}, "stdout": {"yes"}, "stderr": {""}}
	for transport, ex := range e.executors(base + "web/exec?" + q.Encode()) {
		var stdout, stderr bytes.Buffer
		err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: &stdout, Stderr: &stderr})
		var exit exec.CodeExitError
		if !errors.As(err, &exit) || exit.Code != 1 || stdout.String() != "out\n" || stderr.String() != "cat: /nope: No such file or directory\n" {
			t.Errorf("exec with stdout=yes&stderr= over %s: %v, stdout %q stderr %q", transport, err, stdout.String(), stderr.String())
		}
	}
}
