package kubectl

import (
	"regexp"
	"testing"
)

// TestSystemPriorityClasses: `kubectl get priorityclasses` on a fresh
// cluster lists the two system classes kube-apiserver creates at start,
// their delete is refused in its words, and a pod naming one is admitted
// with its value.
func TestSystemPriorityClasses(t *testing.T) {
	t.Parallel()
	out := run(t, "get", "priorityclasses")
	for _, row := range []string{`(?m)^system-cluster-critical\s+2000000000\s+false\s+\S+\s+PreemptLowerPriority\s*$`,
		`(?m)^system-node-critical\s+2000001000\s+false\s+\S+\s+PreemptLowerPriority\s*$`} {
		if !regexp.MustCompile(row).MatchString(out) {
			t.Errorf("kubectl get priorityclasses lacks %s:\n%s", row, out)
		}
	}
	if got := jsonpath(t, "{.description}|{.metadata.generation}", "get", "priorityclass", "system-node-critical"); got != "Used for system critical pods that must not be moved from their current node.|1" {
		t.Errorf("system-node-critical description and generation: %q", got)
	}
	runFail(t, `Error from server (Forbidden): priorityclasses.scheduling.k8s.io "system-node-critical" is forbidden: this is a system priority class and cannot be deleted`,
		"delete", "priorityclass", "system-node-critical")
	ns := createNamespace(t, "system-priority")
	runIn(t, "apiVersion: v1\nkind: Pod\nmetadata:\n  name: critical\nspec:\n  priorityClassName: system-cluster-critical\n  containers:\n  - name: c\n    image: nginx\n",
		"create", "-n", ns, "-f", "-")
	if got := jsonpath(t, "{.spec.priority} {.spec.preemptionPolicy}", "get", "pod", "critical", "-n", ns); got != "2000000000 PreemptLowerPriority" {
		t.Errorf("pod of system-cluster-critical: %q", got)
	}
}
