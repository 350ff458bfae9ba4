package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestBootstrapPolicyWrittenByLoopback: the default RBAC policy is
// written as kube-apiserver's rbac/bootstrap-roles hook writes it,
// through the loopback client: each object's managedFields are one
// Update by kube-apiserver, and its create is audited as a request of
// system:apiserver.
func TestBootstrapPolicyWrittenByLoopback(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a cluster")
	}
	dir := t.TempDir()
	policy, log := filepath.Join(dir, "policy.yaml"), filepath.Join(dir, "audit.log")
	if err := os.WriteFile(policy, []byte("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules:\n"+
		"- level: Metadata\n  resources:\n  - group: rbac.authorization.k8s.io\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	_, admin, _ := startForTest(t, Config{DataDir: filepath.Join(dir, "data"), BindAddress: "127.0.0.1:0",
		UnsafeNoFsync: true, CompactionInterval: -1, Auth: AuthOptions{AuditPolicyFile: policy, AuditLogPath: log}})
	check := func(what string, mf []metav1.ManagedFieldsEntry) {
		t.Helper()
		if len(mf) != 1 || mf[0].Manager != "kube-apiserver" || mf[0].Operation != metav1.ManagedFieldsOperationUpdate ||
			mf[0].APIVersion != "rbac.authorization.k8s.io/v1" {
			t.Errorf("%s managedFields: %+v, want one Update by kube-apiserver", what, mf)
		}
	}
	cr, err := admin.RbacV1().ClusterRoles().Get(ctx, "system:kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("clusterrole system:kube-scheduler", cr.ManagedFields)
	crb, err := admin.RbacV1().ClusterRoleBindings().Get(ctx, "cluster-admin", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("clusterrolebinding cluster-admin", crb.ManagedFields)
	rb, err := admin.RbacV1().RoleBindings("kube-system").Get(ctx, "system::leader-locking-kube-scheduler", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	check("rolebinding kube-system/system::leader-locking-kube-scheduler", rb.ManagedFields)

	type event struct {
		Stage, Verb, RequestURI, UserAgent string
		User                               struct{ Username string }
		ObjectRef                          *struct{ Resource, Namespace, Name string }
		ResponseStatus                     *struct{ Code int }
	}
	want := map[string]string{ // resource/name: the create's URI
		"clusterroles/system:kube-scheduler":                 "/apis/rbac.authorization.k8s.io/v1/clusterroles",
		"clusterrolebindings/cluster-admin":                  "/apis/rbac.authorization.k8s.io/v1/clusterrolebindings",
		"roles/system::leader-locking-kube-scheduler":        "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/roles",
		"rolebindings/system::leader-locking-kube-scheduler": "/apis/rbac.authorization.k8s.io/v1/namespaces/kube-system/rolebindings",
	}
	f, err := os.Open(log)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var ev event
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			t.Fatalf("audit log line %q: %v", sc.Text(), err)
		}
		if ev.Stage != "ResponseComplete" || ev.Verb != "create" || ev.ObjectRef == nil {
			continue
		}
		key := ev.ObjectRef.Resource + "/" + ev.ObjectRef.Name
		if uri, ok := want[key]; !ok || ev.RequestURI != uri {
			continue
		}
		if ev.User.Username != "system:apiserver" || ev.ResponseStatus == nil || ev.ResponseStatus.Code != 201 {
			t.Errorf("create of %s audited as %s, answered %+v; want system:apiserver, 201", key, ev.User.Username, ev.ResponseStatus)
		}
		delete(want, key)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for key, uri := range want {
		t.Errorf("no audit event of the create of %s at %s", key, uri)
	}
}
