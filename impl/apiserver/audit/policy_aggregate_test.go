package audit

import (
	"strings"
	"testing"
)

// TestPolicyErrorsAggregated: as kube-apiserver's policy validation, every
// error of every rule is reported, one aggregate in rule order (level,
// nonResourceURLs by index, resources, omitStages by index, then URLs
// with resources), in its words.
func TestPolicyErrorsAggregated(t *testing.T) {
	policy := `apiVersion: audit.k8s.io/v1
kind: Policy
rules:
- level: Everything
  nonResourceURLs: [healthz, /a*/b]
  omitStages: [Later]
- nonResourceURLs: [/x]
  resources: [{resourceNames: [web]}]
`
	want := `[rules[0].level: Unsupported value: "Everything": supported values: "None", "Metadata", "Request", "RequestResponse", ` +
		`rules[0].nonResourceURLs[0]: Invalid value: "healthz": non-resource URL rules must begin with a '/' character, ` +
		`rules[0].nonResourceURLs[1]: Invalid value: "/a*/b": non-resource URL wildcards '*' must be the final character of the rule, ` +
		`rules[0].omitStages[0]: Invalid value: "Later": allowed stages are RequestReceived,ResponseStarted,ResponseComplete,Panic, ` +
		`rules[1].level: Required value, ` +
		`rules[1].resources.resourceNames: Invalid value: ["web"]: using resourceNames requires at least one resource, ` +
		`rules[1].nonResourceURLs: Invalid value: ["/x"]: rules cannot apply to both regular resources and non-resource URLs]`
	if _, err := ParsePolicy([]byte(policy)); err == nil || err.Error() != want {
		t.Errorf("error\n%v\nwant\n%s", err, want)
	}
}

// TestPolicyGroupMustBeDNSSubdomain: a rule's resources group, when not
// the core group, must be a DNS subdomain, as kube-apiserver checks
// (a group/version is refused).
func TestPolicyGroupMustBeDNSSubdomain(t *testing.T) {
	policy := "apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n- level: None\n  resources: [{group: rbac.authorization.k8s.io/v1}]\n"
	_, err := ParsePolicy([]byte(policy))
	if err == nil || !strings.HasPrefix(err.Error(), `rules[0].resources.group: Invalid value: "rbac.authorization.k8s.io/v1": a lowercase RFC 1123 subdomain`) {
		t.Errorf("error %v, want rules[0].resources.group invalid", err)
	}
}
