package server_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"google.golang.org/grpc"
	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/remotecommand"

	"github.com/kubeproof/kubeproof/impl/kubelet"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/cri"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/cri/fakecri"
	"github.com/kubeproof/kubeproof/impl/kubelet/runtime/sim"
	"github.com/kubeproof/kubeproof/impl/kubelet/server"
	"github.com/kubeproof/kubeproof/impl/kubelet/server/streamtest"
)

var _ server.IndirectStreamingRuntime = (*cri.Runtime)(nil)

// addCRIKubelet runs a kubelet for node whose runtime is the CRI client,
// talking gRPC to a fake CRI server (backed by the simulation) with its
// own streaming server, as containerd's: exec and attach go kubelet API →
// CRI Exec/Attach → proxied to the runtime's streaming URL.
func (e *env) addCRIKubelet(node string) {
	e.t.Helper()
	rt, err := sim.New(sim.Config{PodCIDR: "10.250.0.0/24"})
	if err != nil {
		e.t.Fatal(err)
	}
	dir := e.t.TempDir()
	lis, err := net.Listen("unix", filepath.Join(dir, "cri.sock"))
	if err != nil {
		e.t.Fatal(err)
	}
	g := grpc.NewServer()
	fake := fakecri.New(rt)
	fake.Register(g)
	var wg sync.WaitGroup
	wg.Go(func() { _ = g.Serve(lis) })
	client, err := cri.Dial(e.ctx, "unix://"+filepath.Join(dir, "cri.sock"))
	if err != nil {
		e.t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(e.ctx)
	k, err := kubelet.New(ctx, e.client, kubelet.Config{NodeName: node, RelistPeriod: 10 * time.Millisecond,
		PodLogsDir: filepath.Join(dir, "pods")}, client)
	if err != nil {
		e.t.Fatal(err)
	}
	e.kubelets[node] = k
	e.mux.Add(k)
	wg.Go(func() { _ = k.Run(ctx) })
	// Registered after newEnv's cleanup, so it runs before the goroutine
	// count is checked.
	e.t.Cleanup(func() {
		cancel()
		_ = fake.StopStreaming()
		_ = client.Close()
		g.Stop()
		wg.Wait()
	})
}

// Over CRI: exec with stdin, a TTY with resizes, exit codes and attach
// with stdin, through the runtime's streaming server, on both transports.
func TestStreamingOverCRI(t *testing.T) {
	e := newEnv(t)
	e.addCRIKubelet("node-cri")
	e.runStdinPodOn("node-cri", "web", nil)
	for transport, ex := range executors(t, e, streamQuery("/exec/default/web/app", "stdin,stdout,stderr", "sh")) {
		var stdout, stderr strings.Builder
		err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdin: strings.NewReader("echo over cri\nnope\nexit 5\n"), Stdout: &stdout, Stderr: &stderr})
		if code := exitCode(t, err); code != 5 || stdout.String() != "over cri\n" || stderr.String() != "sh: nope: not found\n" {
			t.Errorf("exec over CRI and %s: code %d stdout %q stderr %q", transport, code, stdout.String(), stderr.String())
		}
	}
	for transport, ex := range executors(t, e, streamQuery("/exec/default/web/app", "stdin,stdout,tty", "sh")) {
		tty := streamtest.StartTTY(e.ctx, ex, remotecommand.TerminalSize{Width: 100, Height: 30})
		e.eventually(func() bool {
			tty.Type("stty size")
			return strings.Contains(tty.Stdout.String(), "30 100\r\n")
		}, "stty size over CRI and %s", transport)
		tty.Type("exit")
		if code := exitCode(t, <-tty.Done); code != 0 {
			t.Errorf("tty exec over CRI and %s: exit %d", transport, code)
		}
		tty.Close()
	}
	for transport, ex := range executors(t, e, streamQuery("/attach/default/web/app", "stdin,stdout")) {
		e.echoThenLeave(ex, fmt.Sprintf("hello over %s", transport), "attach over CRI and "+transport)
	}
	// Exec into a container that is not running is refused before any
	// upgrade.
	for transport, ex := range executors(t, e, streamQuery("/exec/default/web/nope", "stdout", "true")) {
		if err := ex.StreamWithContext(e.ctx, remotecommand.StreamOptions{Stdout: io.Discard}); err == nil || !strings.Contains(err.Error(), `container "nope" not found`) {
			t.Errorf("exec into a missing container over CRI and %s: %v", transport, err)
		}
	}
}

// runStdinPodOn runs a pod with one stdin: true container on node.
// (as `kubectl run -i` creates them).
func (e *env) runStdinPodOn(node, name string, annotations map[string]string) {
	e.t.Helper()
	p := &v1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: name, UID: types.UID("uid-" + name), Annotations: annotations},
		Spec: v1.PodSpec{NodeName: node, Containers: []v1.Container{{Name: "app", Image: "busybox", Stdin: true}}}}
	if _, err := e.client.CoreV1().Pods("default").Create(e.ctx, p, metav1.CreateOptions{}); err != nil {
		e.t.Fatal(err)
	}
	e.eventually(func() bool { return e.kubelets[node].ContainerRunning(e.ctx, "default", name, "app") }, "pod %s running", name)
}
