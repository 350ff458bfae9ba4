package podsync

import (
	"strings"
	"testing"
	"time"
)

func TestDecideImagePull(t *testing.T) {
	c := DefaultImagePullBackoff
	const image = "registry.example/app:1"
	const backOff = `Back-off pulling image "registry.example/app:1"`
	failedAt := now.Add(-3 * time.Second)
	entry := func(d time.Duration, at time.Time, last string) ImagePullEntry {
		return ImagePullEntry{BackoffEntry: BackoffEntry{Backoff: d, LastUpdate: at}, LastError: last}
	}
	for _, tc := range []struct {
		name string
		e    ImagePullEntry
		now  time.Time
		want ImagePullDecision
	}{
		{"never failed", ImagePullEntry{}, now, ImagePullDecision{Pull: true}},
		{"within the back-off, with the last error", entry(10*time.Second, failedAt, "ErrImagePull: not found"), now,
			ImagePullDecision{Message: backOff + ": ErrImagePull: not found", Until: failedAt.Add(10 * time.Second)}},
		{"within the back-off, no error known", entry(10*time.Second, failedAt, ""), now,
			ImagePullDecision{Message: backOff, Until: failedAt.Add(10 * time.Second)}},
		{"the back-off just ended", entry(10*time.Second, failedAt, "ErrImagePull: x"), failedAt.Add(10 * time.Second), ImagePullDecision{Pull: true}},
		{"a longer back-off", entry(40*time.Second, failedAt, "ErrImagePull: x"), now.Add(30 * time.Second),
			ImagePullDecision{Message: backOff + ": ErrImagePull: x", Until: failedAt.Add(40 * time.Second)}},
		{"expired", entry(5*time.Minute, failedAt, "ErrImagePull: x"), failedAt.Add(10*time.Minute + time.Second), ImagePullDecision{Pull: true}},
	} {
		if got := DecideImagePull(c, tc.e, image, tc.now); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// The schedule: 10 s after the first failure, doubling to 5 min; a success
// leaves the entry (upstream collects only expired ones), so a failure soon
// after doubles on; 2×Max without a failure starts over.
func TestImagePullBackoffSchedule(t *testing.T) {
	c := DefaultImagePullBackoff
	var e ImagePullEntry
	at := now
	var got []time.Duration
	for range 7 {
		if d := DecideImagePull(c, e, "img", at); !d.Pull {
			t.Fatalf("at %v: backing off (%+v)", at, d)
		}
		e = ImagePullStarted(e)
		e = ImagePullFailed(c, e, ReasonErrImagePull, "boom", at)
		if e.LastError != "ErrImagePull: boom" {
			t.Fatalf("last error %q", e.LastError)
		}
		got = append(got, e.Backoff)
		d := DecideImagePull(c, e, "img", at.Add(e.Backoff-time.Millisecond))
		if d.Pull || d.Until != at.Add(e.Backoff) || d.Message != `Back-off pulling image "img": ErrImagePull: boom` {
			t.Fatalf("just before the back-off ends: %+v", d)
		}
		at = at.Add(e.Backoff)
	}
	want := []time.Duration{10 * time.Second, 20 * time.Second, 40 * time.Second, 80 * time.Second, 160 * time.Second, 5 * time.Minute, 5 * time.Minute}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("back-offs %v, want %v", got, want)
		}
	}

	// A pull that starts forgets the last error.
	if s := ImagePullStarted(e); s.LastError != "" || s.BackoffEntry != e.BackoffEntry {
		t.Fatalf("started: %+v", s)
	}
	// Within 2×Max of the last failure the entry lives on.
	if ImagePullExpired(c, e, at.Add(10*time.Minute-5*time.Minute)) {
		t.Fatal("expired too soon")
	}
	later := e.LastUpdate.Add(10*time.Minute + time.Second)
	if !ImagePullExpired(c, e, later) {
		t.Fatal("not expired after 2×Max")
	}
	if e = ImagePullFailed(c, e, ReasonErrImagePull, "again", later); e.Backoff != 10*time.Second {
		t.Fatalf("after expiry the back-off starts over: %v", e.Backoff)
	}

	// A configured schedule (tests shorten it) is followed as given.
	short := BackoffConfig{Base: time.Second, Max: 3 * time.Second}
	var s ImagePullEntry
	var ds []time.Duration
	for i := range 4 {
		s = ImagePullFailed(short, s, ReasonErrImagePull, "x", now.Add(time.Duration(i)*time.Second))
		ds = append(ds, s.Backoff)
	}
	if ds[0] != time.Second || ds[1] != 2*time.Second || ds[2] != 3*time.Second || ds[3] != 3*time.Second {
		t.Fatalf("short schedule %v", ds)
	}
}

