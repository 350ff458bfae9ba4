package audit

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestPolicyWithUnknownFieldLoadsLeniently: as kube-apiserver's policy
// reader, a policy the strict decoding refuses only for a field the Policy
// type lacks is decoded leniently (the field dropped) and loaded, with
// kube-apiserver's warning; one that does not decode at all is "failed
// decoding: ...".
func TestPolicyWithUnknownFieldLoadsLeniently(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n  user: [x]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	p, _, err := Configure(file, LogOptions{}, WebhookOptions{}, nil, slog.New(slog.NewTextHandler(&logs, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Rules) != 1 || p.Rules[0].Level != LevelMetadata {
		t.Errorf("rules %+v, want one Metadata rule", p.Rules)
	}
	if !strings.Contains(logs.String(), "Audit policy contains errors, falling back to lenient decoding") || !strings.Contains(logs.String(), "user") {
		t.Errorf("no lenient decoding warning naming the field in %q", logs.String())
	}
	if _, err := ParsePolicy([]byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: 3\n")); err == nil || !strings.HasPrefix(err.Error(), "failed decoding: ") {
		t.Errorf("rules: 3: error %v, want failed decoding: ...", err)
	}
}
