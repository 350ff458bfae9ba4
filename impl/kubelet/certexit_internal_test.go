package kubelet

import (
	"context"
	"testing"
	"time"
)

// TestClientCertificateExit: the kubelet exits, with upstream's message,
// only when it has had no valid client certificate for longer than
// exitAfter and the API server is responsive.
func TestClientCertificateExit(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const msg = "It has been 5m0s since a valid client cert was found and the server is responsive, exiting."
	for _, c := range []struct {
		name           string
		now            time.Time
		valid, healthy bool
		exitAfter      time.Duration
		want           string
	}{
		{"valid", t0.Add(time.Hour), true, true, 5 * time.Minute, ""},
		{"invalid for less than exitAfter", t0.Add(5 * time.Minute), false, true, 5 * time.Minute, ""},
		{"invalid for longer", t0.Add(5*time.Minute + time.Second), false, true, 5 * time.Minute, msg},
		{"server unresponsive", t0.Add(time.Hour), false, false, 5 * time.Minute, ""},
		{"no exitAfter", t0.Add(time.Hour), false, true, 0, ""},
	} {
		if got := ClientCertificateExit(c.now, t0, c.valid, c.healthy, c.exitAfter); got != c.want {
			t.Errorf("%s: %q, want %q", c.name, got, c.want)
		}
	}
}

// TestWatchExpiryExits: a client certificate manager without a valid
// certificate past exitAfter (short here) returns upstream's error, which
// the kubelet command returns; before, nothing stopped the kubelet.
func TestWatchExpiryExits(t *testing.T) {
	m, err := NewClientCertificateManager(t.TempDir(), "n1", nil, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	err = m.WatchExpiry(context.Background(), time.Millisecond, time.Millisecond)
	if want := "It has been 1ms since a valid client cert was found and the server is responsive, exiting."; err == nil || err.Error() != want {
		t.Errorf("WatchExpiry: %v, want %q", err, want)
	}
}
