package sim

import (
	"runtime/debug"
	"strings"
	"testing"
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
