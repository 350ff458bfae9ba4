package sim

import (
	"context"
	"runtime"
	"runtime/debug"
	"strings"
	"testing"
	"time"
)

// TestApplyHostGCPercent: the default applies unless GOGC or GOMEMLIMIT is
// set; an explicit flag wins over both; --gogc 0 leaves the runtime alone.
func TestApplyHostGCPercent(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	current := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	for _, tc := range []struct {
		name           string
		gogc, memlimit string
		percent        int
		flagSet        bool
		want           int
		says           string
	}{
		{"default", "", "", HostGCPercent, false, HostGCPercent, "default"},
		{"GOGC set", "200", "", HostGCPercent, false, 100, "environment"},
		{"GOMEMLIMIT set", "", "1GiB", HostGCPercent, false, 100, "environment"},
		{"flag wins over GOGC", "200", "", 50, true, 50, "--gogc"},
		{"flag 0 leaves it", "", "", 0, true, 100, "left to the Go runtime"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", tc.memlimit)
			debug.SetGCPercent(100)
			says := ApplyHostGCPercent(tc.percent, tc.flagSet)
			if got := current(); got != tc.want || !strings.Contains(says, tc.says) {
				t.Errorf("GC percent %d (%q), want %d (%q)", got, says, tc.want, tc.says)
			}
		})
	}
}

func TestHeapFloorGCPercent(t *testing.T) {
	const mib = 1 << 20
	for _, tc := range []struct {
		name        string
		gogc        int
		live, floor uint64
		want        int
	}{
		{"no floor", 100, 300 * mib, 0, 100},
		{"no collection yet", 100, 0, 1024 * mib, 100},
		{"collector off", -1, 300 * mib, 1024 * mib, -1},
		{"small live heap: goal at the floor", 100, 256 * mib, 1024 * mib, 300},
		{"rounded up", 100, 300 * mib, 1024 * mib, 242}, // 241.33...
		{"goal at gogc just reaches the floor", 100, 512 * mib, 1024 * mib, 100},
		{"live heap past half the floor", 100, 600 * mib, 1024 * mib, 100},
		{"live heap past the floor", 100, 2048 * mib, 1024 * mib, 100},
		{"a higher gogc kept", 400, 256 * mib, 1024 * mib, 400},
		{"tiny live heap bounded", 100, 1024, 1024 * mib, maxFloorGCPercent},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := HeapFloorGCPercent(tc.gogc, tc.live, tc.floor)
			if got != tc.want {
				t.Fatalf("HeapFloorGCPercent(%d, %d, %d) = %d, want %d", tc.gogc, tc.live, tc.floor, got, tc.want)
			}
			if got > tc.gogc && got < maxFloorGCPercent && tc.live+tc.live*uint64(got)/100 < tc.floor {
				t.Errorf("goal %d below the floor %d", tc.live+tc.live*uint64(got)/100, tc.floor)
			}
		})
	}
}

// TestKeepHeapFloor: with a floor far above the live heap the loop raises
// the GC percent after a collection, and it puts gogc back and returns
// when its context ends.
func TestKeepHeapFloor(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	current := func() int { p := debug.SetGCPercent(-1); debug.SetGCPercent(p); return p }
	runtime.GC() // so the live heap is known
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { keepHeapFloor(ctx, 100, 1<<40, time.Millisecond); close(done) }()
	for current() == 100 {
		select {
		case <-done:
			t.Fatal("keepHeapFloor returned before its context ended")
		case <-time.After(time.Millisecond):
		}
	}
	if p := current(); p <= 100 {
		t.Fatalf("GC percent %d with a 1 TiB floor, want more than 100", p)
	}
	cancel()
	<-done
	if p := current(); p != 100 {
		t.Errorf("GC percent %d after the loop ended, want 100 back", p)
	}
}

// TestApplyHostGCPolicy: the floor is kept only where the default GC
// percent applies; --gogc, GOGC and GOMEMLIMIT are never overridden.
func TestApplyHostGCPolicy(t *testing.T) {
	orig := debug.SetGCPercent(100)
	defer debug.SetGCPercent(orig)
	for _, tc := range []struct {
		name           string
		gogc, memlimit string
		percent        int
		flagSet        bool
		floor          uint64
		floorKept      bool
	}{
		{"default with a floor", "", "", HostGCPercent, false, 1 << 40, true},
		{"default without a floor", "", "", HostGCPercent, false, 0, false},
		{"--gogc given", "", "", 50, true, 1 << 40, false},
		{"GOGC set", "100", "", HostGCPercent, false, 1 << 40, false},
		{"GOMEMLIMIT set", "", "1GiB", HostGCPercent, false, 1 << 40, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOGC", tc.gogc)
			t.Setenv("GOMEMLIMIT", tc.memlimit)
			debug.SetGCPercent(100)
			ctx, cancel := context.WithCancel(context.Background())
			says, done := ApplyHostGCPolicy(ctx, tc.percent, tc.flagSet, tc.floor)
			if got := strings.Contains(says, "heap goal at least"); got != tc.floorKept {
				t.Errorf("%q: floor kept %v, want %v", says, got, tc.floorKept)
			}
			select {
			case <-done:
				if tc.floorKept {
					t.Error("done before the context ended")
				}
			default:
				if !tc.floorKept {
					t.Error("something still runs without a floor kept")
				}
			}
			cancel()
			<-done
		})
	}
}
