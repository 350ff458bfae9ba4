package linearizability

import (
	"flag"
	"fmt"
	"io"
	"os"
	"runtime"
	"testing"
	"time"

	"k8s.io/klog/v2"
)

// TestMain silences client-go's klog output and fails the run if
// goroutines outlive the tests (recorders, watchers, clusters).
func TestMain(m *testing.M) {
	klog.InitFlags(nil)
	_ = flag.Set("logtostderr", "false")
	klog.SetOutput(io.Discard)
	before := runtime.NumGoroutine()
	if code := m.Run(); code != 0 {
		os.Exit(code)
	}
	deadline := time.Now().Add(10 * time.Second)
	for runtime.NumGoroutine() > before {
		if time.Now().After(deadline) {
			buf := make([]byte, 1<<20)
			n := runtime.Stack(buf, true)
			fmt.Fprintf(os.Stderr, "goroutine leak: %d goroutines before the tests, %d after:\n%s\n", before, runtime.NumGoroutine(), buf[:n])
			os.Exit(1)
		}
		time.Sleep(50 * time.Millisecond)
	}
}
