package cluster

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildChainRejectsBadFlags(t *testing.T) {
	dir := t.TempDir()
	policy := filepath.Join(dir, "policy.yaml")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: Metadata\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		opts AuthOptions
		want string
	}{
		{"unknown mode", AuthOptions{AuthorizationModes: []string{"RBAC", "ABAC"}}, `--authorization-mode "ABAC" is not supported`},
		{"mode twice", AuthOptions{AuthorizationModes: []string{"RBAC", "RBAC"}}, "given twice"},
		{"unknown plugin", AuthOptions{EnableAdmissionPlugins: []string{"Nope"}}, `"Nope" is unknown`},
		{"audit log without policy", AuthOptions{AuditLogPath: filepath.Join(dir, "audit.log")}, "go together"},
		{"audit policy without log", AuthOptions{AuditPolicyFile: policy}, "go together"},
		{"missing token file", AuthOptions{TokenAuthFile: filepath.Join(dir, "none.csv")}, "token file"},
		{"issuer without keys", AuthOptions{ServiceAccountIssuers: []string{"https://x"}}, "needs --service-account-signing-key-file"},
		{"missing signing key", AuthOptions{ServiceAccountSigningKeyFile: filepath.Join(dir, "none.key")}, "signing key"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := buildChain(tc.opts)
			if err == nil {
				c.close()
				t.Fatalf("no error, want %q", tc.want)
			}
			if !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("error %q, want it to contain %q", err, tc.want)
			}
		})
	}
	c, err := buildChain(AuthOptions{AuditLogPath: filepath.Join(dir, "audit.log"), AuditPolicyFile: policy})
	if err != nil {
		t.Fatal(err)
	}
	if c.auditPolicy == nil || c.backend() == nil || c.serviceAccounts != nil || c.plugins == nil {
		t.Fatalf("chain %+v", c)
	}
	c.close()
	if c, err = buildChain(AuthOptions{}); err != nil || c.backend() != nil {
		t.Fatalf("default chain: %+v %v", c, err)
	}
}
