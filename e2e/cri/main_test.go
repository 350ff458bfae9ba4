// Package cri is the end-to-end suite on real containers (issue 9): pods
// created through kubeproof's API server run on containerd + runc with the
// bridge, host-local, loopback and portmap CNI plugins, driven by
// kubeproof's kubelet over CRI. The harness (e2e/cri/harness) prepares the
// host and restores it afterwards.
//
// It needs root. Without root it prints one SKIP line and passes, unless
// CI=true, where not being able to run it is a failure.
package cri

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"runtime"
	"sync"
	"syscall"
	"testing"
	"time"

	"k8s.io/klog/v2"

	"github.com/kubeproof/kubeproof/e2e/cri/harness"
)

var (
	// env is the suite's environment; node its first node.
	env  *harness.Env
	node *harness.Node
)

func TestMain(m *testing.M) {
	flag.Parse()
	if reason := harness.Preflight(); reason != "" {
		if os.Getenv("CI") == "true" {
			fmt.Printf("FAIL: e2e/cri: %s, and CI=true makes not running it a failure\n", reason)
			os.Exit(1)
		}
		fmt.Printf("SKIP: e2e/cri: %s\n", reason)
		os.Exit(0)
	}
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// Quiet by default: components that log to slog's default logger or to
	// klog (client-go's leader election) write to the control plane's log.
	klog.LogToStderr(false)
	klog.SetOutput(io.Discard)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	logf := func(format string, args ...any) {
		if testing.Verbose() {
			fmt.Printf("e2e/cri: "+format+"\n", args...)
		}
	}
	start := time.Now()
	goroutinesBefore := runtime.NumGoroutine()
	var err error
	env, err = harness.Start(ctx, harness.Options{Logf: logf})
	if err != nil {
		fmt.Println("e2e/cri: set-up failed:", err)
		return 1
	}
	var closeOnce sync.Once
	closeErr := error(nil)
	teardown := func() { closeOnce.Do(func() { closeErr = env.Close() }) }
	// A Ctrl-C or SIGTERM of the test binary still restores the host.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		if _, ok := <-sigs; ok {
			fmt.Println("e2e/cri: interrupted; tearing down")
			teardown()
			os.Exit(1)
		}
	}()

	code := 0
	if node, err = env.AddNode(ctx, harness.NodeOptions{}); err != nil {
		fmt.Println("e2e/cri: starting node:", err)
		code = 1
	} else {
		logf("set up in %s", time.Since(start).Round(time.Millisecond))
		code = m.Run()
	}
	teardown()
	signal.Stop(sigs)
	close(sigs)
	if closeErr != nil {
		fmt.Println("e2e/cri: teardown:", closeErr)
		code = 1
	}
	// Everything the suite started has stopped: only os/signal's own
	// watcher goroutine may remain.
	if left := goroutinesLeft(goroutinesBefore+1, 10*time.Second); left != "" {
		fmt.Println("e2e/cri: goroutines left after teardown:\n" + left)
		code = 1
	}
	if code != 0 || os.Getenv("KUBEPROOF_E2E_KEEP_LOGS") == "1" {
		fmt.Println("e2e/cri: logs of containerd, the kubelets and the control plane are in", env.LogDir)
	} else {
		os.RemoveAll(env.LogDir)
	}
	return code
}

// goroutinesLeft polls until at most max goroutines run, and returns the
// stacks of all goroutines if that does not happen within timeout.
func goroutinesLeft(max int, timeout time.Duration) string {
	deadline := time.Now().Add(timeout)
	for runtime.NumGoroutine() > max {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			return string(buf[:runtime.Stack(buf, true)])
		}
		time.Sleep(100 * time.Millisecond)
	}
	return ""
}