// TestPulledImageMessage: upstream's Pulled text, durations truncated
// (not rounded) to the millisecond, with the image's size.
func TestPulledImageMessage(t *testing.T) {
	got := PulledImageMessage("nginx:1.27", 1234567899*time.Nanosecond, 2*time.Second+999999*time.Nanosecond, 10485760)
	want := `Successfully pulled image "nginx:1.27" in 1.234s (2s including waiting). Image size: 10485760 bytes.`
	if got != want {
		t.Fatalf("got  %q\nwant %q", got, want)
	}
	if got := PulledImageMessage("a", 0, 0, 0); got != `Successfully pulled image "a" in 0s (0s including waiting). Image size: 0 bytes.` {
		t.Fatalf("got %q", got)
	}
}

// TestPullFailure: CRI's RegistryUnavailable and SignatureValidationFailed
// (by message prefix, as upstream's evalCRIPullErr) get reasons and
// sentences of their own; any other error is ErrImagePull as is.
func TestPullFailure(t *testing.T) {
	for _, tc := range []struct{ msg, reason, message string }{
		{"RegistryUnavailable: dial tcp: connection refused", ReasonRegistryUnavailable,
			"image pull failed for reg.example/a:1 because the registry is unavailable: dial tcp: connection refused"},
		{"RegistryUnavailable", ReasonRegistryUnavailable, "image pull failed for reg.example/a:1 because the registry is unavailable"},
		{"SignatureValidationFailed: no signature", ReasonSignatureValidationFailed,
			"image pull failed for reg.example/a:1 because the signature validation failed: no signature"},
		{"failed to pull: RegistryUnavailable", ReasonErrImagePull, "failed to pull: RegistryUnavailable"},
		{"rpc error: code = Unknown desc = boom", ReasonErrImagePull, "rpc error: code = Unknown desc = boom"},
	} {
		reason, message := PullFailure("reg.example/a:1", tc.msg)
		if reason != tc.reason || message != tc.message {
			t.Errorf("%q: got %s %q, want %s %q", tc.msg, reason, message, tc.reason, tc.message)
		}
	}
	if got := ImagePullFailed(DefaultImagePullBackoff, ImagePullEntry{}, ReasonRegistryUnavailable, "m", time.Now()).LastError; got != "RegistryUnavailable: m" {
		t.Errorf("last error %q", got)
	}
}

// TestInvalidImageName: names the image manager cannot parse, with
// upstream's message; valid ones (short, tagged, digested, with a
// registry and port) are not.
func TestInvalidImageName(t *testing.T) {
	for _, ok := range []string{"nginx", "nginx:1.27", "registry.example:5000/team/app:v1",
		"busybox@sha256:" + strings.Repeat("a", 64), "docker.io/library/nginx:latest"} {
		if msg := InvalidImageName(ok); msg != "" {
			t.Errorf("%q: %s", ok, msg)
		}
	}
	for image, want := range map[string]string{
		"Nginx:1":   `Failed to apply default image tag "Nginx:1": couldn't parse image name "Nginx:1": invalid reference format: repository name (library/Nginx) must be lowercase`,
		"nginx:a b": `Failed to apply default image tag "nginx:a b": couldn't parse image name "nginx:a b": invalid reference format`,
	} {
		if got := InvalidImageName(image); got != want {
			t.Errorf("%q:\ngot  %q\nwant %q", image, got, want)
		}
	}
}

// TestDefaultImageTag: as upstream's applyDefaultImageTag, ":latest" is
// appended only when the reference names neither a tag nor a digest, and
// the name is not otherwise normalized.
func TestDefaultImageTag(t *testing.T) {
	for _, tc := range []struct{ image, want string }{
		{"nginx", "nginx:latest"},
		{"nginx:latest", "nginx:latest"},
		{"nginx:1.27", "nginx:1.27"},
		{"library/nginx", "library/nginx:latest"},
		{"docker.io/library/nginx", "docker.io/library/nginx:latest"},
		{"localhost:5000/app", "localhost:5000/app:latest"},
		{"localhost:5000/app:v1", "localhost:5000/app:v1"},
		{"registry.example/app@sha256:" + strings.Repeat("ab", 32), "registry.example/app@sha256:" + strings.Repeat("ab", 32)},
		{"registry.example/app:v1@sha256:" + strings.Repeat("ab", 32), "registry.example/app:v1@sha256:" + strings.Repeat("ab", 32)},
	} {
		got, msg := DefaultImageTag(tc.image)
		if got != tc.want || msg != "" {
			t.Errorf("DefaultImageTag(%q) = %q, %q; want %q", tc.image, got, msg, tc.want)
		}
	}
	if got, msg := DefaultImageTag("Nginx"); got != "" || msg != InvalidImageName("Nginx") || msg == "" {
		t.Errorf("DefaultImageTag(Nginx) = %q, %q; want InvalidImageName's message", got, msg)
	}
}
