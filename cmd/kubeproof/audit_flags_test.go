package main

import (
	"testing"
	"time"

	"github.com/spf13/pflag"

	"github.com/kubeproof/kubeproof/impl/apiserver/audit"
	"github.com/kubeproof/kubeproof/impl/cluster"
)

// TestAuditFlags: kube-apiserver's --audit-log-* and --audit-webhook-*
// flags, their defaults, and the deprecated
// --audit-webhook-batch-initial-backoff.
func TestAuditFlags(t *testing.T) {
	var o cluster.AuthOptions
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
	if err := fs.Parse(nil); err != nil {
		t.Fatal(err)
	}
	if o.AuditLog != audit.DefaultLogOptions() || o.AuditWebhook != audit.DefaultWebhookOptions() {
		t.Errorf("defaults %+v %+v", o.AuditLog, o.AuditWebhook)
	}
	fs = pflag.NewFlagSet("test", pflag.ContinueOnError)
	addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
	err := fs.Parse([]string{"--audit-log-path=-", "--audit-log-maxage=3", "--audit-log-maxbackup=4", "--audit-log-maxsize=5",
		"--audit-log-compress", "--audit-log-format=legacy", "--audit-log-mode=batch", "--audit-log-batch-buffer-size=7",
		"--audit-webhook-config-file=/etc/hook", "--audit-webhook-mode=blocking-strict", "--audit-webhook-batch-buffer-size=1",
		"--audit-webhook-batch-max-size=2", "--audit-webhook-batch-max-wait=3s", "--audit-webhook-batch-throttle-enable=false",
		"--audit-webhook-batch-throttle-qps=4.5", "--audit-webhook-batch-throttle-burst=6", "--audit-webhook-batch-initial-backoff=7s",
		"--audit-webhook-version=audit.k8s.io/v1", "--audit-log-truncate-enabled", "--audit-webhook-truncate-max-event-size=9",
		"--audit-webhook-truncate-max-batch-size=99"})
	if err != nil {
		t.Fatal(err)
	}
	l, w := o.AuditLog, o.AuditWebhook
	if o.AuditLogPath != "-" || l.MaxAge != 3 || l.MaxBackups != 4 || l.MaxSize != 5 || !l.Compress || l.Format != "legacy" || l.Mode != "batch" || l.Batch.BufferSize != 7 ||
		l.Truncate != (audit.TruncateConfig{Enabled: true, MaxEventSize: 102400, MaxBatchSize: 10485760}) {
		t.Errorf("log options %+v", l)
	}
	want := audit.WebhookOptions{ConfigFile: "/etc/hook", InitialBackoff: 7 * time.Second, Mode: "blocking-strict", Version: "audit.k8s.io/v1",
		Batch:    audit.BatchConfig{BufferSize: 1, MaxBatchSize: 2, MaxBatchWait: 3 * time.Second, ThrottleQPS: 4.5, ThrottleBurst: 6, AsyncDelegate: true},
		Truncate: audit.TruncateConfig{MaxEventSize: 9, MaxBatchSize: 99}}
	if w != want {
		t.Errorf("webhook options\n%+v\nwant\n%+v", w, want)
	}
}

// TestAuditFlagHelp: --audit-log-path and --audit-policy-file say what
// kube-apiserver's say; either may be given alone.
func TestAuditFlagHelp(t *testing.T) {
	var o cluster.AuthOptions
	fs := pflag.NewFlagSet("test", pflag.ContinueOnError)
	addAuthFlags(fs, &o, cluster.DefaultAuthorizationModes, nil, nil)
	for name, want := range map[string]string{
		"audit-log-path":    "If set, all requests coming to the apiserver will be logged to this file.  '-' means standard out.",
		"audit-policy-file": "Path to the file that defines the audit policy configuration.",
	} {
		if got := fs.Lookup(name).Usage; got != want {
			t.Errorf("--%s help %q, want %q", name, got, want)
		}
	}
}
