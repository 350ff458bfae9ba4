package healthz

import (
	"errors"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"
)

func serveGet(t *testing.T, h http.Handler, url string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, url, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// TestEndpoint: the answers of k8s.io/apiserver's healthz handler, byte
// for byte: "ok"; ?verbose lists each check and "<endpoint> check passed";
// ?exclude skips a check ("excluded: ok") and warns about names no check
// has; a failing check makes the endpoint 500 with the report (its reason
// withheld) ending "<endpoint> check failed"; each check at its own path;
// no checks means ping.
func TestEndpoint(t *testing.T) {
	log := slog.New(slog.DiscardHandler)
	failing := NamedCheck("broken", func(*http.Request) error { return errors.New("disk on fire") })
	mux := http.NewServeMux()
	Install(mux, "/readyz", log, Ping, failing)
	Install(mux, "/livez", log)
	for _, tc := range []struct {
		url  string
		code int
		body string
	}{
		{"/livez", 200, "ok"},
		{"/livez?verbose", 200, "[+]ping ok\nlivez check passed\n"},
		{"/livez/ping", 200, "ok"},
		{"/readyz", 500, "[+]ping ok\n[-]broken failed: reason withheld\nreadyz check failed\n"},
		{"/readyz/broken", 500, "internal server error: disk on fire\n"},
		{"/readyz/ping", 200, "ok"},
		{"/readyz?exclude=broken", 200, "ok"},
		{"/readyz?exclude=broken&verbose", 200, "[+]ping ok\n[+]broken excluded: ok\nreadyz check passed\n"},
		{"/readyz?exclude=broken&exclude=nope&exclude=also&verbose", 200,
			"[+]ping ok\n[+]broken excluded: ok\nwarn: some health checks cannot be excluded: no matches for \"also\",\"nope\"\nreadyz check passed\n"},
		// Names sorted before quoting: "a" before "a!" (quoted, `"a!"` would
		// sort first, '!' being below '"').
		{"/readyz?exclude=a!&exclude=a&verbose", 500,
			"[+]ping ok\n[-]broken failed: reason withheld\nwarn: some health checks cannot be excluded: no matches for \"a\",\"a!\"\nreadyz check failed\n"},
	} {
		if code, body := serveGet(t, mux, tc.url); code != tc.code || body != tc.body {
			t.Errorf("%s: %d %q, want %d %q", tc.url, code, body, tc.code, tc.body)
		}
	}
	done := make(chan struct{})
	shutdown := Shutdown(done)
	if err := shutdown.Check(nil); err != nil || shutdown.Name() != "shutdown" {
		t.Errorf("shutdown before: %v", err)
	}
	close(done)
	if err := shutdown.Check(nil); err == nil || err.Error() != "process is shutting down" {
		t.Errorf("shutdown after: %v", err)
	}
}

// TestMutable: kube-controller-manager's /healthz grows its checks; ping
// while there are none; only the endpoint itself is served.
func TestMutable(t *testing.T) {
	m := NewMutable("/healthz", slog.New(slog.DiscardHandler))
	if code, body := serveGet(t, m, "/healthz?verbose"); code != 200 || body != "[+]ping ok\nhealthz check passed\n" {
		t.Errorf("no checks: %d %q", code, body)
	}
	m.Add(NamedCheck("deployment-controller", func(*http.Request) error { return nil }), NamedCheck("leaderElection", func(*http.Request) error { return errors.New("late") }))
	if code, body := serveGet(t, m, "/healthz"); code != 500 || body != "[+]deployment-controller ok\n[-]leaderElection failed: reason withheld\nhealthz check failed\n" {
		t.Errorf("with checks: %d %q", code, body)
	}
}
