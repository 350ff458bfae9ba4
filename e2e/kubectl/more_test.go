package kubectl

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// TestStrategicMergeByKey: a strategic merge patch merges list items by
// their patch merge key (containers by name), where a merge patch replaces
// the list.
func TestStrategicMergeByKey(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "smp")
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: p\n  namespace: " + ns + "\nspec:\n  containers:\n  - name: a\n    image: nginx\n  - name: b\n    image: busybox\n"
	runIn(t, pod, "create", "-f", "-")
	run(t, "patch", "pod", "p", "-n", ns, "-p", `{"spec":{"containers":[{"name":"b","image":"busybox:1.36"}]}}`)
	if got := jsonpath(t, "{range .spec.containers[*]}{.name}={.image} {end}", "get", "pod", "p", "-n", ns); got != "a=nginx b=busybox:1.36 " {
		t.Errorf("pod containers after strategic merge: %q", got)
	}
	// Most of a pod's spec is immutable.
	runFail(t, "is invalid", "patch", "pod", "p", "-n", ns, "-p", `{"spec":{"restartPolicy":"Never"}}`)

	runIn(t, deployment(ns, "1", "nginx"), "create", "-f", "-")
	run(t, "patch", "deployment", "web", "-n", ns, "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"nginx","env":[{"name":"A","value":"1"}]}]}}}}`)
	if got := jsonpath(t, "{.spec.template.spec.containers[0].image} {.spec.template.spec.containers[0].env[0].name}", "get", "deployment", "web", "-n", ns); got != "nginx A" {
		t.Errorf("deployment container after strategic merge: %q", got)
	}
	// --type merge replaces the list: the container loses its image and the
	// result is invalid.
	runFail(t, "spec.template.spec.containers[0].image: Required value", "patch", "deployment", "web", "-n", ns, "--type", "merge", "-p", `{"spec":{"template":{"spec":{"containers":[{"name":"nginx"}]}}}}`)
}

// TestImperativeCreates: kubectl's create subcommands for the RBAC kinds,
// priority classes, service accounts and quotas, and node cordon/taint.
func TestImperativeCreates(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "imperative-rbac")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"create", "role", "reader", "--verb=get,list", "--resource=pods", "-n", ns}, "role.rbac.authorization.k8s.io/reader created"},
		{[]string{"create", "rolebinding", "reader-bob", "--role=reader", "--user=bob", "-n", ns}, "rolebinding.rbac.authorization.k8s.io/reader-bob created"},
		{[]string{"create", "clusterrole", "e2e-node-reader", "--verb=get", "--resource=nodes"}, "clusterrole.rbac.authorization.k8s.io/e2e-node-reader created"},
		{[]string{"create", "clusterrolebinding", "e2e-node-readers", "--clusterrole=e2e-node-reader", "--group=ops"}, "clusterrolebinding.rbac.authorization.k8s.io/e2e-node-readers created"},
		{[]string{"create", "priorityclass", "e2e-high", "--value=1000", "--description=high"}, "priorityclass.scheduling.k8s.io/e2e-high created"},
		{[]string{"create", "serviceaccount", "robot", "-n", ns}, "serviceaccount/robot created"},
		{[]string{"create", "quota", "small", "--hard=pods=5", "-n", ns}, "resourcequota/small created"},
	} {
		if out := strings.TrimSpace(run(t, c.args...)); out != c.want {
			t.Errorf("kubectl %s: %q, want %q", strings.Join(c.args, " "), out, c.want)
		}
	}
	wide := run(t, "get", "rolebinding", "reader-bob", "-n", ns, "-o", "wide")
	if !regexp.MustCompile(`(?m)^reader-bob\s+Role/reader\s+\S+\s+bob\s*$`).MatchString(wide) {
		t.Errorf("rolebinding -o wide:\n%s", wide)
	}
	if got := jsonpath(t, "{.rules[0].verbs}", "get", "role", "reader", "-n", ns); got != `["get","list"]` {
		t.Errorf("role verbs: %s", got)
	}
	if got := jsonpath(t, "{.value} {.preemptionPolicy}", "get", "priorityclass", "e2e-high"); got != "1000 PreemptLowerPriority" {
		t.Errorf("priorityclass value and defaulted preemptionPolicy: %q", got)
	}

	runIn(t, "apiVersion: v1\nkind: Node\nmetadata:\n  name: e2e-cordon\n", "create", "-f", "-")
	run(t, "cordon", "e2e-cordon")
	if !regexp.MustCompile(`(?m)^e2e-cordon\s+Unknown,SchedulingDisabled\s`).MatchString(run(t, "get", "node", "e2e-cordon")) {
		t.Errorf("cordoned node: %s", run(t, "get", "node", "e2e-cordon"))
	}
	run(t, "taint", "nodes", "e2e-cordon", "dedicated=db:NoSchedule")
	run(t, "uncordon", "e2e-cordon")
	if got := jsonpath(t, "{.spec.unschedulable}|{.spec.taints[0].key}={.spec.taints[0].value}:{.spec.taints[0].effect}", "get", "node", "e2e-cordon"); got != "|dedicated=db:NoSchedule" {
		t.Errorf("node after cordon, taint, uncordon: %q", got)
	}
}

