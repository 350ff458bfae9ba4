package leakcheck

import (
	"strings"
	"testing"
	"time"
)

func parked(stop chan struct{}) { <-stop }

func TestFindsGoroutinesRunningOurCode(t *testing.T) {
	stop := make(chan struct{})
	go parked(stop)
	found := false
	for range 100 {
		for _, g := range ours() {
			if strings.Contains(g, "leakcheck.parked") {
				found = true
			}
		}
		if found {
			break
		}
		runtimeGosched()
	}
	close(stop)
	if !found {
		t.Fatal("a goroutine parked in this package was not reported")
	}
	Check(t)() // and once it has exited, nothing is
}

func runtimeGosched() { time.Sleep(time.Millisecond) }
