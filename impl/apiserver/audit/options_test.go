package audit

import (
	"fmt"
	"net/http/httptest"
	"path/filepath"
	"testing"
	"time"
)

// TestAuditOptionDefaults: the flags' defaults are kube-apiserver's.
func TestAuditOptionDefaults(t *testing.T) {
	w := DefaultWebhookOptions()
	want := WebhookOptions{InitialBackoff: 10 * time.Second, Mode: "batch", Version: "audit.k8s.io/v1", Batch: BatchConfig{BufferSize: 10000,
		MaxBatchSize: 400, MaxBatchWait: 30 * time.Second, ThrottleEnable: true, ThrottleQPS: 10, ThrottleBurst: 15, AsyncDelegate: true},
		Truncate: TruncateConfig{MaxEventSize: 102400, MaxBatchSize: 10485760}}
	if w != want {
		t.Errorf("webhook defaults %+v, want %+v", w, want)
	}
	l := DefaultLogOptions()
	if l.Format != "json" || l.Mode != "blocking" || l.Version != "audit.k8s.io/v1" || l.Batch != (BatchConfig{BufferSize: 10000, MaxBatchSize: 1}) {
		t.Errorf("log defaults %+v", l)
	}
}

// TestAuditOptionValidation: kube-apiserver's messages for bad modes,
// batch settings, formats, versions and rotation limits; batch settings
// are checked in batch mode only.
func TestAuditOptionValidation(t *testing.T) {
	log := func(f func(*LogOptions)) []error {
		o := DefaultLogOptions()
		o.Path = "/var/log/audit.log"
		f(&o)
		return o.Validate()
	}
	hook := func(f func(*WebhookOptions)) []error {
		o := DefaultWebhookOptions()
		o.ConfigFile = "/etc/audit.kubeconfig"
		f(&o)
		return o.Validate()
	}
	for _, tc := range []struct {
		name string
		errs []error
		want string
	}{
		{"log defaults", log(func(*LogOptions) {}), "[]"},
		{"bad log mode", log(func(o *LogOptions) { o.Mode = "async" }), `[invalid audit log mode async, allowed modes are "batch,blocking,blocking-strict"]`},
		{"bad format", log(func(o *LogOptions) { o.Format = "xml" }), `[invalid audit log format xml, allowed formats are "legacy,json"]`},
		{"negatives", log(func(o *LogOptions) { o.MaxAge, o.MaxBackups, o.MaxSize = -1, -2, -3 }),
			"[--audit-log-maxage -1 can't be a negative number --audit-log-maxbackup -2 can't be a negative number --audit-log-maxsize -3 can't be a negative number]"},
		{"log batch buffer", log(func(o *LogOptions) { o.Mode, o.Batch.BufferSize = "batch", 0 }), "[invalid audit batch log buffer size 0, must be a positive number]"},
		{"batch settings unused when blocking", log(func(o *LogOptions) { o.Batch.BufferSize = -5 }), "[]"},
		{"log version", log(func(o *LogOptions) { o.Version = "audit.k8s.io/v1beta1" }), `[invalid group version, allowed versions are ["audit.k8s.io/v1"]]`},
		{"no log path", func() []error { o := DefaultLogOptions(); o.Mode = "x"; return o.Validate() }(), "[]"},
		{"webhook defaults", hook(func(*WebhookOptions) {}), "[]"},
		{"webhook max size", hook(func(o *WebhookOptions) { o.Batch.MaxBatchSize = 0 }), "[invalid audit batch webhook max batch size 0, must be a positive number]"},
		{"webhook qps", hook(func(o *WebhookOptions) { o.Batch.ThrottleQPS = 0 }), "[invalid audit batch webhook throttle QPS 0, must be a positive number]"},
		{"webhook burst", hook(func(o *WebhookOptions) { o.Batch.ThrottleBurst = 0 }), "[invalid audit batch webhook throttle burst 0, must be a positive number]"},
		{"throttle off", hook(func(o *WebhookOptions) { o.Batch.ThrottleEnable, o.Batch.ThrottleQPS = false, 0 }), "[]"},
		{"webhook mode", hook(func(o *WebhookOptions) { o.Mode = "" + "strict" }), `[invalid audit webhook mode strict, allowed modes are "batch,blocking,blocking-strict"]`},
		{"empty log mode", log(func(o *LogOptions) { o.Mode = "" }), `[invalid audit log mode , allowed modes are "batch,blocking,blocking-strict"]`},
		{"empty webhook mode", hook(func(o *WebhookOptions) { o.Mode = "" }), `[invalid audit webhook mode , allowed modes are "batch,blocking,blocking-strict"]`},
	} {
		if got := fmt.Sprint(tc.errs); got != tc.want {
			t.Errorf("%s: %s, want %s", tc.name, got, tc.want)
		}
	}
}

// TestNewBackendsModes: each backend is put in its mode (batch behind a
// Buffered, blocking ignoring failures, blocking-strict as is) and the
// two fan out through a union.
func TestNewBackendsModes(t *testing.T) {
	srv := httptest.NewServer(&webhookReceiver{})
	defer srv.Close()
	kubeconfig := webhookKubeconfig(t, srv.URL)
	logPath := filepath.Join(t.TempDir(), "audit.log")
	if b, err := NewBackends(LogOptions{}, WebhookOptions{}, nil); b != nil || err != nil {
		t.Errorf("nothing configured: %v %v", b, err)
	}
	b, err := NewBackends(LogOptions{Path: logPath}, WebhookOptions{ConfigFile: kubeconfig}, nil)
	if err != nil {
		t.Fatal(err)
	}
	u, ok := b.(union)
	if !ok || len(u) != 2 {
		t.Fatalf("log and webhook: %T", b)
	}
	if _, ok := u[0].(ignoreErrors); !ok {
		t.Errorf("log backend %T, want blocking", u[0])
	}
	if _, ok := u[1].(*Buffered); !ok {
		t.Errorf("webhook backend %T, want batch", u[1])
	}
	if err := u.Close(); err != nil {
		t.Fatal(err)
	}
	w := DefaultWebhookOptions()
	w.ConfigFile, w.Mode = kubeconfig, ModeBlockingStrict
	b, err = NewBackends(LogOptions{}, w, nil)
	if _, ok := b.(*WebhookBackend); err != nil || !ok {
		t.Errorf("blocking-strict webhook: %T %v", b, err)
	}
	w.Mode = "bogus"
	if _, err := NewBackends(LogOptions{}, w, nil); err == nil {
		t.Error("a bad mode was accepted")
	}
}
