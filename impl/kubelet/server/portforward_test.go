package server_test

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/transport/spdy"

	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
)

// client-go's port forwarder (what kubectl port-forward runs) against a
// simulated pod: each HTTP request through the forwarded port reaches the
// pod's simulated server.
func TestPortForward(t *testing.T) {
	e := newEnv(t, "node-a")
	e.runPod("node-a", "web", map[string]string{sim.AnnotationHTTPStatus: "418"})
	rt, upgrader, err := spdy.RoundTripperFor(e.rest)
	if err != nil {
		t.Fatal(err)
	}
	u, _ := url.Parse(e.base + "/portForward/default/web")
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: rt}, http.MethodPost, u)
	stop, ready := make(chan struct{}), make(chan struct{})
	fw, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{"0:8080"}, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fw.ForwardPorts() }()
	defer func() {
		close(stop)
		if err := <-done; err != nil {
			t.Errorf("ForwardPorts: %v", err)
		}
	}()
	select {
	case <-ready:
	case err := <-done:
		t.Fatalf("port forward ended before it was ready: %v", err)
	}
	ports, err := fw.GetPorts()
	if err != nil || len(ports) != 1 || ports[0].Remote != 8080 {
		t.Fatalf("ports %v, %v", ports, err)
	}
	client := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
	for i := 0; i < 2; i++ { // two connections, two stream pairs
		resp, err := client.Get(fmt.Sprintf("http://127.0.0.1:%d/index.html", ports[0].Local))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 418 || !strings.Contains(string(body), "container app on port 8080: GET /index.html") {
			t.Fatalf("through the forwarded port: %d %q", resp.StatusCode, body)
		}
	}
}

func TestPortForwardRefusals(t *testing.T) {
	e := newEnv(t, "node-a")
	if code, body := e.get("/portForward/default/gone"); code != http.StatusNotFound || !strings.Contains(body, `pod \"gone\" does not exist`) {
		t.Errorf("unknown pod: %d %s", code, body)
	}
	e.runPod("node-a", "web", nil)
	if code, body := e.get("/portForward/default/web"); code != http.StatusBadRequest || !strings.Contains(body, "SPDY/3.1 upgrade") {
		t.Errorf("without an upgrade: %d %s", code, body)
	}
}