// TestPodGracefulDeletion: a pod bound to a node is deleted gracefully (it
// shows Terminating with a 30 s grace period until its kubelet confirms);
// --force --grace-period=0 removes it at once.
func TestPodGracefulDeletion(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "graceful")
	pod := "apiVersion: v1\nkind: Pod\nmetadata:\n  name: bound\n  namespace: " + ns + "\nspec:\n  nodeName: some-node\n  containers:\n  - name: c\n    image: nginx\n"
	runIn(t, pod, "create", "-f", "-")
	run(t, "delete", "pod", "bound", "-n", ns, "--wait=false")
	if !regexp.MustCompile(`(?m)^bound\s+0/1\s+Terminating\s`).MatchString(run(t, "get", "pod", "bound", "-n", ns)) {
		t.Errorf("gracefully deleted pod:\n%s", run(t, "get", "pod", "bound", "-n", ns))
	}
	if got := jsonpath(t, "{.metadata.deletionGracePeriodSeconds}", "get", "pod", "bound", "-n", ns); got != "30" {
		t.Errorf("deletionGracePeriodSeconds %q, want 30", got)
	}
	run(t, "delete", "pod", "bound", "-n", ns, "--grace-period=0", "--force")
	runFail(t, `pods "bound" not found`, "get", "pod", "bound", "-n", ns)
}

// TestSubresourcesAndLimits: status patches change only status; objects over
// the 1 MiB data limit are 422, bodies over 3 MiB are 413; server-side apply
// creates (apply_server_side_test.go covers the rest of it).
func TestSubresourcesAndLimits(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "limits")
	runIn(t, deployment(ns, "2", "nginx"), "create", "-f", "-")
	run(t, "patch", "deployment", "web", "-n", ns, "--subresource=status", "--type=merge", "-p", `{"status":{"replicas":7},"spec":{"replicas":9}}`)
	if got := jsonpath(t, "{.spec.replicas} {.status.replicas} {.metadata.generation}", "get", "deployment", "web", "-n", ns); got != "2 7 1" {
		t.Errorf("after a status patch: spec.replicas status.replicas generation = %q, want \"2 7 1\"", got)
	}

	dir := t.TempDir()
	big := filepath.Join(dir, "big")
	if err := os.WriteFile(big, []byte(strings.Repeat("a", 1600*1024)), 0o644); err != nil {
		t.Fatal(err)
	}
	runFail(t, `ConfigMap "big" is invalid: []: Too long: may not be more than 1048576 bytes`, "create", "configmap", "big", "--from-file="+big, "-n", ns)
	huge := filepath.Join(dir, "huge")
	if err := os.WriteFile(huge, []byte(strings.Repeat("a", 3600*1024)), 0o644); err != nil {
		t.Fatal(err)
	}
	runFail(t, "Request entity too large: limit is 3145728", "create", "configmap", "huge", "--from-file="+huge, "-n", ns)
	runFail(t, `configmaps "big" not found`, "get", "configmap", "big", "-n", ns)

	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: ssa\n  namespace: " + ns + "\ndata:\n  a: b\n"
	if out := runIn(t, cm, "apply", "--server-side", "-f", "-"); !strings.Contains(out, "configmap/ssa serverside-applied") {
		t.Errorf("server-side apply: %q", out)
	}
}

// TestServerInfo: kubectl version and raw reads of discovery, health and
// metrics.
func TestServerInfo(t *testing.T) {
	t.Parallel()
	if out := run(t, "version"); !regexp.MustCompile(`(?m)^Server Version: v1\.\d+\.\d+`).MatchString(out) {
		t.Errorf("kubectl version:\n%s", out)
	}
	for path, want := range map[string]string{
		"/healthz": "ok",
		"/livez":   "ok",
		"/readyz":  "ok",
	} {
		if got := run(t, "get", "--raw", path); got != want {
			t.Errorf("get --raw %s: %q", path, got)
		}
	}
	if out := run(t, "get", "--raw", "/apis/apps/v1"); !strings.Contains(out, `"name":"deployments/scale"`) {
		t.Errorf("/apis/apps/v1 lacks deployments/scale: %s", out)
	}
	metrics := run(t, "get", "--raw", "/metrics")
	for _, want := range []string{"apiserver_request_total{", "apiserver_request_duration_seconds_bucket{"} {
		if !strings.Contains(metrics, want) {
			t.Errorf("/metrics lacks %s", want)
		}
	}
}

