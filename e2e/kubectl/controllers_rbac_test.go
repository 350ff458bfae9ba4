package kubectl

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kubeproof/kubeproof/impl/pki"
)

// TestControllerManagerWithServiceAccountCredentials runs
// `kubeproof controller-manager --use-service-account-credentials` as
// system:kube-controller-manager against `kubeproof up
// --authorization-mode=Node,RBAC`: that identity may not write workloads,
// so the Deployment rolls out and is garbage-collected only because each
// controller acts as its own kube-system service account.
func TestControllerManagerWithServiceAccountCredentials(t *testing.T) {
	t.Parallel()
	dataDir := filepath.Join(scratch, "data-cm-rbac")
	p, err := startUpWith(dataDir, "--nodes", "2", "--no-controller-manager", "--authorization-mode=Node,RBAC")
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := p.stop(); err != nil {
			t.Error(err)
		}
	}()
	k := func(args ...string) string {
		t.Helper()
		return runWith(t, p, "", nil, args...)
	}
	// A kubeconfig for system:kube-controller-manager, from the cluster CA.
	ca, err := pki.LoadOrCreateCA(filepath.Join(dataDir, "pki"), "kubeproof-ca")
	if err != nil {
		t.Fatal(err)
	}
	kp, err := ca.IssueClient("system:kube-controller-manager", nil)
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig := filepath.Join(dataDir, "cm-test.kubeconfig")
	if err := pki.WriteKubeconfig(kubeconfig, pki.Kubeconfig(p.url, ca.CertPEM, "system:kube-controller-manager", kp)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if out, _, _ := p.kubectl(ctx, "", nil, "auth", "can-i", "create", "replicasets.apps", "-n", "default", "--as=system:kube-controller-manager"); strings.TrimSpace(out) != "no" {
		t.Fatalf("can system:kube-controller-manager create ReplicaSets? %q, want no (is RBAC on?)", out)
	}
	waitNodesReady(t, p, "node-1", "node-2")

	cm := startControllerManager(t, kubeconfig, "--use-service-account-credentials")
	k("create", "deployment", "web", "--image=nginx", "--replicas=3")
	k("rollout", "status", "deployment/web", "--timeout=90s")
	sas := k("get", "serviceaccounts", "-n", "kube-system", "-o", "name")
	for _, sa := range []string{"deployment-controller", "replicaset-controller", "generic-garbage-collector", "namespace-controller", "node-controller"} {
		if !strings.Contains(sas, "serviceaccount/"+sa+"\n") {
			t.Errorf("no service account kube-system/%s (have:\n%s)", sa, sas)
		}
	}
	k("delete", "deployment", "web")
	eventuallyKubectl(t, "the ReplicaSet and pods collected", func() bool {
		return strings.TrimSpace(k("get", "rs,pods", "-l", "app=web", "-o", "name")) == ""
	})
	cm.stop(t)
}
