package kubectl

import (
	"regexp"
	"strings"
	"testing"
)

// TestFlowControlWithKubectl: `kubectl get flowschemas` and
// `kubectl get prioritylevelconfigurations` show kube-apiserver's
// bootstrap configuration with its columns (MISSINGPL False once the
// server has written the Dangling condition); a FlowSchema naming a
// missing level shows MISSINGPL True; bad input is a 422 with the field
// path; a mandatory object's spec cannot be changed.
func TestFlowControlWithKubectl(t *testing.T) {
	t.Parallel()
	row := func(table, name string) string {
		for _, l := range strings.Split(table, "\n") {
			if f := strings.Fields(l); len(f) > 0 && f[0] == name {
				return l
			}
		}
		return ""
	}
	var fs string
	eventuallyKubectl(t, "global-default's MISSINGPL is False", func() bool {
		fs = run(t, "get", "flowschemas")
		return regexp.MustCompile(`^global-default\s+global-default\s+9900\s+ByUser\s+\S+\s+False$`).MatchString(row(fs, "global-default"))
	})
	checkHeaders(t, fs, []string{"NAME", "PRIORITYLEVEL", "MATCHINGPRECEDENCE", "DISTINGUISHERMETHOD", "AGE", "MISSINGPL"}, "catch-all")
	if !regexp.MustCompile(`^exempt\s+exempt\s+1\s+\*\s+\S+\s+False$`).MatchString(row(fs, "exempt")) {
		t.Errorf("exempt's row:\n%s", fs)
	}
	pl := run(t, "get", "prioritylevelconfigurations")
	checkHeaders(t, pl, []string{"NAME", "TYPE", "NOMINALCONCURRENCYSHARES", "QUEUES", "HANDSIZE", "QUEUELENGTHLIMIT", "AGE"}, "workload-low")
	for name, want := range map[string]string{
		"workload-low": `^workload-low\s+Limited\s+100\s+128\s+6\s+50\s+\S+$`,
		"catch-all":    `^catch-all\s+Limited\s+5\s+<none>\s+<none>\s+<none>\s+\S+$`,
		"exempt":       `^exempt\s+Exempt\s+<none>\s+<none>\s+<none>\s+<none>\s+\S+$`,
	} {
		if !regexp.MustCompile(want).MatchString(row(pl, name)) {
			t.Errorf("%s's row does not match %s:\n%s", name, want, pl)
		}
	}

	runIn(t, `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: FlowSchema
metadata:
  name: e2e-dangling
spec:
  priorityLevelConfiguration:
    name: e2e-nowhere
  matchingPrecedence: 5000
  rules:
  - subjects:
    - kind: User
      user:
        name: e2e-nobody
    nonResourceRules:
    - verbs: ["get"]
      nonResourceURLs: ["/e2e/*"]
`, "create", "-f", "-")
	eventuallyKubectl(t, "e2e-dangling's MISSINGPL is True", func() bool {
		return regexp.MustCompile(`^e2e-dangling\s+e2e-nowhere\s+5000\s+\*\s+\S+\s+True$`).MatchString(row(run(t, "get", "flowschemas"), "e2e-dangling"))
	})
	run(t, "delete", "flowschema", "e2e-dangling")

	runFailIn(t, `apiVersion: flowcontrol.apiserver.k8s.io/v1
kind: PriorityLevelConfiguration
metadata:
  name: e2e-bad
spec:
  type: Limited
  limited:
    limitResponse:
      type: Queue
      queuing:
        queues: 4
        handSize: 5
`, "spec.limited.limitResponse.queuing.handSize", "create", "-f", "-")
	runFail(t, `spec: Invalid value`, "patch", "flowschema", "catch-all", "--type=merge", "-p", `{"spec":{"matchingPrecedence":5000}}`)
}
