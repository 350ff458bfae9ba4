package audit

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// TestUserAgentTruncated: as kube-apiserver, a user agent longer than
// 1024 bytes is cut there and marked "...TRUNCATED".
func TestUserAgentTruncated(t *testing.T) {
	long := strings.Repeat("a", 1100)
	r := httptest.NewRequest(http.MethodGet, "/api/v1/pods", nil)
	r.Header.Set("User-Agent", long)
	events, _ := serve(t, policyAt(LevelMetadata), r, func(http.ResponseWriter, *http.Request) {})
	if got, want := events[0].UserAgent, long[:1024]+"...TRUNCATED"; got != want {
		t.Errorf("userAgent of %d bytes, want %d", len(got), len(want))
	}
	r.Header.Set("User-Agent", long[:1024])
	events, _ = serve(t, policyAt(LevelMetadata), r, func(http.ResponseWriter, *http.Request) {})
	if events[0].UserAgent != long[:1024] {
		t.Errorf("a 1024-byte user agent was changed")
	}
}

// TestSourceIPsAsUpstream: X-Forwarded-For's addresses all (repeats
// too), X-Real-Ip unless already among them, then the peer unless it is
// the last one so far; addresses in their canonical form.
func TestSourceIPsAsUpstream(t *testing.T) {
	for _, tc := range []struct {
		xff, real, remote string
		want              string
	}{
		{"10.0.0.1, 10.0.0.2", "", "192.0.2.7:5555", "10.0.0.1,10.0.0.2,192.0.2.7"},
		{"10.0.0.1, 10.0.0.1", "", "192.0.2.7:5555", "10.0.0.1,10.0.0.1,192.0.2.7"},
		{"10.0.0.1, 10.0.0.2", "10.0.0.1", "10.0.0.1:1", "10.0.0.1,10.0.0.2,10.0.0.1"},
		{"10.0.0.1", "", "10.0.0.1:1", "10.0.0.1"},
		{"", "10.0.0.9", "10.0.0.9:1", "10.0.0.9"},
		{"bogus, 010.000.0.1", "", "[::ffff:192.0.2.7]:80", "10.0.0.1,192.0.2.7"},
		{"", "", "192.0.2.8", "192.0.2.8"},
	} {
		r := httptest.NewRequest(http.MethodGet, "/api", nil)
		if tc.xff != "" {
			r.Header.Set("X-Forwarded-For", tc.xff)
		}
		if tc.real != "" {
			r.Header.Set("X-Real-Ip", tc.real)
		}
		r.RemoteAddr = tc.remote
		if got := strings.Join(sourceIPs(r), ","); got != tc.want {
			t.Errorf("xff %q real %q remote %q: %s, want %s", tc.xff, tc.real, tc.remote, got, tc.want)
		}
	}
}
