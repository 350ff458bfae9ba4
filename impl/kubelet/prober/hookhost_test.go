package prober

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	v1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// TestHookWithoutHostNeedsPodIP: an HTTP lifecycle hook that names no
// host goes to the pod's IP; with none known it fails as upstream's
// runHTTPHandler fails it ("failed to find networking container"), it is
// not sent anywhere. Before, it went to http://:port, the node's
// localhost, and reached a server listening there.
func TestHookWithoutHostNeedsPodIP(t *testing.T) {
	var hits atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	_, portStr, _ := net.SplitHostPort(srv.Listener.Addr().String())
	port, _ := strconv.Atoi(portStr)
	pod := &v1.Pod{}
	pod.Name, pod.Namespace, pod.UID = "web", "default", "uid-web"
	c := &v1.Container{Name: "app"}
	h := &v1.LifecycleHandler{HTTPGet: &v1.HTTPGetAction{Path: "/stop", Port: intstr.FromInt32(int32(port))}}
	sleep := func(context.Context, time.Duration) bool { return true }

	_, err := RunHook(context.Background(), netRuntime{}, h, Target{Pod: pod, Container: c, ContainerID: "c1"}, sleep, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "failed to find networking container: ") || !strings.Contains(err.Error(), "uid-web") {
		t.Errorf("hook without host or pod IP: %v, want failed to find networking container", err)
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the hook reached the node's localhost %d times", n)
	}

	// With the pod's IP it goes there.
	if _, err := RunHook(context.Background(), netRuntime{}, h, Target{Pod: pod, Container: c, ContainerID: "c1", PodIP: "127.0.0.1"}, sleep, nil); err != nil {
		t.Errorf("hook to the pod IP: %v", err)
	}
	if n := hits.Load(); n != 1 {
		t.Errorf("hook requests %d, want 1", n)
	}
}

// TestTCPSocketHookIsInvalid: a tcpSocket lifecycle handler is kept in
// the API for compatibility only; upstream's handler runner does not run
// it and fails the hook ("invalid handler: ..."). Before, kubeproof
// dialled the port and the hook succeeded.
func TestTCPSocketHookIsInvalid(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			c.Close()
		}
	}()
	port := ln.Addr().(*net.TCPAddr).Port
	h := &v1.LifecycleHandler{TCPSocket: &v1.TCPSocketAction{Port: intstr.FromInt32(int32(port))}}
	_, err = RunHook(context.Background(), netRuntime{}, h, Target{Pod: &v1.Pod{}, Container: &v1.Container{Name: "app"}, ContainerID: "c1", PodIP: "127.0.0.1"}, func(context.Context, time.Duration) bool { return true }, nil)
	if err == nil || !strings.HasPrefix(err.Error(), "invalid handler: &LifecycleHandler{") {
		t.Errorf("tcpSocket hook: %v, want invalid handler", err)
	}
}
