// Package leakcheck lets tests assert that the goroutines a piece of code
// started have ended once it is shut down.
package leakcheck

import (
	"runtime"
	"strings"
	"testing"
	"time"
)

// Check records the goroutine count now and returns a function that fails t
// if, after polling for up to 10 seconds, more goroutines are alive than
// were at the call (plus slack for runtime helpers). Call it as
// `defer leakcheck.Check(t)()`.
func Check(t testing.TB) func() {
	t.Helper()
	before := runtime.NumGoroutine()
	return func() {
		t.Helper()
		const slack = 2
		deadline := time.Now().Add(10 * time.Second)
		for {
			n := runtime.NumGoroutine()
			if n <= before+slack {
				return
			}
			if time.Now().After(deadline) {
				buf := make([]byte, 1<<20)
				buf = buf[:runtime.Stack(buf, true)]
				t.Errorf("goroutine leak: %d goroutines before, %d after shutdown\n%s", before, n, interesting(string(buf)))
				return
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}

// interesting drops the stacks of the test framework itself.
func interesting(dump string) string {
	var out []string
	for _, g := range strings.Split(dump, "\n\n") {
		if strings.Contains(g, "testing.tRunner") && strings.Contains(g, "leakcheck") {
			continue
		}
		out = append(out, g)
	}
	return strings.Join(out, "\n\n")
}