// TestDescribeShowsEvents: describe lists an object's events (an events
// list by involvedObject field selectors), and `kubectl events --for` too.
func TestDescribeShowsEvents(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "describe-events")
	if out := strings.TrimSpace(run(t, "run", "evp", "--image=nginx", "-n", ns)); out != "pod/evp created" {
		t.Errorf("kubectl run: %q", out)
	}
	uid := jsonpath(t, "{.metadata.uid}", "get", "pod", "evp", "-n", ns)
	ev := `apiVersion: v1
kind: Event
metadata:
  name: evp.1
  namespace: NS
involvedObject: {apiVersion: v1, kind: Pod, name: evp, namespace: NS, uid: UID}
reason: Pulled
message: pulled the image
type: Normal
source: {component: kubelet}
firstTimestamp: "2026-01-01T00:00:00Z"
lastTimestamp: "2026-01-01T00:00:00Z"
count: 2
`
	runIn(t, strings.NewReplacer("NS", ns, "UID", uid).Replace(ev), "create", "-f", "-")
	desc := run(t, "describe", "pod", "evp", "-n", ns)
	if !regexp.MustCompile(`(?m)^\s+Normal\s+Pulled\s+\S+ \(x2 over \S+\)\s+kubelet\s+pulled the image$`).MatchString(desc) {
		t.Errorf("describe pod lacks the event:\n%s", desc)
	}
	if out := run(t, "events", "-n", ns, "--for", "pod/evp"); !strings.Contains(out, "pulled the image") {
		t.Errorf("kubectl events --for pod/evp:\n%s", out)
	}
	if out := run(t, "get", "events", "-n", ns, "--field-selector", "reason=Pulled,type=Normal", "-o", "name"); strings.TrimSpace(out) != "event/evp.1" {
		t.Errorf("events by field selector: %q", out)
	}
}

// TestApplyRemovesDroppedFields: a field dropped from the applied manifest
// is removed (kubectl's three-way merge against last-applied).
func TestApplyRemovesDroppedFields(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "apply-drop")
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: " + ns + "\n  labels:\n    keep: \"yes\"\n    drop: \"yes\"\ndata:\n  a: \"1\"\n  b: \"2\"\n"
	runIn(t, cm, "apply", "-f", "-")
	// Someone else adds a label; apply leaves fields it never managed.
	run(t, "label", "configmap", "c", "-n", ns, "other=yes")
	dropped := strings.NewReplacer("    drop: \"yes\"\n", "", "  b: \"2\"\n", "").Replace(cm)
	if out := strings.TrimSpace(runIn(t, dropped, "apply", "-f", "-")); out != "configmap/c configured" {
		t.Errorf("apply with dropped fields: %q", out)
	}
	if got := jsonpath(t, "{.metadata.labels} {.data}", "get", "configmap", "c", "-n", ns); got != `{"keep":"yes","other":"yes"} {"a":"1"}` {
		t.Errorf("after apply: labels and data %s", got)
	}
}

// TestResourceQuotaTable: the REQUEST and LIMIT columns show the quota's
// status (used/hard as the quota controller observed them), as upstream's
// printer does, not its spec.
func TestResourceQuotaTable(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "quota-table")
	quota := "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: q\n  namespace: " + ns + "\nspec:\n  hard:\n    pods: \"5\"\n    limits.cpu: \"4\"\n"
	runIn(t, quota, "create", "-f", "-")
	// No quota controller has written status yet: nothing to show.
	if !regexp.MustCompile(`(?m)^q\s+\d+s$`).MatchString(run(t, "get", "quota", "q", "-n", ns)) {
		t.Errorf("quota without status:\n%s", run(t, "get", "quota", "q", "-n", ns))
	}
	run(t, "patch", "quota", "q", "-n", ns, "--subresource=status", "--type=merge", "-p", `{"status":{"hard":{"pods":"10","limits.cpu":"4"},"used":{"pods":"3","limits.cpu":"1"}}}`)
	if out := run(t, "get", "quota", "q", "-n", ns); !regexp.MustCompile(`(?m)^q\s+pods: 3/10\s+limits.cpu: 1/4\s+\S+$`).MatchString(out) {
		t.Errorf("quota with status:\n%s", out)
	}
}
