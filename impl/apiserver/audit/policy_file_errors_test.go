package audit

import (
	"log/slog"
	"os"
	"path/filepath"
	"testing"
)

// TestPolicyFileErrors: a --audit-policy-file that cannot be read or is
// no valid policy is reported in kube-apiserver's words: "loading audit
// policy file: failed to read file path …", or the policy's error
// followed by ": from file <path>" (a rule's level as kube-apiserver's
// policy validation: required, one of the four); a policy without rules
// is "loaded illegal policy with 0 rules".
func TestPolicyFileErrors(t *testing.T) {
	dir := t.TempDir()
	missing := filepath.Join(dir, "none.yaml")
	empty := filepath.Join(dir, "empty.yaml")
	if err := os.WriteFile(empty, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: []\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badLevel := filepath.Join(dir, "level.yaml")
	if err := os.WriteFile(badLevel, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Everything\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	noLevel := filepath.Join(dir, "nolevel.yaml")
	if err := os.WriteFile(noLevel, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- namespaces: [a]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct{ file, want string }{
		{missing, `loading audit policy file: failed to read file path "` + missing + `": open ` + missing + `: no such file or directory`},
		{empty, `loading audit policy file: loaded illegal policy with 0 rules: from file ` + empty},
		{badLevel, `loading audit policy file: rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse": from file ` + badLevel},
		{noLevel, `loading audit policy file: rules[0].level: Required value: from file ` + noLevel},
	} {
		_, _, err := Configure(tc.file, LogOptions{}, WebhookOptions{}, nil, slog.New(slog.DiscardHandler))
		if err == nil || err.Error() != tc.want {
			t.Errorf("%s: %v\nwant %s", filepath.Base(tc.file), err, tc.want)
		}
	}
}
