// Package leakcheck lets tests assert that the goroutines a piece of code
// started have ended once it is shut down.
package leakcheck

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// ourCode marks goroutines running this module's code.
const ourCode = "github.com/kubeproof/kubeproof/"

// Check returns a function that fails t if, after polling for up to 10
// seconds, a goroutine other than the test's own is still running code of
// this module. Use it where other goroutines (an etcd server) legitimately
// come and go: `defer leakcheck.Check(t)()`.
func Check(t testing.TB) func() {
	t.Helper()
	return func() {
		t.Helper()
		deadline := time.Now().Add(10 * time.Second)
		for {
			leaked := ours()
			if len(leaked) == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("goroutine leak: %d goroutines still run kubeproof code after shutdown:\n%s",
					len(leaked), strings.Join(leaked, "\n\n"))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// CheckAll records the goroutine count now and returns a function that fails
// t if, after polling for up to 10 seconds, more goroutines are alive than
// were at the call. Use it when everything started after the call is
// expected to stop.
func CheckAll(t testing.TB) func() {
	t.Helper()
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		const slack = 2 // runtime and testing helpers
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before+slack {
				return
			}
			if time.Now().After(deadline) {
				t.Errorf("goroutine leak: %d goroutines before, %d after shutdown\n%s", before, n, strings.Join(stacks(), "\n\n"))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

func stacks() []string {
	buf := make([]byte, 4<<20)
	buf = buf[:runtime.Stack(buf, true)]
	all := strings.Split(string(buf), "\n\n")
	// The first is the calling goroutine.
	return all[1:]
}

func ours() []string {
	var out []string
	for _, g := range stacks() {
		if strings.Contains(g, "testing.tRunner") || strings.Contains(g, "testing.(*T).Run") {
			continue
		}
		if strings.Contains(g, ourCode) {
			out = append(out, g)
		}
	}
	return out
}
