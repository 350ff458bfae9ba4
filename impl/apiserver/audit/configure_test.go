package audit

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestValidateOptionsReportsAllErrors: every bad log and webhook option
// is reported in one error, as kube-apiserver's aggregate ("[a, b]").
func TestValidateOptionsReportsAllErrors(t *testing.T) {
	l, w := DefaultLogOptions(), DefaultWebhookOptions()
	l.Path, l.Mode, l.MaxAge = "/var/log/audit.log", "async", -1
	w.ConfigFile, w.Mode = "/etc/audit.kubeconfig", "strict"
	want := `[invalid audit log mode async, allowed modes are "batch,blocking,blocking-strict", --audit-log-maxage -1 can't be a negative number, ` +
		`invalid audit webhook mode strict, allowed modes are "batch,blocking,blocking-strict"]`
	if err := ValidateOptions(l, w); err == nil || err.Error() != want {
		t.Errorf("ValidateOptions: %v\nwant %s", err, want)
	}
	if _, err := NewBackends(l, w, nil); err == nil || err.Error() != want {
		t.Errorf("NewBackends: %v\nwant %s", err, want)
	}
	l.Mode, l.MaxAge = ModeBlocking, 0
	w.Mode = ModeBatch
	if err := ValidateOptions(l, w); err != nil {
		t.Errorf("valid options: %v", err)
	}
}

// TestMalformedAuditVersion: a version that is no group version at all
// gets apimachinery's parse error, as kube-apiserver's; a well-formed
// unknown one the allowed list.
func TestMalformedAuditVersion(t *testing.T) {
	l := DefaultLogOptions()
	l.Path, l.Version = "-", "audit.k8s.io/v1/extra"
	if err := ValidateOptions(l, WebhookOptions{}); err == nil || err.Error() != "unexpected GroupVersion string: audit.k8s.io/v1/extra" {
		t.Errorf("malformed: %v", err)
	}
	l.Version = "v1"
	if err := ValidateOptions(l, WebhookOptions{}); err == nil || err.Error() != `invalid group version, allowed versions are ["audit.k8s.io/v1"]` {
		t.Errorf("unknown: %v", err)
	}
}

// TestConfigureEitherAlone: as kube-apiserver, a backend without a policy
// file is accepted and records nothing (the log file is created, and the
// log says so), and a policy file without a backend is loaded and
// records nothing; the backends' options are validated either way.
func TestConfigureEitherAlone(t *testing.T) {
	dir := t.TempDir()
	var out bytes.Buffer
	log := slog.New(slog.NewTextHandler(&out, nil))
	logPath := filepath.Join(dir, "sub", "audit.log")
	p, b, err := Configure("", LogOptions{Path: logPath}, WebhookOptions{ConfigFile: filepath.Join(dir, "missing.kubeconfig")}, nil, log)
	if err != nil || p != nil || b != nil {
		t.Fatalf("backends without policy: %v %v %v", p, b, err)
	}
	if _, err := os.Stat(logPath); err != nil {
		t.Errorf("log file not created: %v", err)
	}
	for _, backend := range []string{"log", "webhook"} {
		if msg := "No audit policy file provided, no events will be recorded for " + backend + " backend"; !strings.Contains(out.String(), msg) {
			t.Errorf("log %q, want %q", out.String(), msg)
		}
	}
	bad := DefaultLogOptions()
	bad.Path, bad.Mode = "-", "async"
	if _, _, err := Configure("", bad, WebhookOptions{}, nil, log); err == nil || !strings.Contains(err.Error(), "invalid audit log mode async") {
		t.Errorf("bad mode without policy: %v", err)
	}

	policyFile := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policyFile, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	if p, b, err = Configure(policyFile, LogOptions{}, WebhookOptions{}, nil, log); err != nil || p == nil || b != nil {
		t.Fatalf("policy without backend: %v %v %v", p, b, err)
	}
	if _, _, err := Configure(filepath.Join(dir, "none.yaml"), LogOptions{}, WebhookOptions{}, nil, log); err == nil {
		t.Error("a missing policy file without a backend was accepted")
	}
	if p, b, err = Configure(policyFile, LogOptions{Path: logPath}, WebhookOptions{}, nil, log); err != nil || p == nil || b == nil {
		t.Fatalf("policy and log: %v %v %v", p, b, err)
	}
	if c, ok := b.(interface{ Close() error }); ok {
		_ = c.Close()
	}
}
