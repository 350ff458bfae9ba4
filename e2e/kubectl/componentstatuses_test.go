package kubectl

import (
	"context"
	"strings"
	"testing"
	"time"
)

// TestGetComponentStatuses: `kubectl get cs` against `kubeproof up`
// (--no-controller-manager --no-scheduler here) prints kube-apiserver's
// columns for the controller manager, the scheduler and etcd-0, the
// embedded etcd healthy, after the kind's deprecation warning; kubectl
// api-resources lists componentstatuses and the legacy bindings resource.
func TestGetComponentStatuses(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	out, errOut, err := server.kubectl(ctx, "", nil, "get", "cs")
	if err != nil {
		t.Fatalf("kubectl get cs: %v\n%s%s", err, out, errOut)
	}
	if !strings.Contains(errOut, "Warning: v1 ComponentStatus is deprecated in v1.19+") {
		t.Errorf("stderr lacks the deprecation warning:\n%s", errOut)
	}
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if strings.Join(strings.Fields(lines[0]), " ") != "NAME STATUS MESSAGE ERROR" {
		t.Fatalf("header %q", lines[0])
	}
	rows := map[string][]string{}
	for _, l := range lines[1:] {
		f := strings.Fields(l)
		rows[f[0]] = f
	}
	if len(rows) != 3 || rows["controller-manager"] == nil || rows["scheduler"] == nil {
		t.Errorf("components:\n%s", out)
	}
	if got := strings.Join(rows["etcd-0"], " "); got != "etcd-0 Healthy ok" {
		t.Errorf("etcd-0 row %q, want Healthy ok:\n%s", got, out)
	}
	if got := jsonpath(t, "{.conditions[0].type}={.conditions[0].status}", "get", "componentstatus", "etcd-0"); got != "Healthy=True" {
		t.Errorf("etcd-0 condition %q", got)
	}
	resources := run(t, "api-resources", "--api-group=")
	have := map[string]bool{}
	for _, l := range strings.Split(resources, "\n") {
		have[strings.Join(strings.Fields(l), " ")] = true
	}
	for _, want := range []string{"componentstatuses cs v1 false ComponentStatus", "bindings v1 true Binding"} {
		if !have[want] {
			t.Errorf("api-resources lacks %q:\n%s", want, resources)
		}
	}
}
