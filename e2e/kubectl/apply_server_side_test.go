package kubectl

import (
	"strings"
	"testing"
)

// TestServerSideApply: `kubectl apply --server-side` creates, re-applies
// without a write, conflicts with another manager's fields (kubectl's
// conflict message), takes them over with --force-conflicts, removes
// fields it stops applying, and `kubectl get -o yaml` hides managedFields
// unless --show-managed-fields.
func TestServerSideApply(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "server-side-apply")
	get := []string{"get", "deployment", "web", "-n", ns}

	if out := runIn(t, deployment(ns, "2", "nginx:1.25"), "apply", "--server-side", "-f", "-"); strings.TrimSpace(out) != "deployment.apps/web serverside-applied" {
		t.Fatalf("first apply: %q", out)
	}
	rv := jsonpath(t, "{.metadata.resourceVersion}", get...)
	if out := runIn(t, deployment(ns, "2", "nginx:1.25"), "apply", "--server-side", "-f", "-"); strings.TrimSpace(out) != "deployment.apps/web serverside-applied" {
		t.Errorf("second apply: %q", out)
	}
	if got := jsonpath(t, "{.metadata.resourceVersion}", get...); got != rv {
		t.Errorf("re-applying the same configuration moved resourceVersion %s -> %s", rv, got)
	}

	if out := run(t, append(get, "-o", "yaml")...); strings.Contains(out, "managedFields") {
		t.Errorf("get -o yaml shows managedFields:\n%s", out)
	}
	shown := run(t, append(get, "-o", "yaml", "--show-managed-fields")...)
	for _, want := range []string{"managedFields:", "manager: kubectl", "operation: Apply", "f:replicas: {}", `k:{"name":"nginx"}:`} {
		if !strings.Contains(shown, want) {
			t.Errorf("--show-managed-fields lacks %q:\n%s", want, shown)
		}
	}

	// Another manager sets replicas; applying a different value conflicts.
	run(t, "patch", "deployment", "web", "-n", ns, "--type=merge", "-p", `{"spec":{"replicas":5}}`, "--field-manager=autoscaler")
	errOut := runFailIn(t, deployment(ns, "3", "nginx:1.25"),
		`Apply failed with 1 conflict: conflict with "autoscaler" using apps/v1: .spec.replicas`, "apply", "--server-side", "-f", "-")
	if !strings.Contains(errOut, "--force-conflicts") {
		t.Errorf("kubectl's conflict hint missing:\n%s", errOut)
	}
	if got := jsonpath(t, "{.spec.replicas}", get...); got != "5" {
		t.Errorf("a conflicting apply changed replicas to %s", got)
	}
	// Forced, kubectl takes replicas over and the autoscaler owns nothing.
	runIn(t, deployment(ns, "3", "nginx:1.25"), "apply", "--server-side", "--force-conflicts", "-f", "-")
	if got := jsonpath(t, "{.spec.replicas} {.metadata.managedFields[*].manager}", get...); got != "3 kubectl" {
		t.Errorf("after --force-conflicts: replicas and managers = %q, want \"3 kubectl\"", got)
	}

	// A label applied once and then left out is removed (kubectl was its
	// only owner); one another manager added stays.
	withTier := strings.Replace(deployment(ns, "3", "nginx:1.25"), "    app: web\nspec:", "    app: web\n    tier: front\nspec:", 1)
	runIn(t, withTier, "apply", "--server-side", "-f", "-")
	run(t, "label", "deployment", "web", "-n", ns, "owner=ops")
	if got := jsonpath(t, "{.metadata.labels}", get...); !strings.Contains(got, `"tier":"front"`) || !strings.Contains(got, `"owner":"ops"`) {
		t.Fatalf("labels %s", got)
	}
	runIn(t, deployment(ns, "3", "nginx:1.25"), "apply", "--server-side", "-f", "-")
	if got := jsonpath(t, "{.metadata.labels}", get...); strings.Contains(got, "tier") || !strings.Contains(got, `"owner":"ops"`) {
		t.Errorf("labels after tier was dropped from the configuration: %s", got)
	}

	// A second applier with its own field manager conflicts on the image.
	runFailIn(t, deployment(ns, "3", "nginx:1.27"), `conflict with "kubectl": .spec.template.spec.containers[name="nginx"].image`,
		"apply", "--server-side", "--field-manager=team-b", "-f", "-")

	// --dry-run=server of a new object creates nothing.
	other := strings.Replace(deployment(ns, "1", "nginx"), "name: web", "name: web-dry", 1)
	if out := runIn(t, other, "apply", "--server-side", "--dry-run=server", "-f", "-"); !strings.Contains(out, "web-dry serverside-applied (server dry run)") {
		t.Errorf("dry run: %q", out)
	}
	runFail(t, `deployments.apps "web-dry" not found`, "get", "deployment", "web-dry", "-n", ns)
}

// TestReplaceCreatesWhereKubernetesDoes: `kubectl replace` (a PUT) of a
// missing Lease or Role creates it, with managed fields recorded; of a
// missing ConfigMap it is NotFound, as in Kubernetes.
func TestReplaceCreatesWhereKubernetesDoes(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "replace-create")
	lease := "apiVersion: coordination.k8s.io/v1\nkind: Lease\nmetadata:\n  name: l\n  namespace: " + ns + "\nspec:\n  holderIdentity: me\n"
	if out := runIn(t, lease, "replace", "-f", "-"); strings.TrimSpace(out) != "lease.coordination.k8s.io/l replaced" {
		t.Errorf("replace of a missing lease: %q", out)
	}
	if got := jsonpath(t, "{.spec.holderIdentity} {.metadata.managedFields[0].manager} {.metadata.managedFields[0].operation}", "get", "lease", "l", "-n", ns); got != "me kubectl-replace Update" {
		t.Errorf("created lease: %q", got)
	}
	role := "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: r\n  namespace: " + ns + "\nrules:\n- apiGroups: [\"\"]\n  resources: [pods]\n  verbs: [get]\n"
	runIn(t, role, "replace", "-f", "-")
	run(t, "get", "role", "r", "-n", ns)

	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\n  namespace: " + ns + "\ndata:\n  a: b\n"
	runFailIn(t, cm, `configmaps "c" not found`, "replace", "-f", "-")
	runFail(t, `configmaps "c" not found`, "get", "configmap", "c", "-n", ns)
}

// TestServerSideApplyOfCreatedObject: an object made with `kubectl create`
// can be taken over by server-side apply: the same values apply cleanly,
// a different one conflicts with the fields' earlier owner until forced.
func TestServerSideApplyOfCreatedObject(t *testing.T) {
	t.Parallel()
	ns := createNamespace(t, "server-side-apply-created")
	runIn(t, deployment(ns, "2", "nginx:1.25"), "create", "-f", "-")
	runIn(t, deployment(ns, "2", "nginx:1.25"), "apply", "--server-side", "-f", "-")
	runFailIn(t, deployment(ns, "2", "nginx:1.27"), `Apply failed with 1 conflict: conflict with `, "apply", "--server-side", "-f", "-")
	runIn(t, deployment(ns, "2", "nginx:1.27"), "apply", "--server-side", "--force-conflicts", "-f", "-")
	if got := jsonpath(t, "{.spec.template.spec.containers[0].image} {.metadata.generation}", "get", "deployment", "web", "-n", ns); got != "nginx:1.27 2" {
		t.Errorf("after the forced apply: image generation = %q, want \"nginx:1.27 2\"", got)
	}
}
